/**
 * Runs the training command as a child of the run guard (run-guard.py), which this executor
 * starts once and keeps: Python's start-up is paid once per engine, not once per run. The guard
 * keeps the engine's credentials out of the run's environment, sandboxes it where it can, and
 * kills everything the run started when it ends, is stopped, or the engine dies.
 *
 * Output goes straight from the command to the guard's stdout and stderr; after a run the guard
 * writes an end marker to both, behind the last of the run's output, then its report to fd 3.
 * The deadline and a stop SIGTERM the guard, which stops the run within its grace; a guard still
 * running past that (plus a margin) is SIGKILLed with the command's group, and the next run
 * starts a fresh one. A guard that dies mid-run (the run can kill it without the sandbox) is
 * noticed at once: the run's cgroup, its group and whatever holds its output are killed here,
 * and the run is a crash that says so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import {
  DEFAULT_ISOLATION,
  GUARD_KILLED,
  GUARD_MARGIN_S,
  GUARD_SOURCE,
  guardConfig,
  outcomeOf,
  parseGuardLine,
  SandboxMemo,
  secretHashes,
  type GuardReport,
} from './guard';
import { killCgroups, killHolders } from './leftovers';
import { watchForStop } from './stop-watch';
import type { Executor, RunOutcome, RunRequest } from './types';

/** Seconds between SIGTERM and SIGKILL when a run is stopped. */
export const KILL_GRACE_S = 5;

/** The guard this executor keeps, and who listens to it during the run in progress. */
interface Guard {
  proc: ChildProcess;
  control: Writable;
  pipes: Readable[];
  /** The run in progress: its output, its report lines, the guard's end. */
  listener: { out(b: Buffer, i: number): void; line(l: string): void; died(): void; exit(): void } | null;
}

export class SubprocessExecutor implements Executor {
  readonly name = 'subprocess';
  private readonly memo = new SandboxMemo();
  /** The engine's secrets, hashed once: its environment does not change. */
  private readonly secrets = secretHashes();
  private guard: Guard | null = null;

  constructor(private readonly graceS = KILL_GRACE_S) {}

  run(req: RunRequest): Promise<RunOutcome> {
    const started = process.hrtime.bigint();
    const guard = this.guardFor(req);
    const nonce = randomUUID();
    const marker = Buffer.from(`\0autoresearch-run-end ${nonce}\0`);
    const config = guardConfig(req, {
      cwd: req.cwd,
      env: req.env ?? {},
      parent: process.pid,
      reportFd: 3,
      graceS: this.graceS,
      memo: this.memo,
      secrets: this.secrets,
    });
    const pgid = guard.proc.pid as number;
    let commandGroup: number | null = null;
    let spawned: { cgroups: string[]; pipes: string[] } = { cgroups: [], pipes: [] };
    let killTimer: NodeJS.Timeout | undefined;
    let killedHere = false;
    const terminate = () => {
      signal(pgid, 'SIGTERM', false);
      killTimer ??= setTimeout(
        () => {
          // A guard that cannot end its run in its grace is ended itself, with the command's group.
          killedHere = true;
          signal(pgid, 'SIGKILL', true);
          if (commandGroup !== null) signal(commandGroup, 'SIGKILL', true);
        },
        (this.graceS + GUARD_MARGIN_S) * 1000,
      );
    };

    return new Promise<RunOutcome>(resolve => {
      const held: Buffer[] = [Buffer.alloc(0), Buffer.alloc(0)];
      const ended = [false, false];
      let report: GuardReport | null = null;
      let guardGone = false;
      let guardKilled = false;
      let judged = false;
      const stop = watchForStop(req, terminate);
      const settle = () => {
        if (!(guardGone || (report !== null && ended[0] && ended[1]))) return;
        guard.listener = null;
        stop.dispose();
        clearTimeout(killTimer);
        req.onSpawn?.(null);
        if (guardGone) this.drop(guard);
        else idle(guard);
        this.memo.learn(req.isolation ?? DEFAULT_ISOLATION, report);
        const r = report as GuardReport | null;
        resolve({
          exitCode: r?.exit_code ?? null,
          signal: r ? (r.signal ?? null) : 'SIGKILL',
          timedOut: stop.timedOut,
          interrupted: stop.interrupted,
          seconds: Number(process.hrtime.bigint() - started) / 1e9,
          ...(r && outcomeOf(r)),
          ...(guardKilled && { failure: GUARD_KILLED }),
        });
      };
      guard.listener = {
        // Output up to the end marker is the run's; a marker split across chunks is held back until whole.
        out(b, i) {
          if (ended[i]) return;
          const all = Buffer.concat([held[i], b]);
          const at = all.indexOf(marker);
          const upto = at >= 0 ? at : all.length - partialMarker(all, marker);
          if (upto > 0) req.log.write(all.subarray(0, upto));
          held[i] = at >= 0 ? Buffer.alloc(0) : all.subarray(upto);
          if (at >= 0) {
            ended[i] = true;
            settle();
          }
        },
        line(l) {
          const m = parseGuardLine(l);
          if (m?.event === 'spawn') {
            // The command's group too: should the guard be killed outright, a later engine can still end it.
            commandGroup = m.pgid;
            spawned = { cgroups: m.cgroups ?? [], pipes: m.pipes ?? [] };
            req.onSpawn?.([pgid, m.pgid], spawned.cgroups);
          } else if (m?.event === 'report') {
            report = m.report;
            settle();
          }
        },
        died() {
          if (report !== null || guardGone || judged) return; // it had ended its run
          judged = true;
          // Killed mid-run (by the run, or by the kill timer): whatever the run left is ended
          // here, now, not when the last process holding its output lets go.
          guardKilled = !killedHere;
          if (commandGroup !== null) signal(commandGroup, 'SIGKILL', true);
          killCgroups(spawned.cgroups);
          const held = killHolders(spawned.pipes);
          if (guardKilled)
            req.log.write(
              Buffer.from(`\n[autoresearch] error: ${GUARD_KILLED}${held ? ` (${held} still held its output)` : ''}\n`),
            );
          // Its output is through once its pipes close; a holder out of reach must not hold the run.
          setTimeout(() => guard.listener?.exit(), 1000);
        },
        exit() {
          guardGone = true;
          // A guard killed mid-run left its command running: the run ends here all the same.
          if (commandGroup !== null && !(report !== null && ended[0] && ended[1]))
            signal(commandGroup, 'SIGKILL', true);
          for (const i of [0, 1]) if (!ended[i] && held[i].length) req.log.write(held[i]);
          settle();
        },
      };
      busy(guard);
      // Recorded once the command has started (the spawn line): one engine.json write a run.
      guard.control.write(JSON.stringify({ ...config, nonce }) + '\n');
    });
  }

  /** The guard, started if there is none (or the last one died). */
  private guardFor(req: RunRequest): Guard {
    if (this.guard) return this.guard;
    const python = req.python ?? 'python3';
    // -I -S: the guard needs the standard library only, and starts in half the time.
    const proc = spawn(
      python,
      ['-I', '-S', '-c', GUARD_SOURCE, JSON.stringify({ serve: true, parent: process.pid, report_fd: 3 })],
      {
        cwd: req.cwd,
        detached: true, // a new process group whose id is the guard's pid
        stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      },
    );
    const [control, out, err, reports] = proc.stdio as unknown as [Writable, Readable, Readable, Readable];
    const guard: Guard = { proc, control, pipes: [out, err, reports], listener: null };
    this.guard = guard;
    out.on('data', (b: Buffer) => guard.listener?.out(b, 0));
    err.on('data', (b: Buffer) => guard.listener?.out(b, 1));
    let pending = '';
    reports.on('data', (b: Buffer) => {
      const lines = (pending + b.toString('utf8')).split('\n');
      pending = lines.pop() ?? '';
      for (const l of lines) guard.listener?.line(l);
    });
    control.on('error', () => undefined); // EPIPE from a guard that died: its exit says so
    proc.on('error', e => {
      if (this.guard === guard) this.guard = null;
      const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
      req.log.write(
        Buffer.from(
          `[autoresearch] ${missing ? `Python interpreter "${python}" not found; install Python 3 or pass --python /path/to/python` : `the run guard did not start: ${e.message}`}\n`,
        ),
      );
      guard.listener?.exit(); // 'close' need not follow a failed spawn
    });
    proc.on('exit', () => {
      if (this.guard === guard) this.guard = null;
      // The report pipe's last lines (the spawn, maybe the report) are read before the death is judged.
      const judge = () => guard.listener?.died();
      if (reports.readableEnded) judge();
      else {
        const timer = setTimeout(judge, 500);
        reports.once('end', () => {
          clearTimeout(timer);
          judge();
        });
      }
    });
    proc.on('close', () => {
      if (this.guard === guard) this.guard = null;
      guard.listener?.exit();
    });
    return guard;
  }

  private drop(guard: Guard): void {
    if (this.guard === guard) this.guard = null;
    signal(guard.proc.pid as number, 'SIGKILL', true);
  }

  /** Ends the guard (it would end with the engine anyway). */
  async dispose(): Promise<void> {
    const guard = this.guard;
    this.guard = null;
    guard?.control.end();
  }
}

/** How many bytes at the end of `b` could begin the marker (held back, so the live log waits for nothing else). */
export function partialMarker(b: Buffer, marker: Buffer): number {
  for (let k = Math.min(marker.length - 1, b.length); k > 0; k--) {
    if (b[b.length - k] === marker[0] && b.subarray(b.length - k).equals(marker.subarray(0, k))) return k;
  }
  return 0;
}

/** Between runs nothing here may keep the engine's event loop alive. */
function idle(guard: Guard): void {
  guard.proc.unref();
  for (const p of [guard.control, ...guard.pipes] as Array<{ unref?: () => void }>) p.unref?.();
}

function busy(guard: Guard): void {
  guard.proc.ref();
  for (const p of [guard.control, ...guard.pipes] as Array<{ ref?: () => void }>) p.ref?.();
}

/** Sends `sig` to a process, or to its group; one already gone is no error. */
export function signal(pid: number, sig: NodeJS.Signals, group: boolean): void {
  try {
    process.kill(group ? -pid : pid, sig);
  } catch {
    // ESRCH: already gone.
  }
}
