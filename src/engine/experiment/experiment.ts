/**
 * One experiment: apply a proposal, check it, commit it, then measure it (measure.ts: as many
 * runs as the noise-aware keep rule asks for) and produce its record. The loop around it owns
 * the journal's experiment records and the best commit; the runs are journaled as they land.
 */
import { type ExperimentRecord, ZERO_USAGE } from '../../core/journal/journal';
import { fmtMetric } from '../../core/views/bundle';
import { judgeAgainstBest } from '../../core/rule/judge';
import { mean, noiseRuleOf, type NoiseRule } from '../../core/rule/noise';
import { isolationOf } from '../executor/guard';
import { countDiffLines } from '../git/git';
import { stateOf, type Ledger } from './ledger';
import type { ExperimentEnv } from './experiment-env';
import type { Best } from '../run/loop-records';
import { awaitReview } from '../step-mode/experiment-review';
import { measure } from './measure';
import type { Proposal } from '../proposers/types';
import { syntaxCheck } from '../workspace/python';
import { changedReadonly, checkEditablePath, editableLinkProblem, PROGRAM_FILE } from '../workspace/workspace';
import { notRegularProblem, writeWorkspaceFile } from '../workspace/workspace-files';

export interface ExperimentInput {
  n: number;
  best: Best | null;
  /** Null for a baseline: run the best commit as it is. */
  proposal: Proposal | null;
  proposeSeconds: number;
  /** An experiment a killed engine left mid-measurement: its commit (checked out), measured on from its recorded runs. */
  resumeCommit?: string;
  /** Measure as the baseline (noise_runs runs, kept as the reference); default: when there is no proposal. */
  baseline?: boolean;
}

/** Runs one experiment and returns its journal record; the tree is left at the commit that ran. */
export async function runExperiment(env: ExperimentEnv, input: ExperimentInput): Promise<ExperimentRecord> {
  const started = Date.now();
  const { proposal } = input;
  const parent = input.resumeCommit
    ? ((await env.repo.revParse(`${input.resumeCommit}^`)) ?? input.resumeCommit)
    : await env.repo.head();
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
    ...(proposal?.meta !== undefined ? { proposal_meta: proposal.meta } : {}),
    ...(env.worker !== undefined ? { worker: env.worker } : {}),
  };
  const finish = (fields: Partial<ExperimentRecord>): ExperimentRecord => {
    Object.assign(record, fields);
    record.timings.total_s = (Date.now() - started) / 1000 + input.proposeSeconds;
    record.ts = new Date().toISOString();
    return record;
  };
  const m = env.ledger.measurements;

  if (input.resumeCommit) {
    await env.repo.resetHard(input.resumeCommit);
    record.commit = input.resumeCommit;
    record.diff = await env.repo.diffCommits(parent, input.resumeCommit, env.config.editable);
    const { added, removed } = countDiffLines(record.diff);
    Object.assign(record, { lines_added: added, lines_removed: removed });
  } else if (proposal) {
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
    // Code identical to code already judged is not run again: that result is reported.
    const state = stateOf(env.dir, env.config.editable);
    const earlier = m.decision(state);
    if (earlier) {
      const values = m.values(state);
      const result = values.length
        ? `mean ${fmtMetric(mean(values))} over ${values.length} run${values.length > 1 ? 's' : ''}`
        : 'no metric';
      return finish({
        status: 'rejected',
        state,
        same_as: earlier.n,
        metric: values.length ? mean(values) : null,
        reason: `same code as #${earlier.n} (${earlier.status}, ${result}); not run again`,
      });
    }
    if (env.review?.wants(input.n)) {
      env.onPhase?.('review');
      const rejected = await awaitReview({ ...env, review: env.review }, input.n, proposal, record, applyProposal);
      if (rejected) return finish(rejected);
    }
    env.onPhase?.('commit');
    record.commit = await env.repo.commit(env.config.editable, proposal.description);
  } else {
    record.commit = parent;
  }
  const state = stateOf(env.dir, env.config.editable);
  record.state = state;
  record.log_path = env.runLog(1);

  const measured = await measure(
    {
      dir: env.dir,
      repo: env.repo,
      executor: env.executor,
      python: env.python,
      command: env.config.run,
      metric: env.config.metric,
      budgetS: env.config.budget_s,
      timeoutS: env.config.timeout_s,
      readonlyHashes: env.readonlyHashes,
      ledger: env.ledger,
      isolation: isolationOf(env.config),
      rule: noiseRuleOf(env.config),
      currentBest: env.currentBest,
      runLog: env.runLog,
      logHeadBytes: env.logHeadBytes,
      logTailBytes: env.logTailBytes,
      signal: env.signal,
      worker: env.worker,
      runEnv: env.runEnv,
      onPhase: env.onPhase,
      onSpawn: env.onSpawn,
      onKernel: env.onKernel,
      onRunStart: (log, startedAt, purpose) => env.onRunStart?.(log, startedAt, record.diff, purpose),
      onQueued: env.onQueued,
      runName: env.runName,
      workspace: env.workspace,
    },
    input.n,
    { commit: record.commit, state },
    input.baseline ?? proposal === null,
  );
  env.onPhase?.('judge');
  const runs = env.ledger.runsFor(input.n);
  const own = runs.filter(r => r.state === state);
  const lastOk = [...own].reverse().find(r => r.metric !== null) ?? own[own.length - 1];
  Object.assign(record, {
    runs: env.ledger.refs(state, input.n),
    summary: lastOk?.summary ?? {},
    exit_code: lastOk?.exit_code ?? null,
    signal: lastOk?.signal ?? null,
    memory_gb: Math.max(0, ...own.map(r => r.memory_gb)),
    log_truncated: own.some(r => r.log_truncated === true),
  });
  record.timings.run_s = runs.reduce((s, r) => s + r.run_s, 0);
  const queued = runs.reduce((s, r) => s + (r.queue_s ?? 0), 0);
  if (runs.some(r => r.queue_s !== undefined)) record.timings.queue_s = queued;
  if (measured.kind === 'failed') {
    // The log worth reading is the failed run's (a repeat's crash is not in the first run's log).
    const failedRun = runs[runs.length - 1];
    return finish({
      status: measured.status,
      reason: measured.reason,
      log_path: failedRun?.log_path ?? record.log_path,
    });
  }
  return finish({
    status: measured.status,
    reason: measured.reason,
    metric: measured.mean,
    best_before: measured.bestMean,
    delta: measured.delta,
    verdict: measured.verdict,
  });
}

/** Writes the proposal's files after the guards; returns the diff and why it was rejected, or null. */
export async function applyProposal(
  env: ExperimentEnv,
  proposal: Proposal,
): Promise<{ problem: string | null; diff: string }> {
  const files = Object.entries(proposal.files);
  for (const [file] of files) {
    const problem =
      checkEditablePath(env.dir, file, env.config.editable) ??
      editableLinkProblem(env.dir, file) ??
      notRegularProblem(env.dir, file);
    if (problem) {
      return { problem: `edit refused: ${problem}`, diff: '' };
    }
  }
  for (const [file, content] of files) {
    writeWorkspaceFile(env.dir, file, content);
  }
  env.onPhase?.('check');
  // Independent checks, run at once: each is a process start.
  const [diff, changed, syntax] = await Promise.all([
    env.repo.diff(env.config.editable),
    env.repo.changedTrackedFiles(),
    syntaxCheck(
      env.python,
      env.dir,
      files.map(([f]) => f),
    ),
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

/**
 * A result judged again, without running anything, against the best as it is now: with
 * several workers another keep may have landed while it was measured.
 */
export function rejudge(
  record: ExperimentRecord,
  best: Best | null,
  ledger: Ledger,
  rule: NoiseRule,
): Partial<ExperimentRecord> {
  if (!best || !record.state || best.commit === record.commit || best.state === record.state) return {};
  const d = judgeAgainstBest(ledger.measurements, record.state, best, rule);
  const moved = { best_before: d.bestMean, delta: d.delta };
  if (record.status === 'discard') {
    // The best only improves, so a discard stays one; its delta is against the best as it is now.
    return d.action === 'discard' ? { ...moved, reason: d.reason } : moved;
  }
  return d.action === 'keep'
    ? { ...moved, reason: d.reason }
    : { ...moved, status: 'discard', reason: `${d.reason}; judged against the best that landed while it ran` };
}
