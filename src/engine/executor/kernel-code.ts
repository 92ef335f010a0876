/**
 * The Python the kernel executor runs inside the kernel: start the training
 * command under the run guard (run-guard.py, its own process group), stream
 * its output back as `stream` messages, and report what happened in a
 * `display_data` of a private MIME type. The script's own output only ever
 * arrives as stream text, so nothing it prints can be mistaken for the report.
 */
import { GUARD_KILLED, GUARD_SOURCE } from './guard';

/** MIME type of the executor's reports (spawn and exit) inside display_data messages. */
export const RUN_MIME = 'application/vnd.autoresearch.kernel-run+json';

/** A report from the kernel side: the group started, or the run ended. */
export type KernelReport =
  | { nonce: string; event: 'spawn'; pgid: number; python: string }
  | {
      nonce: string;
      event: 'exit';
      exit_code: number | null;
      signal: string | null;
      interrupted: boolean;
      backstop?: boolean;
      /** The guard died before it reported (the run killed it): its leftovers were killed here. */
      guard_killed?: boolean;
      error: string | null;
      guard?: unknown;
    }
  | { nonce: string; event: 'alive' };

/**
 * Seconds of silence from a run after which the runner sends an 'alive' report. Every iopub
 * message updates the kernel's last_activity and the server's (GET /api/status), which is what
 * idle cullers outside the server (JupyterHub's) read; a quiet training run must not look idle.
 */
export const HEARTBEAT_S = 30;

// The runner reads with select() so a grandchild that keeps the pipe open cannot hold the kernel
// past the child's exit, and catches KeyboardInterrupt (the kernel interrupt the executor sends at
// the deadline or on a stop) to SIGTERM the guard, which ends the run within its grace, then SIGKILL
// the guard's group should it still be there. A guard that dies before its report (the run can kill
// it without the sandbox) has its run's cgroups and every process holding the run's output killed
// at once, from the spawn line it wrote first.
const RUNNER = `
def __autoresearch_run(guard, config, cwd, env, grace, mime, nonce, heartbeat, backstop, killed_words):
    import codecs, json, os, select, signal, subprocess, sys, time
    from IPython.display import display

    def report(**fields):
        fields["nonce"] = nonce
        display({mime: fields}, raw=True)

    full = dict(os.environ)
    # The kernel's interpreter first on PATH: "python train.py" means the kernel's environment.
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    out = {"exit_code": None, "signal": None, "interrupted": False, "backstop": False, "guard_killed": False,
           "error": None, "guard": None}
    proc = None
    report_r = None
    guard_lines = []

    def read_reports():
        """The guard's report lines so far (its spawn line, its report once it ends)."""
        try:
            os.set_blocking(report_r, False)
            chunk = os.read(report_r, 65536)
            while chunk:
                guard_lines.append(chunk)
                chunk = os.read(report_r, 65536)
        except (OSError, TypeError):
            pass  # nothing more yet
        parsed = []
        for line in b"".join(guard_lines).decode("utf-8", "replace").splitlines():
            try:
                parsed.append(json.loads(line))
            except ValueError:
                pass
        return parsed

    def end_leftovers():
        """After the guard died mid-run: its run's cgroups and every process holding the run's output, killed."""
        lines = read_reports()
        if any(m.get("event") != "spawn" for m in lines):
            return  # it reported: it ended its run itself
        out["guard_killed"] = True
        spawn = ([m for m in lines if m.get("event") == "spawn"] or [{}])[0]
        for d in spawn.get("cgroups", []):
            try:
                with open(os.path.join(d, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                for _ in range(50):
                    try:
                        pids = [int(p) for p in open(os.path.join(d, "cgroup.procs")).read().split()]
                    except OSError:
                        pids = []
                    if not pids:
                        break
                    for p in pids:
                        try:
                            os.kill(p, signal.SIGKILL)
                        except OSError:
                            pass
        links = set(spawn.get("pipes", []))
        for name in os.listdir("/proc") if links else []:
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                held = any(os.readlink("/proc/%s/fd/%s" % (name, fd)) in links for fd in os.listdir("/proc/%s/fd" % name))
                if held:
                    os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
        until = time.monotonic() + 1.0
        for d in spawn.get("cgroups", []):
            while True:
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    if not os.path.isdir(d) or time.monotonic() > until:
                        break
                    time.sleep(0.01)
        sys.stdout.write("\\n[autoresearch] error: %s\\n" % killed_words)
        sys.stdout.flush()
    decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def killpg(sig):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass

    last_sent = [time.monotonic()]

    def pump(until_s):
        """Copies output to the kernel's stdout until EOF or until_s (monotonic) passes; True at EOF."""
        fd = proc.stdout.fileno()
        while True:
            if time.monotonic() - last_sent[0] > heartbeat:
                report(event="alive")
                last_sent[0] = time.monotonic()
            left = until_s - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([fd], [], [], min(left, 0.25))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return True
                sys.stdout.write(decoder.decode(chunk))
                sys.stdout.flush()
                last_sent[0] = time.monotonic()
            elif proc.poll() is not None:
                # The child is gone; leftovers of its group must not outlive it nor hold the pipe.
                killpg(signal.SIGKILL)
                end_leftovers()
                return pump(min(until_s, time.monotonic() + 2.0))

    try:
        try:
            # The run guard (run-guard.py) leads the group: it keeps the kernel's credentials
            # from the run, sandboxes it, and kills whatever the run leaves when it ends.
            report_r, report_w = os.pipe()
            config = dict(json.loads(config), cwd=cwd, env=env, parent=os.getpid(), report_fd=report_w)
            try:
                proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", guard, json.dumps(config)], cwd=cwd, env=full,
                                        start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, pass_fds=(report_w,))
            finally:
                os.close(report_w)
            report(event="spawn", pgid=proc.pid, python=sys.executable)
            if not pump(time.monotonic() + backstop):
                # The engine should have interrupted long ago: it is gone (killed, its machine
                # down). The run must not outlive its deadline anyway.
                out["backstop"] = True
                raise KeyboardInterrupt
            proc.wait()
        except KeyboardInterrupt:
            out["interrupted"] = True
            if proc is not None:
                # The guard ends the run within its grace; this is the margin should it hang.
                killpg(signal.SIGTERM)
                until = time.monotonic() + grace + 3
                try:
                    pump(until)
                    proc.wait(max(0.0, until - time.monotonic()))
                except (KeyboardInterrupt, subprocess.TimeoutExpired):
                    pass
        if proc is not None:
            killpg(signal.SIGKILL)
            rc = proc.wait()
            end_leftovers()
            tail = decoder.decode(b"", final=True)
            if tail:
                sys.stdout.write(tail)
            sys.stdout.flush()
            if rc < 0:
                try:
                    out["signal"] = signal.Signals(-rc).name
                except ValueError:
                    out["signal"] = "SIG%d" % -rc
            else:
                out["exit_code"] = rc
    except BaseException as e:
        out["error"] = "%s: %s" % (type(e).__name__, e)
        if proc is not None:
            killpg(signal.SIGKILL)
    finally:
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if report_r is not None:
            reports = [m for m in read_reports() if m.get("event") != "spawn"]
            out["guard"] = reports[-1] if reports else None
            os.close(report_r)
        report(event="exit", **out)
`;

/**
 * Code that runs one training command in the kernel and reports on it. `backstopS`: the runner
 * ends the run itself that long after its start, should the engine that sets the real deadline
 * be gone by then.
 */
export function runnerCode(o: {
  guard: Record<string, unknown>;
  cwd: string;
  env: Record<string, string>;
  graceS: number;
  nonce: string;
  heartbeatS?: number;
  backstopS: number;
}): string {
  // The guard's config goes as a JSON string: its null and booleans are not Python literals.
  const args = [
    GUARD_SOURCE,
    JSON.stringify(o.guard),
    o.cwd,
    o.env,
    o.graceS,
    RUN_MIME,
    o.nonce,
    o.heartbeatS ?? HEARTBEAT_S,
    o.backstopS,
    GUARD_KILLED,
  ]
    .map(a => JSON.stringify(a))
    .join(', ');
  // JSON literals are valid Python here: strings, numbers and a str→str object only.
  return `${RUNNER}\ntry:\n    __autoresearch_run(${args})\nfinally:\n    del __autoresearch_run\n`;
}

/** Code that SIGKILLs process groups a dead or restarted kernel left behind. */
export function reapCode(pgids: number[]): string {
  return `import os as __ar_os, signal as __ar_signal
for __ar_pgid in ${JSON.stringify(pgids)}:
    try:
        __ar_os.killpg(__ar_pgid, __ar_signal.SIGKILL)
    except OSError:
        pass
del __ar_os, __ar_signal, __ar_pgid
`;
}
