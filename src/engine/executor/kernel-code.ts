/**
 * The Python the kernel executor runs inside the kernel: start the training
 * command under the run guard (run-guard.py, its own process group), stream
 * its output back as `stream` messages, and report what happened in a
 * `display_data` of a private MIME type. The script's own output only ever
 * arrives as stream text, so nothing it prints can be mistaken for the report.
 */
import { GUARD_SOURCE } from './guard';

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
// the guard's group should it still be there.
const RUNNER = `
def __autoresearch_run(guard, config, cwd, env, grace, mime, nonce, heartbeat, backstop):
    import codecs, json, os, select, signal, subprocess, sys, time
    from IPython.display import display

    def report(**fields):
        fields["nonce"] = nonce
        display({mime: fields}, raw=True)

    full = dict(os.environ)
    # The kernel's interpreter first on PATH: "python train.py" means the kernel's environment.
    full["PATH"] = os.path.dirname(sys.executable) + os.pathsep + full.get("PATH", "")
    out = {"exit_code": None, "signal": None, "interrupted": False, "backstop": False, "error": None, "guard": None}
    proc = None
    report_r = None
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
            try:
                os.set_blocking(report_r, False)
                line = os.read(report_r, 65536).decode("utf-8", "replace").strip().splitlines()
                out["guard"] = json.loads(line[-1]) if line else None
            except (OSError, ValueError):
                pass
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
