/**
 * Runs the training command directly as a child process in its own process
 * group, so the deadline (and a stop) can kill the whole tree: the shell, the
 * interpreter and any grandchild, including one that ignores SIGTERM.
 */
import { spawn } from 'node:child_process';
import { watchForStop } from './stop-watch';
import type { Executor, RunOutcome, RunRequest } from './types';

/** Seconds between SIGTERM and SIGKILL when a run is stopped. */
export const KILL_GRACE_S = 5;

export class SubprocessExecutor implements Executor {
  readonly name = 'subprocess';

  constructor(private readonly graceS = KILL_GRACE_S) {}

  run(req: RunRequest): Promise<RunOutcome> {
    const started = process.hrtime.bigint();
    const child = spawn('/bin/sh', ['-c', req.command], {
      cwd: req.cwd,
      env: { ...process.env, ...req.env, PYTHONUNBUFFERED: '1' },
      detached: true, // a new process group whose id is the child's pid
      stdio: ['ignore', 'pipe', 'pipe']
    });
    const pgid = child.pid as number;
    req.onSpawn?.(pgid);
    let killTimer: NodeJS.Timeout | undefined;

    const killGroup = (sig: NodeJS.Signals) => {
      try {
        process.kill(-pgid, sig);
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const terminate = () => {
      killGroup('SIGTERM');
      killTimer ??= setTimeout(() => killGroup('SIGKILL'), this.graceS * 1000);
    };

    const stop = watchForStop(req, terminate);

    child.stdout.on('data', (b: Buffer) => req.log.write(b));
    child.stderr.on('data', (b: Buffer) => req.log.write(b));

    return new Promise<RunOutcome>((resolve, reject) => {
      let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        exit = { code, signal };
        // Leftovers (a backgrounded grandchild, dataloader workers) must not outlive the run
        // nor hold the pipes open.
        killGroup('SIGKILL');
        // A grandchild that left the group (setsid) could hold the pipes open forever.
        setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
        }, 2000).unref();
      });
      child.on('close', () => {
        stop.dispose();
        clearTimeout(killTimer);
        req.onSpawn?.(null);
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        resolve({
          exitCode: exit?.code ?? null,
          signal: exit?.signal ?? null,
          timedOut: stop.timedOut,
          interrupted: stop.interrupted,
          seconds
        });
      });
    });
  }
}
