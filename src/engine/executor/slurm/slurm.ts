/**
 * Runs each training run as one Slurm job step, started with srun from the engine's host (a
 * cluster's login node) in the run's folder on the shared filesystem: the job is named
 * `autoresearch-<tag>-<n>-<i>`, its comment names the workspace, its time limit is the run's
 * deadline plus the guard's grace and a minute, and its resources are program.md's `slurm:` (or
 * the flags). Inside the job the run guard does what it does everywhere (secrets scrubbed, the
 * sandbox where the node allows it, nothing outlives the run); its config reaches it on srun's
 * stdin, and its markers and report come back on stderr (srun-stream.ts).
 *
 * Queue time is not run time: the deadline starts, and the run's budget counts down, when the
 * guard's start marker arrives; the wait before is the run's queue_s. A stop or the deadline
 * scancels the job (the guard ends the run in its grace; Slurm's KillWait then SIGKILLs what is
 * left). A job Slurm ended (time limit, scancel from outside, node failure, out of memory) is a
 * crash that says so; a preempted one runs again, once. An engine killed outright leaves its
 * jobs running: the next engine on the workspace finds them by name and comment and cancels
 * them (reclaim).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { jobComment, slurmTimeMinutes, srunOptions, type SlurmSetting } from '../../../core/config/slurm';
import {
  DEFAULT_ISOLATION,
  GUARD_MARGIN_S,
  GUARD_SOURCE,
  guardConfig,
  runWorkspace,
  outcomeOf,
  parseGuardLine,
  SandboxMemo,
  secretHashes,
  type GuardReport,
} from '../guard';
import { watchForStop } from '../stop-watch';
import { KILL_GRACE_S, signal } from '../subprocess';
import type { Executor, RunKernel, RunOutcome, RunRequest } from '../types';
import {
  cancelJobs,
  checkSlurmConf,
  jobEnd,
  jobEndWords,
  notFound,
  UNREACHABLE_FIX,
  workspaceJobs,
} from './slurm-jobs';
import { UserError } from '../../user-error';
import { SrunStream } from './srun-stream';

/** srun errors that a later try may not meet (the controller restarting, a network blip). */
const TRANSIENT =
  /Unable to contact slurm controller|Socket timed out|Zero Bytes were transmitted|Communication connection failure|backup controller/i;
/** Tries of a submission that failed for a transient reason, and the wait between them. */
const SUBMIT_TRIES = 5;
const SUBMIT_WAIT_MS = 10_000;

export interface SlurmExecutorOptions {
  /** program.md's `slurm:` with the flags over it. */
  setting?: SlurmSetting;
  graceS?: number;
}

/** One try at running a request as a job. */
interface Attempt {
  outcome: RunOutcome;
  /** Slurm preempted the job: it may run again. */
  preempted: boolean;
  /** srun could not submit it, and why (no job ran). */
  refused: string | null;
}

export class SlurmExecutor implements Executor {
  readonly name = 'slurm';
  readonly queued = true;
  private readonly memo = new SandboxMemo();
  private readonly secrets = secretHashes();
  private readonly graceS: number;
  /** Jobs of runs in progress: cancelled should the engine exit while they run. */
  private readonly live = new Set<string>();
  private exitHook: (() => void) | null = null;

  constructor(private readonly o: SlurmExecutorOptions = {}) {
    this.graceS = o.graceS ?? KILL_GRACE_S;
    checkSlurmConf();
  }

  async run(req: RunRequest): Promise<RunOutcome> {
    let tries = 0;
    let queueS = 0;
    let runS = 0;
    let requeued = false;
    for (;;) {
      const a = await this.attempt(req);
      if (a.refused !== null) {
        // Nothing ran. A controller that does not answer may next time; a request it refused will not.
        if (TRANSIENT.test(a.refused) && ++tries < SUBMIT_TRIES && !req.signal?.aborted) {
          req.log.write(
            Buffer.from(`[autoresearch] srun failed (${a.refused}); trying again in ${SUBMIT_WAIT_MS / 1000} s\n`),
          );
          await new Promise(r => setTimeout(r, SUBMIT_WAIT_MS));
          continue;
        }
        throw new UserError(
          TRANSIENT.test(a.refused)
            ? `srun could not reach the cluster: ${a.refused}; ${UNREACHABLE_FIX}`
            : `srun could not submit the training run: ${a.refused}; check program.md's slurm: settings (or the --partition, --account, … flags) against sinfo and sacctmgr`,
        );
      }
      queueS += a.outcome.queueS ?? 0;
      runS += a.outcome.seconds;
      if (a.preempted && !requeued && !req.signal?.aborted) {
        requeued = true;
        req.log.write(Buffer.from(`\n[autoresearch] ${a.outcome.failure}; running it again (once)\n`));
        continue;
      }
      const job = a.outcome.job && { ...a.outcome.job, ...(requeued && { requeued: true }) };
      const failure =
        a.preempted && requeued
          ? `${a.outcome.failure}, after it had been preempted once and run again`
          : a.outcome.failure;
      return { ...a.outcome, seconds: runS, queueS, ...(job && { job }), ...(failure && { failure }) };
    }
  }

  /** Runs the request as one job; resolves once srun has exited. */
  private attempt(req: RunRequest): Promise<Attempt> {
    const submitted = Date.now();
    const nonce = randomUUID();
    const workspace = req.workspace ?? runWorkspace(req.cwd);
    const args = [
      `--job-name=${req.name ?? 'autoresearch-run'}`,
      `--comment=${jobComment(workspace)}`,
      `--time=${slurmTimeMinutes(req.timeoutS, this.graceS)}`,
      `--chdir=${req.cwd}`,
      '--nodes=1',
      '--ntasks=1',
      ...srunOptions(this.o.setting),
      '--',
      req.python ?? 'python3',
      '-I',
      '-S',
      '-c',
      GUARD_SOURCE,
      JSON.stringify({ serve: true }),
    ];
    // The guard's config on stdin: not on argv, where scontrol and ps show it to the run.
    const config = {
      ...guardConfig(req, {
        cwd: req.cwd,
        env: req.env ?? {},
        parent: null,
        reportFd: 2,
        graceS: this.graceS,
        memo: this.memo,
        secrets: this.secrets,
      }),
      nonce,
      report_spawn: false,
      start_marker: true,
    };
    // Its own process group: a Ctrl-C in the engine's terminal reaches the engine, which scancels.
    const srun = spawn('srun', args, { cwd: req.cwd, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    let jobId: string | null = null;
    let node: string | null = null;
    let startedAt: number | null = null;
    let terminated = false;
    let killTimer: NodeJS.Timeout | undefined;
    const cancel = () => {
      if (jobId) cancelJobs([jobId]).catch(() => undefined);
    };
    const terminate = () => {
      if (terminated) return;
      terminated = true;
      // Before srun has named its job, srun itself withdraws the request it is waiting on.
      if (jobId) cancel();
      else signal(srun.pid as number, 'SIGTERM', true);
      killTimer = setTimeout(
        () => {
          cancel();
          signal(srun.pid as number, 'SIGKILL', true);
        },
        (this.graceS + GUARD_MARGIN_S + 5) * 1000,
      );
    };
    const stop = watchForStop(req, terminate, { deferDeadline: true });
    const learn = (id: string) => {
      if (!id || jobId) return;
      jobId = id;
      this.track(id, true);
      if (terminated) cancel(); // stopped before the id was known
    };
    const stream = new SrunStream(nonce, {
      log: b => req.log.write(b),
      queued: id => {
        learn(id);
        req.onQueued?.({ scheduler: 'slurm', id });
      },
      started: (id, at) => {
        learn(id);
        node = at || null;
        startedAt = Date.now();
        stop.startDeadline();
        req.onStarted?.(startedAt);
      },
    });
    srun.stdout.on('data', (b: Buffer) => stream.stdout(b));
    srun.stderr.on('data', (b: Buffer) => stream.stderr(b));
    srun.stdin.on('error', () => undefined); // EPIPE from an srun that failed at once: its exit says why
    srun.stdin.end(JSON.stringify(config) + '\n');

    return new Promise<Attempt>((resolve, reject) => {
      srun.on('error', e => {
        stop.dispose();
        const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
        reject(new UserError(missing ? notFound('srun') : `srun did not start: ${e.message}`));
      });
      srun.on('close', (code, sig) => {
        void (async () => {
          const ended = Date.now();
          stream.close();
          stop.dispose();
          clearTimeout(killTimer);
          if (jobId) this.track(jobId, false);
          const stopped = stop.interrupted || stop.timedOut;
          // A job that ended before its run started (cancelled while its step launched) is no refusal.
          if (!stream.running && !jobId) jobId = stream.namedJob();
          if (!stream.running && !stopped && !jobId) {
            const why = stream.srunError() ?? `srun exited with ${sig ?? `code ${code}`} before the job started`;
            resolve({ outcome: blank(), preempted: false, refused: why });
            return;
          }
          const report = reportOf(stream.reportLines());
          const id = jobId as string | null;
          let failure: string | undefined;
          let preempted = false;
          // Not ended by the engine, and not on its own terms: Slurm may say why (its limit, a scancel, the node).
          if (!stopped && id && !(stream.finished && report?.exit_code === 0)) {
            const end = await jobEnd(id);
            const words = end && jobEndWords(id, end);
            if (words) failure = words;
            preempted = end?.state === 'PREEMPTED';
            node ??= end?.node ?? null;
          }
          if (!failure && !report && !stopped)
            failure = `srun exited with ${sig ?? `code ${code}`} and the run guard did not report`;
          resolve({
            preempted,
            refused: null,
            outcome: {
              exitCode: report?.exit_code ?? null,
              signal: report ? (report.signal ?? null) : 'SIGKILL',
              timedOut: stop.timedOut,
              interrupted: stop.interrupted,
              seconds: startedAt === null ? 0 : (ended - startedAt) / 1000,
              queueS: ((startedAt ?? ended) - submitted) / 1000,
              ...(id && { job: { scheduler: 'slurm' as const, id, ...(node && { node }) } }),
              ...(report && outcomeOf(report)),
              ...(failure && { failure }),
            },
          });
          this.memo.learn(req.isolation ?? DEFAULT_ISOLATION, report);
        })().catch(reject);
      });
    });
  }

  /** Cancels the jobs a dead engine left running for this workspace, and waits until Slurm has ended them. */
  async reclaim(_left: RunKernel[], workspace: string): Promise<void> {
    const orphans = await workspaceJobs(workspace);
    if (!orphans.length) return;
    process.stderr.write(
      `autoresearch: cancelling ${orphans.length} Slurm job${orphans.length === 1 ? '' : 's'} a stopped engine left running: ${orphans.map(j => `${j.id} (${j.name})`).join(', ')}\n`,
    );
    await cancelJobs(orphans.map(j => j.id));
    // Their runs write in the worktrees the resume is about to reset: wait until they are gone.
    const until = Date.now() + 120_000;
    while (Date.now() < until && (await workspaceJobs(workspace)).some(j => orphans.some(o => o.id === j.id))) {
      await new Promise(r => setTimeout(r, 500));
    }
  }

  /** Cancels the jobs still running (the engine is ending). */
  async dispose(): Promise<void> {
    const ids = [...this.live];
    this.live.clear();
    await cancelJobs(ids).catch(() => undefined);
  }

  /** Keeps the set of live jobs, and the exit hook that cancels them should the engine end abruptly. */
  private track(id: string, live: boolean): void {
    if (live) this.live.add(id);
    else this.live.delete(id);
    if (this.live.size && !this.exitHook) {
      this.exitHook = () => {
        if (this.live.size) spawnSync('scancel', [...this.live], { stdio: 'ignore', timeout: 10_000 });
      };
      process.on('exit', this.exitHook);
    } else if (!this.live.size && this.exitHook) {
      process.off('exit', this.exitHook);
      this.exitHook = null;
    }
  }
}

function reportOf(lines: string[]): GuardReport | null {
  for (const l of lines) {
    const m = parseGuardLine(l);
    if (m?.event === 'report') return m.report;
  }
  return null;
}

function blank(): RunOutcome {
  return { exitCode: null, signal: null, timedOut: false, interrupted: false, seconds: 0 };
}
