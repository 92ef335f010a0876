/**
 * Measuring committed code until the keep rule decides: run it, then run again whichever
 * side the rule asks for (the candidate, to confirm it; the best, to sharpen its mean), one
 * run at a time. Every run is journaled the moment it ends, so a kill -9 loses none and a
 * resumed engine repeats none: the runs a state already has are where measuring resumes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunPurpose, RunRecord, Verdict } from '../../core/journal/journal';
import { judgeAgainstBest, judgeBaseline, type Decision } from '../../core/rule/judge';
import type { NoiseRule } from '../../core/rule/noise';
import { sizeWords } from '../../core/config/limits';
import { memoryGb, parseSummary, readMetric } from '../../core/rule/summary';
import type { Executor, RunIsolation, RunJob, RunKernel, RunOutcome } from '../executor/types';
import { repositoryGone, type Repo } from '../git/git';
import { seedFor, type Ledger } from './ledger';
import { LogCapture } from './log-capture';
import type { Phase } from '../run/loop-events';
import { pathWithPython } from '../workspace/python';
import { installAdvice } from './requirements';
import type { Best } from '../run/loop-records';
import { changedReadonly } from '../workspace/workspace';
import { UserError } from '../user-error';

export interface MeasureEnv {
  dir: string;
  repo: Repo;
  executor: Executor;
  python: string;
  command: string;
  /** The summary key ranked by. */
  metric: string;
  budgetS: number;
  timeoutS: number;
  readonlyHashes: Record<string, string>;
  ledger: Ledger;
  rule: NoiseRule;
  /** The best as it is now: with several workers it may move while this experiment is measured. */
  currentBest: () => Best | null;
  /** Log file of this experiment's i-th run. */
  runLog: (i: number) => string;
  logHeadBytes?: number;
  logTailBytes?: number;
  signal: AbortSignal;
  worker?: number;
  /** Extra environment for every run (a worker's CUDA_VISIBLE_DEVICES). */
  runEnv?: Record<string, string>;
  /** The sandbox and what it protects. */
  isolation?: RunIsolation;
  onPhase?: (phase: Phase) => void;
  onRunStart?: (log: LogCapture, startedAt: number, purpose: RunPurpose, i: number) => void;
  onSpawn?: (pgids: number[] | null, cgroups?: string[]) => void;
  onKernel?: (kernel: RunKernel) => void;
  /** A queued executor's i-th run waits as this job (Slurm). */
  onQueued?: (job: RunJob, purpose: RunPurpose, i: number) => void;
  /** What a scheduler lists the i-th run as (autoresearch-<tag>-<n>-<i>). */
  runName?: (i: number) => string;
  /** The workspace the runs belong to (the folder itself, not a worker's worktree). */
  workspace?: string;
}

export interface Target {
  commit: string;
  state: string;
}

export type Measured =
  | {
      kind: 'decided';
      status: 'keep' | 'discard';
      reason: string;
      mean: number;
      bestMean: number | null;
      delta: number | null;
      verdict: Verdict;
    }
  | { kind: 'failed'; status: 'crash' | 'interrupted' | 'rejected'; reason: string };

/** Runs `candidate` (n's code, checked out) and, when asked, the best, until keep or discard; the tree ends at the candidate. */
export async function measure(env: MeasureEnv, n: number, candidate: Target, baseline: boolean): Promise<Measured> {
  const m = env.ledger.measurements;
  const spent = { measure: 0, noise: 0, confirm: 0, best: 0 };
  let decision: Decision | null = null;
  // What the tree has checked out (the caller hands it over at the candidate): moved only for a
  // re-measure of the best, so a plain experiment asks git nothing here.
  let at = candidate.commit;
  const checkout = async (commit: string) => {
    if (at !== commit) await env.repo.resetHard(commit);
    at = commit;
  };
  try {
    for (;;) {
      const values = m.values(candidate.state);
      let next: { target: Target; purpose: RunPurpose } | null = null;
      if (values.length === 0) {
        next = { target: candidate, purpose: 'measure' };
      } else if (baseline) {
        if (values.length < env.rule.noiseRuns) next = { target: candidate, purpose: 'noise' };
      } else {
        const best = env.currentBest();
        if (!best) throw new Error(`experiment #${n} has no best to be judged against`);
        decision = judgeAgainstBest(m, candidate.state, best, env.rule);
        if (decision.action === 'run-best') next = { target: best, purpose: 'best' };
        else if (decision.action === 'run-candidate') next = { target: candidate, purpose: 'confirm' };
      }
      if (!next) break;
      await checkout(next.target.commit);
      const run = await runOnce(env, n, next.target, next.purpose);
      spent[next.purpose]++;
      if (run.failed) {
        if (next.purpose === 'best' && run.failed.status === 'crash') {
          // The candidate did not fail; the bar could not be re-measured, so nothing is kept on it.
          const d = decision as Decision;
          return {
            kind: 'decided',
            status: 'discard',
            reason: `re-measuring the best crashed (${run.failed.reason}); not kept`,
            mean: d.mean,
            bestMean: d.bestMean,
            delta: d.delta,
            verdict: verdictOf(env, d, spent, candidate),
          };
        }
        const which =
          spent.measure + spent.noise + spent.confirm > 1 ? ` (run ${run.record?.k ?? '?'} of this code)` : '';
        return { kind: 'failed', status: run.failed.status, reason: `${run.failed.reason}${which}` };
      }
    }
  } finally {
    // With the repository gone there is nothing to check out; the error that says so goes on up.
    if (!repositoryGone(env.dir)) await checkout(candidate.commit);
  }
  if (baseline) {
    const d = judgeBaseline(m.values(candidate.state), m.sigma().sigma, env.rule);
    return {
      kind: 'decided',
      status: 'keep',
      reason: d.reason,
      mean: d.mean,
      bestMean: null,
      delta: null,
      verdict: verdictOf(env, d, spent, candidate),
    };
  }
  const d = decision as Decision;
  return {
    kind: 'decided',
    status: d.action === 'keep' ? 'keep' : 'discard',
    reason: d.reason,
    mean: d.mean,
    bestMean: d.bestMean,
    delta: d.delta,
    verdict: verdictOf(env, d, spent, candidate),
  };
}

function verdictOf(env: MeasureEnv, d: Decision, spent: Verdict['spent'], candidate: Target): Verdict {
  const sigma = env.ledger.measurements.sigma().sigma;
  const runs = env.ledger.measurements.values(candidate.state).length;
  return {
    sigma,
    se: d.se,
    floor: d.floor,
    keep_sigma: env.rule.keepSigma,
    best_runs: d.bestRuns,
    strict: d.strict,
    confirmed: d.action === 'keep' && !d.strict && runs > 1,
    spent,
  };
}

interface RunResult {
  record: RunRecord | null;
  failed: { status: 'crash' | 'interrupted' | 'rejected'; reason: string } | null;
}

/** One run of `target`, checked out: journaled (unless stopped mid-run, which measured nothing). */
async function runOnce(env: MeasureEnv, n: number, target: Target, purpose: RunPurpose): Promise<RunResult> {
  const i = env.ledger.runsFor(n).length + 1;
  const k = env.ledger.measurements.runCount(target.state) + 1;
  const seed = seedFor(n, i);
  const logFile = env.runLog(i);
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  env.onPhase?.(purpose === 'measure' ? 'run' : purpose);
  const log = new LogCapture(logFile, env.logHeadBytes, env.logTailBytes);
  // A queued executor (Slurm) says when the run leaves the queue: its budget counts down from then.
  if (!env.executor.queued) env.onRunStart?.(log, Date.now(), purpose, i);
  let outcome;
  try {
    outcome = await env.executor.run({
      cwd: env.dir,
      command: env.command,
      timeoutS: env.timeoutS,
      env: {
        ...pathWithPython(env.python),
        AUTORESEARCH_BUDGET_S: String(env.budgetS),
        AUTORESEARCH_SEED: String(seed),
        AUTORESEARCH_RUN: String(k),
        ...env.runEnv,
      },
      python: env.python,
      isolation: env.isolation,
      log,
      signal: env.signal,
      onSpawn: env.onSpawn,
      onKernel: env.onKernel,
      name: env.runName?.(i),
      workspace: env.workspace,
      onQueued: job => env.onQueued?.(job, purpose, i),
      onStarted: at => env.onRunStart?.(log, at, purpose, i),
    });
  } finally {
    log.close();
  }
  if (outcome.interrupted) {
    return { record: null, failed: { status: 'interrupted', reason: 'stopped by the user while training' } };
  }
  const summary = parseSummary(log.tailText());
  const read = readMetric(summary, env.metric);
  // A run that deleted .git leaves nothing to commit or reset to: journaled, then the run stops.
  const destroyed = repositoryGone(env.dir);
  const failed = destroyed
    ? { status: 'crash' as const, reason: REPOSITORY_DELETED }
    : failureOf(env, outcome, read, log.tailText());
  const metric = failed || 'error' in read ? null : read.value;
  const record: RunRecord = {
    type: 'run',
    ts: new Date().toISOString(),
    n,
    commit: target.commit,
    state: target.state,
    purpose,
    k,
    seed,
    metric,
    summary: summary ?? {},
    run_s: outcome.seconds,
    exit_code: outcome.exitCode,
    signal: outcome.signal,
    reason: failed?.reason ?? null,
    memory_gb: memoryGb(summary),
    log_path: logFile,
    log_truncated: log.truncated,
    ...(outcome.sandbox && { sandbox: outcome.sandbox }),
    ...(outcome.missing?.length && { sandbox_missing: outcome.missing }),
    ...(outcome.strays && { strays: outcome.strays }),
    ...(outcome.queueS !== undefined && { queue_s: outcome.queueS }),
    ...(outcome.job && { job: outcome.job }),
    ...(env.worker !== undefined ? { worker: env.worker } : {}),
  };
  env.ledger.record(record);
  if (destroyed) {
    throw new RepositoryDeleted(n);
  }
  return { record, failed };
}

const REPOSITORY_DELETED = "the training run deleted the workspace's git repository (.git)";

/** A training run deleted .git: no commit can be kept or reset, so the run cannot go on (setup.ts adds how to recover). */
export class RepositoryDeleted extends UserError {
  constructor(readonly n: number) {
    super(
      `the training run of experiment #${n} deleted the workspace's git repository (.git), so no commit can be kept or reset; the run stopped`,
    );
  }
}

/** Why a run measured nothing, or null (the transfer study's runs are judged by it too). */
export function failureOf(
  env: Pick<MeasureEnv, 'dir' | 'readonlyHashes' | 'timeoutS' | 'python' | 'executor'>,
  outcome: Pick<RunOutcome, 'exitCode' | 'signal' | 'timedOut' | 'limits' | 'failure'>,
  metric: ReturnType<typeof readMetric>,
  tail: string,
): RunResult['failed'] {
  const touched = changedReadonly(env.dir, env.readonlyHashes);
  if (touched.length) return { status: 'rejected', reason: `read-only ${touched.join(', ')} changed during the run` };
  if (outcome.timedOut) return { status: 'crash', reason: `killed at the ${env.timeoutS} s deadline` };
  // Its guard killed, a limit reached: what the executor knows says more than the output.
  if (outcome.failure) return { status: 'crash', reason: outcome.failure };
  if (outcome.exitCode !== 0) {
    const why = outcome.signal ? `killed by ${outcome.signal}` : `exited with code ${outcome.exitCode}`;
    const limit = limitReached(outcome, tail);
    const last = missingModuleWords(tail, ranBy(env), env.dir) ?? lastErrorLine(tail);
    return { status: 'crash', reason: `${why}: ${limit ? `${limit}: ` : ''}${last}` };
  }
  return 'error' in metric ? { status: 'crash', reason: metric.error } : null;
}

/** 128 + SIGXFSZ (25): how bubblewrap and a shell pass on a command the file size limit killed. */
const XFSZ_EXIT = 153;
/** EFBIG as Python (which ignores SIGXFSZ) and C programs word it; the shell's word for SIGXFSZ. */
const FILE_SIZE_WORDS = /File too large|File size limit exceeded/;
/** A fork or a thread refused, as Python, dash and bash word it. */
const PROCESS_WORDS =
  /can't start new thread|Cannot fork|fork: (retry: )?Resource temporarily unavailable|os\.fork\(\)[\s\S]{0,400}?\[Errno 11\]/;

/**
 * Which of the run's limits (src/core/config/limits.ts) a crashed run reached, in words, or null: the
 * file size (SIGXFSZ, or the error of a write past it) or the processes (a fork or thread refused).
 */
export function limitReached(outcome: Pick<RunOutcome, 'exitCode' | 'signal' | 'limits'>, tail: string): string | null {
  const limits = outcome.limits ?? {};
  if (outcome.signal === 'SIGXFSZ' || outcome.exitCode === XFSZ_EXIT || FILE_SIZE_WORDS.test(tail)) {
    const size = limits.file_size_bytes ? `, ${sizeWords(limits.file_size_bytes)}` : '';
    return `the file size limit (limits.file_size${size}) was reached`;
  }
  if (PROCESS_WORDS.test(tail)) {
    const n = limits.processes ? `, ${limits.processes}` : '';
    return `the process limit (limits.processes${n}) was reached`;
  }
  return null;
}

const MISSING_MODULE_WORDS = 'is not installed in';
/** Whether a crash's reason is missingModuleWords'. */
export const MISSING_MODULE = new RegExp(`the Python module \\S+ ${MISSING_MODULE_WORDS} `);

/** Who ran a run's Python, for a message: the interpreter, or the kernel (whose environment may differ). */
function ranBy(env: Pick<MeasureEnv, 'python' | 'executor'>): { python: string; kernel: string | null } {
  const kernel = env.executor.name === 'kernel' ? ((env.executor as { kernelName?: string }).kernelName ?? null) : null;
  return { python: env.python, kernel };
}

/**
 * A crash from a module the environment lacks (the last `No module named` in the output): which
 * module, which interpreter or kernel ran it, and how to install it there — the version the
 * workspace's requirements.txt pins, and for PyTorch the build (requirements.ts) — not a bug of
 * train.py. The output is the run's, so only a module name that is a Python identifier is quoted
 * into the command.
 */
export function missingModuleWords(
  tail: string,
  by: { python: string; kernel: string | null },
  dir: string,
): string | null {
  const found = [...tail.matchAll(/ModuleNotFoundError: No module named '([A-Za-z_][\w.]*)'/g)].pop();
  if (!found) return null;
  const name = found[1].split('.')[0];
  const where = by.kernel ? `the ${by.kernel} kernel's environment` : by.python;
  const { spec, note } = installAdvice(dir, name);
  const how = by.kernel
    ? `%pip install ${spec} in a notebook on the ${by.kernel} kernel`
    : `${by.python} -m pip install ${spec}`;
  return `the Python module ${name} ${MISSING_MODULE_WORDS} ${where}; install it there (${how}; ${note})`;
}

const GUARD_NOTE = /^\[autoresearch\] (sandbox: (on|off) \(|killed \d+ process|cgroup: )/;

/** The most telling line of a crashed run's output (a Python exception's last line). */
export function lastErrorLine(tail: string): string {
  // The run guard's own notes (sandbox state, leftovers killed) say nothing of why the run failed.
  const lines = tail
    .split('\n')
    .map(l => l.trim())
    .filter(l => l && !GUARD_NOTE.test(l));
  const err = [...lines].reverse().find(l => /(Error|Exception|Killed|error:)/.test(l));
  return (err ?? lines[lines.length - 1] ?? 'no output').slice(0, 300);
}
