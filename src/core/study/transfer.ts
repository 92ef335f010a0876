/**
 * The transfer study's result, a pure function of the run's journal and the study's: for each
 * kept change, its gain at the search scale (the run's estimates, src/core/rule/measurements.ts), its
 * gain at the transfer scale (the study's replays), and whether it carried over. The CLI prints
 * it, the engine writes it to transfer/summary.json after every run, and the panel, the notebook
 * export and load() can read it from there without recomputing.
 */
import type { ExperimentRecord, JournalRecord, RunStartRecord } from '../journal/journal';
import { experimentsOf, runsOf } from '../journal/journal';
import { Measurements, stateKey } from '../rule/measurements';
import { differenceError, fmtNoise, mean, pooledSigma, signed } from '../rule/noise';
import type { StudyRecord, StudyRunRecord, StudyStartRecord } from './transfer-journal';
import { studyRunsOf } from './transfer-journal';

/** `transferred`: same direction as at the search scale and significant; `reversed`: opposite and significant. */
export type TransferVerdict = 'transferred' | 'neutral' | 'reversed' | 'unmeasured';
/** Ablation: removing the change costs what it gained (`holds`), nothing (`neutral`), or helps (`reversed`). */
export type AblateVerdict = 'holds' | 'neutral' | 'reversed' | 'unmeasured' | 'conflict';

export interface Estimate {
  mean: number | null;
  runs: number;
}

export interface TransferChange {
  n: number;
  commit: string;
  description: string;
  /** Metric differences, after − before (negative is better when lower is better). */
  delta_search: number | null;
  se_search: number | null;
  delta_transfer: number | null;
  se_transfer: number | null;
  verdict: TransferVerdict;
  search: Estimate;
  transfer: Estimate;
  /** With --ablate: best − (best with this change reverted), at the search scale; comparable to delta_search. */
  ablate?: {
    delta: number | null;
    se: number | null;
    /** The delta the keep decision saw (against the best of that moment). */
    delta_kept: number | null;
    verdict: AblateVerdict;
    runs: number;
    conflict: string | null;
  };
}

export interface TransferSummary {
  tag: string;
  metric: string;
  direction: 'lower' | 'higher';
  keep_sigma: number;
  env: Record<string, string>;
  /** "2×" for AUTORESEARCH_SCALE=2, else the environment spelled out. */
  scale: string;
  budget_s: number;
  search_budget_s: number;
  runs: number;
  baseline: { n: number; commit: string; search: Estimate; transfer: Estimate } | null;
  changes: TransferChange[];
  summary: {
    changes: number;
    transferred: number;
    neutral: number;
    reversed: number;
    unmeasured: number;
    /** Final best − baseline at each scale (signed metric differences). */
    total_delta_search: number | null;
    total_delta_transfer: number | null;
    /** The same as gains: positive is better, whichever the direction. */
    total_gain_search: number | null;
    total_gain_transfer: number | null;
    sigma_search: number | null;
    sigma_transfer: number | null;
    /** Every target has its K runs (and, with --ablate, every ablation). */
    complete: boolean;
    line: string;
  };
}

/** The label of a scale: AUTORESEARCH_SCALE=2 alone is "2×"; anything else is spelled out. */
export function scaleLabel(env: Record<string, string>): string {
  const keys = Object.keys(env);
  if (keys.length === 1 && keys[0] === 'AUTORESEARCH_SCALE') return `${env.AUTORESEARCH_SCALE}×`;
  return keys.map(k => `${k}=${env[k]}`).join(' ') || 'the same scale';
}

/**
 * The one rule for a verdict: significant when |delta| exceeds keep_sigma standard errors of the
 * difference (the keep rule's floor); direction against the reference delta (the search scale's).
 * A σ of 0 (a deterministic metric) makes any difference significant, as the strict keep rule does.
 */
export function directionVerdict(
  reference: number | null,
  delta: number | null,
  se: number | null,
  keepSigma: number,
): 'same' | 'neutral' | 'opposite' | 'unmeasured' {
  if (reference === null || delta === null || se === null) return 'unmeasured';
  if (Math.abs(delta) <= keepSigma * se || delta === 0 || reference === 0) return 'neutral';
  return Math.sign(delta) === Math.sign(reference) ? 'same' : 'opposite';
}

/** The baseline and each kept change of a run, in order: the commits a study replays. */
export function keptChain(records: readonly JournalRecord[]): ExperimentRecord[] {
  return experimentsOf(records as JournalRecord[]).filter(
    e => e.status === 'keep' && e.commit !== null && e.same_as === undefined && stateKey(e) !== null,
  );
}

function estimate(values: number[]): Estimate {
  return { mean: values.length ? mean(values) : null, runs: values.length };
}

function diff(after: Estimate, before: Estimate, sigma: number | null): { delta: number | null; se: number | null } {
  if (after.mean === null || before.mean === null) return { delta: null, se: null };
  const se = sigma === null ? null : differenceError(sigma, after.runs, before.runs);
  return { delta: after.mean - before.mean, se };
}

function metricsOf(runs: StudyRunRecord[]): number[] {
  return runs.map(r => r.metric).filter((v): v is number => v !== null);
}

/** The study's result from both journals (either may be partial: a study still going, a run that moved on). */
export function summarizeTransfer(run: readonly JournalRecord[], study: readonly StudyRecord[]): TransferSummary {
  const start = [...run].reverse().find((r): r is RunStartRecord => r.type === 'run_start');
  const first = study.find((r): r is StudyStartRecord => r.type === 'study_start');
  const last = [...study].reverse().find((r): r is StudyStartRecord => r.type === 'study_start');
  const config = start?.config;
  const direction = config?.direction ?? 'lower';
  const keepSigma = config?.keep_sigma ?? 2;
  const env = first?.env ?? {};
  const K = last?.runs ?? 2;
  const m = Measurements.of(run as JournalRecord[]);
  const sigmaSearch = m.sigma().sigma;
  const chain = keptChain(run);
  const searchOf = (e: ExperimentRecord) => estimate(m.values(stateKey(e) as string));
  const transferRuns = chain.map(e => studyRunsOf(study, 'transfer', e.commit as string));
  const sigmaTransfer = pooledSigma(transferRuns.map(metricsOf)).sigma;
  const transferOf = (i: number) => estimate(metricsOf(transferRuns[i]));
  const best = chain.at(-1);
  const ablating = study.some(r => r.type === 'study_start' && r.ablate);
  // Ablation runs share the search scale with the run's, so σ pools over both.
  const runGroups = [...new Set(runsOf(run as JournalRecord[]).map(r => r.state))].map(s => m.values(s));
  const ablateRuns = chain.map(e =>
    studyRunsOf(study, 'ablate', e.commit as string).filter(r => r.commit === best?.commit),
  );
  const sigmaAblate = pooledSigma([...runGroups, ...ablateRuns.map(metricsOf)]).sigma;

  const changes: TransferChange[] = chain.slice(1).map((e, j) => {
    const i = j + 1;
    const s = diff(searchOf(e), searchOf(chain[i - 1]), sigmaSearch);
    const t = diff(transferOf(i), transferOf(i - 1), sigmaTransfer);
    const v = directionVerdict(s.delta, t.delta, t.se, keepSigma);
    const change: TransferChange = {
      n: e.n,
      commit: e.commit as string,
      description: e.description,
      delta_search: s.delta,
      se_search: s.se,
      delta_transfer: t.delta,
      se_transfer: t.se,
      verdict: v === 'same' ? 'transferred' : v === 'opposite' ? 'reversed' : v,
      search: searchOf(e),
      transfer: transferOf(i),
    };
    if (ablating && best) change.ablate = ablationOf(study, e, best, ablateRuns[i], m, sigmaAblate, s.delta, keepSigma);
    return change;
  });

  const count = (v: TransferVerdict) => changes.filter(c => c.verdict === v).length;
  const total = (at: (i: number) => Estimate) =>
    chain.length > 1 ? diff(at(chain.length - 1), at(0), null).delta : null;
  const totalSearch = total(i => searchOf(chain[i]));
  const totalTransfer = total(transferOf);
  const gain = (d: number | null) => (d === null ? null : direction === 'lower' ? -d : d);
  const complete =
    transferRuns.every(r => r.length >= K) &&
    (!ablating || changes.every(c => c.ablate?.verdict === 'conflict' || (c.ablate?.runs ?? 0) >= K));
  const scale = scaleLabel(env);
  const summary = {
    changes: changes.length,
    transferred: count('transferred'),
    neutral: count('neutral'),
    reversed: count('reversed'),
    unmeasured: count('unmeasured'),
    total_delta_search: totalSearch,
    total_delta_transfer: totalTransfer,
    total_gain_search: gain(totalSearch),
    total_gain_transfer: gain(totalTransfer),
    sigma_search: sigmaSearch,
    sigma_transfer: sigmaTransfer,
    complete,
    line: '',
  };
  summary.line =
    changes.length === 0
      ? `run ${start?.tag ?? '?'} kept no change beyond the baseline: nothing to transfer`
      : `${summary.transferred} of ${changes.length} changes transferred; total gain ${fmtGain(summary.total_gain_search)} at search scale, ${fmtGain(summary.total_gain_transfer)} at ${scale}${complete ? '' : ' (the study is not finished: rerun it to measure the rest)'}`;
  return {
    tag: start?.tag ?? first?.tag ?? '',
    metric: config?.metric ?? 'val_bpb',
    direction,
    keep_sigma: keepSigma,
    env,
    scale,
    budget_s: first?.budget_s ?? config?.budget_s ?? 0,
    search_budget_s: config?.budget_s ?? 0,
    runs: K,
    baseline: chain[0]
      ? { n: chain[0].n, commit: chain[0].commit as string, search: searchOf(chain[0]), transfer: transferOf(0) }
      : null,
    changes,
    summary,
  };
}

function ablationOf(
  study: readonly StudyRecord[],
  e: ExperimentRecord,
  best: ExperimentRecord,
  runs: StudyRunRecord[],
  m: Measurements,
  sigma: number | null,
  deltaSearch: number | null,
  keepSigma: number,
): NonNullable<TransferChange['ablate']> {
  const conflict = study.find(r => r.type === 'revert_conflict' && r.reverted === e.commit && r.commit === best.commit);
  const removed = estimate(metricsOf(runs));
  const kept = estimate(m.values(stateKey(best) as string));
  // best − without: the change's contribution as the final best has it, signed like delta_search.
  const d = diff(kept, removed, sigma);
  const v = conflict ? 'conflict' : directionVerdict(deltaSearch, d.delta, d.se, keepSigma);
  return {
    delta: d.delta,
    se: d.se,
    delta_kept: e.delta,
    verdict: v === 'same' ? 'holds' : v === 'opposite' ? 'reversed' : v,
    runs: runs.length,
    conflict: conflict?.type === 'revert_conflict' ? conflict.message : null,
  };
}

/** A gain for the summary line: positive is better. */
export function fmtGain(g: number | null): string {
  if (g === null) return '—';
  return g < 0 ? `−${fmtNoise(-g)}` : fmtNoise(g);
}

/** A delta with its standard error, for tables: "−0.0400 ± 0.0012". */
export function fmtDeltaWithError(d: number | null, se: number | null): string {
  if (d === null) return '—';
  return se === null ? signed(d) : `${signed(d)} ± ${fmtNoise(se)}`;
}
