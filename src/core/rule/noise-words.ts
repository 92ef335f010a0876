/**
 * The noise-aware results in words, for every place a reader sees them: the experiment's
 * outputs (bundle fallbacks and the MIME renderer), the panel and the exported notebook's
 * summary. One wording, so `± 0.0023 (3 runs)` means the same thing everywhere.
 * Journals from before repeats carry none of these fields; every helper then says nothing,
 * so old runs render exactly as they did.
 */
import type { ExperimentRecord, JournalRecord, RunConfig, RunRef } from '../journal/journal';
import { bestEstimate, Measurements } from './measurements';
import { fmtNoise, measuresNoise, noiseRuleOf, standardError, type Direction } from './noise';
import { trustReport, type TrustCost, type TrustReport } from './trust-cost';

type Exp = Pick<ExperimentRecord, 'runs' | 'verdict' | 'same_as' | 'metric'>;

/** The runs that measured a metric (crashed repeats carry none). */
export function measuredRuns(e: Pick<ExperimentRecord, 'runs'>): RunRef[] {
  return (e.runs ?? []).filter(r => r.metric !== null);
}

/** `(3 runs)`, or '' for an experiment from before repeats. */
export function runCount(e: Pick<ExperimentRecord, 'runs'>): string {
  const k = measuredRuns(e).length;
  return e.runs ? `(${k} run${k === 1 ? '' : 's'})` : '';
}

/** `± 0.0023 (3 runs)` after an experiment's mean; '' when it has no runs list or no standard error. */
export function spread(e: Exp): string {
  if (!e.runs || e.metric === null) {
    return '';
  }
  const se = e.verdict?.se;
  const many = measuredRuns(e).length > 1;
  // One run under the strict rule has nothing to add to its metric.
  if ((se === null || se === undefined) && !many) {
    return '';
  }
  return `${se !== null && se !== undefined ? `± ${fmtNoise(se)} ` : ''}${runCount(e)}`;
}

/** One run in a few words: `0.991000 (seed 11)`, `crashed (seed 12)`, `earlier` marking reused runs. */
export function runWords(r: RunRef): string {
  const value = r.metric === null ? 'crashed' : r.metric.toFixed(6);
  return `${value} (seed ${r.seed}${r.own === false ? ', an earlier run of the same code' : ''})`;
}

/**
 * What a gain had to beat, from the verdict: `σ 0.0040 per run; a gain counts beyond 0.0113
 * (2σ of the difference, best over 3 runs)`. Null without a verdict.
 */
export function verdictWords(e: Pick<ExperimentRecord, 'verdict'>): string | null {
  const v = e.verdict;
  if (!v) {
    return null;
  }
  const spent = Object.entries(v.spent)
    .filter(([, k]) => k > 0)
    .map(([purpose, k]) => `${k} ${purpose}`);
  const cost = spent.length ? `; runs spent: ${spent.join(', ')}` : '';
  if (v.strict) {
    const why = v.sigma === 0 ? 'σ 0: a deterministic metric' : 'noise not measured';
    return `strict rule (${why}): any improvement counts${cost}`;
  }
  if (v.sigma === null) {
    return `noise not measured yet${cost}`;
  }
  const floor =
    v.floor !== null
      ? `; a gain counts beyond ${fmtNoise(v.floor)} (${fmtK(v.keep_sigma)}σ of the difference${v.best_runs ? `, best over ${v.best_runs} run${v.best_runs === 1 ? '' : 's'}` : ''})`
      : '';
  return `σ ${fmtNoise(v.sigma)} per run${floor}${cost}`;
}

/** `confirmed`, `not confirmed`, or null when the journal predates confirmation. */
export function confirmedWords(e: Pick<ExperimentRecord, 'verdict' | 'status'>): string | null {
  if (!e.verdict || e.status !== 'keep') {
    return null;
  }
  return e.verdict.confirmed ? 'confirmed' : 'not confirmed';
}

/** `same code as #4: its result is reported, nothing ran again`, or null. */
export function sameAsWords(e: Pick<ExperimentRecord, 'same_as'>): string | null {
  return e.same_as === undefined ? null : `same code as #${e.same_as}: its result is reported, nothing ran again`;
}

function fmtK(k: number): string {
  return Number.isInteger(k) ? String(k) : k.toFixed(1);
}

/** Whether a journal has anything of the noise-aware rule (runs or verdicts) to show. */
export function hasRepeats(records: JournalRecord[]): boolean {
  return records.some(
    r => r.type === 'run' || (r.type === 'experiment' && (r.runs !== undefined || r.verdict !== undefined)),
  );
}

export interface NoiseSummary {
  /** Pooled σ of one run and its degrees of freedom. */
  sigma: number | null;
  df: number;
  /** The best as its mean over every run of its code, with that mean's standard error. */
  best: { n: number; metric: number; runs: number; se: number | null } | null;
  trust: TrustReport;
}

/** σ, the best as mean ± se and the trust report of a journal's records. */
export function noiseSummary(records: JournalRecord[], direction: Direction): NoiseSummary {
  const m = Measurements.of(records);
  const { sigma, df } = m.sigma();
  const exps = records.filter((r): r is ExperimentRecord => r.type === 'experiment');
  const b = bestEstimate(exps, m);
  const best = b && { n: b.n, metric: b.metric, runs: b.runs, se: standardError(sigma, b.runs) };
  return { sigma, df, best, trust: trustReport(records, direction) };
}

/** `σ 0.0040 (4 df)`, or `σ not measured yet`. */
export function sigmaWords(s: Pick<NoiseSummary, 'sigma' | 'df'>): string {
  return s.sigma === null ? 'σ not measured yet' : `σ ${fmtNoise(s.sigma)} (${s.df} df)`;
}

/** `0.990000 ± 0.0023 (3 runs)`, the best as a mean. */
export function bestWords(best: NonNullable<NoiseSummary['best']>): string {
  const se = best.se !== null ? ` ± ${fmtNoise(best.se)}` : '';
  return `${best.metric.toFixed(6)}${se} (${best.runs} run${best.runs === 1 ? '' : 's'})`;
}

/** `5 of 12 runs on noise and confirmation`: what trust cost in runs. */
export function trustRunsWords(t: TrustReport): string {
  const p = t.byPurpose;
  const parts = [`${p.noise} noise`, `${p.confirm} confirmation`, `${p.best} re-measuring the best`];
  return `${t.extraRuns} of ${t.runs} runs on measurement and confirmation (${parts.join(', ')})`;
}

/** `1.2 accelerator-min and $0.0300 per 0.001 gained`, or `no gain yet`. */
export function perMilliWords(c: TrustCost): string {
  if (!c.perMilli) {
    return 'no gain yet';
  }
  return `${c.perMilli.acceleratorMin.toFixed(1)} accelerator-min and $${c.perMilli.dollars.toFixed(4)} per 0.001 gained`;
}

/** Per proposer (the baseline left out: it proposes nothing): `claude: 1.2 accelerator-min …`. */
export function perProposerWords(t: TrustReport): string[] {
  return t.byProposer.filter(p => p.proposer !== 'baseline').map(p => `${p.proposer}: ${perMilliWords(p)}`);
}

/**
 * σ and the rule in one line, as `autoresearch status` prints it after `noise:` and state.json
 * holds it: `σ 0.0041 per run (12 df); a keep must beat the best by 2 standard errors …`.
 * `config` is the run's (the last run_start's), undefined before one.
 */
export function noiseLineWords(sigma: number | null, df: number, config: RunConfig | undefined): string {
  const rule = config ? noiseRuleOf(config) : null;
  if (!rule || !measuresNoise(rule)) return 'not measured (noise_runs 1: the strict rule keeps any improvement)';
  if (sigma === null) return `not measured yet (the baseline runs ${rule.noiseRuns} times first)`;
  if (sigma === 0)
    return `σ 0 over ${df} repeat${df === 1 ? '' : 's'}: a deterministic metric, any improvement is kept`;
  return `σ ${fmtNoise(sigma)} per run (${df} df); a keep must beat the best by ${rule.keepSigma} standard errors of the difference, reproduced on ≥ 2 runs (up to ${1 + rule.confirmRuns})`;
}
