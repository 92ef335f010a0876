/**
 * One experiment: apply a proposal, check it, commit it, run it within the
 * deadline, read the metric and decide keep or discard. The loop around it
 * owns the journal and the best commit; this file only produces the record.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { deltaOf, isImprovement } from '../core/keep';
import type { ExperimentRecord, RunConfig } from '../core/journal';
import { ZERO_USAGE } from '../core/journal';
import { memoryGb, parseSummary, readMetric, type Summary } from '../core/summary';
import type { Executor, RunKernel } from './executor/types';
import { countDiffLines, type Repo } from './git';
import { LogCapture } from './log-capture';
import type { Proposal } from './proposers/types';
import { pathWithPython, syntaxCheck } from './python';
import { changedReadonly, checkEditablePath, PROGRAM_FILE } from './workspace';

export interface ExperimentEnv {
  dir: string;
  repo: Repo;
  config: RunConfig;
  executor: Executor;
  python: string;
  proposerName: string;
  readonlyHashes: Record<string, string>;
  logFile: string;
  logHeadBytes?: number;
  logTailBytes?: number;
  signal: AbortSignal;
  /** Called with the live log capture once the run starts (for the terminal's live line). */
  onRunStart?: (log: LogCapture, startedAt: number, diff: string) => void;
  onPhase?: (phase: string) => void;
  onSpawn?: (pgid: number | null) => void;
  onKernel?: (kernel: RunKernel) => void;
  /** Extra environment for the run (a worker's CUDA_VISIBLE_DEVICES). */
  runEnv?: Record<string, string>;
}

export interface ExperimentInput {
  n: number;
  best: { commit: string; metric: number } | null;
  /** Null for a baseline: run the best commit as it is. */
  proposal: Proposal | null;
  proposeSeconds: number;
}

/** Runs one experiment and returns its journal record; the tree is left at the commit that ran. */
export async function runExperiment(env: ExperimentEnv, input: ExperimentInput): Promise<ExperimentRecord> {
  const started = Date.now();
  const parent = await env.repo.head();
  const { proposal } = input;
  const record: ExperimentRecord = {
    type: 'experiment',
    ts: new Date().toISOString(),
    n: input.n,
    parent_commit: parent,
    commit: null,
    description: proposal?.description ?? 'baseline',
    rationale: proposal?.rationale ?? 'the unchanged code, measured first so every later experiment has a reference',
    diff: '',
    lines_added: 0,
    lines_removed: 0,
    summary: {},
    metric: null,
    best_before: input.best?.metric ?? null,
    delta: null,
    status: 'crash',
    reason: null,
    memory_gb: 0,
    timings: { propose_s: input.proposeSeconds, run_s: 0, total_s: 0 },
    exit_code: null,
    signal: null,
    log_path: null,
    log_truncated: false,
    proposer: proposal ? env.proposerName : 'baseline',
    usage: proposal?.usage ?? { ...ZERO_USAGE },
    cost_usd: proposal?.cost_usd ?? 0,
    ...(proposal?.meta !== undefined ? { proposal_meta: proposal.meta } : {})
  };
  const finish = (fields: Partial<ExperimentRecord>): ExperimentRecord => {
    Object.assign(record, fields);
    record.timings.total_s = (Date.now() - started) / 1000 + input.proposeSeconds;
    record.ts = new Date().toISOString();
    return record;
  };

  if (proposal) {
    env.onPhase?.('apply');
    const { problem, diff } = await applyProposal(env, proposal);
    const { added, removed } = countDiffLines(diff);
    Object.assign(record, { diff, lines_added: added, lines_removed: removed });
    if (problem) {
      return finish({ status: 'rejected', reason: problem });
    }
    if (diff.trim() === '') {
      return finish({ status: 'rejected', reason: 'the proposal changed nothing' });
    }
    env.onPhase?.('commit');
    record.commit = await env.repo.commit(env.config.editable, proposal.description);
  } else {
    record.commit = parent;
  }

  env.onPhase?.('run');
  fs.mkdirSync(path.dirname(env.logFile), { recursive: true });
  const log = new LogCapture(env.logFile, env.logHeadBytes, env.logTailBytes);
  record.log_path = env.logFile;
  env.onRunStart?.(log, Date.now(), record.diff);
  let outcome;
  try {
    outcome = await env.executor.run({
      cwd: env.dir,
      command: env.config.run,
      timeoutS: env.config.timeout_s,
      env: { ...pathWithPython(env.python), AUTORESEARCH_BUDGET_S: String(env.config.budget_s), ...env.runEnv },
      log,
      signal: env.signal,
      onSpawn: env.onSpawn,
      onKernel: env.onKernel
    });
  } finally {
    log.close();
  }
  env.onPhase?.('judge');
  const summary: Summary | null = parseSummary(log.tailText());
  Object.assign(record, {
    summary: summary ?? {},
    exit_code: outcome.exitCode,
    signal: outcome.signal,
    log_truncated: log.truncated,
    memory_gb: memoryGb(summary)
  });
  record.timings.run_s = outcome.seconds;

  if (outcome.interrupted) {
    return finish({ status: 'interrupted', reason: 'stopped by the user while training' });
  }
  const touched = changedReadonly(env.dir, env.readonlyHashes);
  if (touched.length) {
    return finish({ status: 'rejected', reason: `read-only ${touched.join(', ')} changed during the run` });
  }
  if (outcome.timedOut) {
    return finish({ status: 'crash', reason: `killed at the ${env.config.timeout_s} s deadline` });
  }
  if (outcome.exitCode !== 0) {
    const why = outcome.signal ? `killed by ${outcome.signal}` : `exited with code ${outcome.exitCode}`;
    return finish({ status: 'crash', reason: `${why}: ${lastErrorLine(log.tailText())}` });
  }
  const metric = readMetric(summary, env.config.metric);
  if ('error' in metric) {
    return finish({ status: 'crash', reason: metric.error });
  }
  return finish(judge(metric.value, input.best?.metric ?? null, env.config.direction));
}

/** Keep or discard a measured result against a best, with the delta and the best it was judged against. */
export function judge(metric: number, best: number | null, direction: RunConfig['direction']): Pick<ExperimentRecord, 'metric' | 'delta' | 'status' | 'best_before'> {
  const keep = isImprovement(metric, best, direction);
  return { metric, delta: deltaOf(metric, best), status: keep ? 'keep' : 'discard', best_before: best };
}

/** Writes the proposal's files after the guards; returns the diff and why it was rejected, or null. */
async function applyProposal(env: ExperimentEnv, proposal: Proposal): Promise<{ problem: string | null; diff: string }> {
  const files = Object.entries(proposal.files);
  for (const [file] of files) {
    const problem = checkEditablePath(env.dir, file, env.config.editable);
    if (problem) {
      return { problem: `edit refused: ${problem}`, diff: '' };
    }
  }
  for (const [file, content] of files) {
    fs.writeFileSync(path.join(env.dir, file), content);
  }
  env.onPhase?.('check');
  // Independent checks, run at once: each is a process start.
  const [diff, changed, syntax] = await Promise.all([
    env.repo.diff(env.config.editable),
    env.repo.changedTrackedFiles(),
    syntaxCheck(env.python, env.dir, files.map(([f]) => f))
  ]);
  const touched = changedReadonly(env.dir, env.readonlyHashes);
  const stray = changedReadonlyOrStray(changed, env.config.editable, touched);
  return { problem: stray ?? (syntax ? `syntax error: ${syntax}` : null), diff };
}

function changedReadonlyOrStray(changed: string[], editable: string[], touchedReadonly: string[]): string | null {
  if (touchedReadonly.length) {
    return `read-only ${touchedReadonly.join(', ')} changed`;
  }
  // program.md is the researcher's to edit at any time (see PROGRAM_FILE), never a stray change.
  const stray = changed.filter(f => !editable.includes(f) && f !== PROGRAM_FILE);
  return stray.length ? `files outside the editable list changed: ${stray.join(', ')}` : null;
}

/** The most telling line of a crashed run's output (a Python exception's last line). */
function lastErrorLine(tail: string): string {
  const lines = tail.split('\n').map(l => l.trim()).filter(Boolean);
  const err = [...lines].reverse().find(l => /(Error|Exception|Killed|error:)/.test(l));
  return (err ?? lines[lines.length - 1] ?? 'no output').slice(0, 300);
}
