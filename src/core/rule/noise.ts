/**
 * The keep rule, aware of noise. On one slide:
 *
 *  1. **σ, the noise of one run**: the pooled standard deviation of every code state measured
 *     more than once (the baseline runs `noise_runs` times to start it; every repeat refines it).
 *  2. **The bar** is the best's *mean* over all its runs, never one lucky draw.
 *  3. **The floor** a gain must clear: `keep_sigma × σ × √(1/n_candidate + 1/n_best)`, i.e.
 *     keep_sigma standard errors of the difference of the two means (2 by default: about a 2 %
 *     chance that pure noise clears it, per look).
 *  4. After each run of a candidate, `gain = best mean − candidate mean` (lower is better):
 *     - gain ≤ 0: **discard** at once (no repeats spent on losers);
 *     - gain > floor, on at least two runs of the candidate: **keep** (a keep is always reproduced);
 *     - otherwise **run again** — the side with fewer runs, the candidate on a tie — until the
 *       candidate has `1 + confirm_runs` runs; then **discard**: within noise.
 *
 * `noise_runs: 1` (no noise measured) and a measured σ of 0 (a deterministic metric) are the
 * original's strict rule: any improvement is kept, on one run.
 */
import type { Direction } from './keep';

export interface NoiseRule {
  direction: Direction;
  /** Runs of the baseline before the first proposal; 1 = the strict rule. */
  noiseRuns: number;
  /** Standard errors of the difference a gain must exceed. */
  keepSigma: number;
  /** Extra runs a promising candidate may get before the decision. */
  confirmRuns: number;
}

export const DEFAULT_NOISE_RUNS = 3;
export const DEFAULT_KEEP_SIGMA = 2;
export const DEFAULT_CONFIRM_RUNS = 2;

/** The rule a run config asks for; a journal from before the rule existed is strict. */
export function noiseRuleOf(config: {
  direction: Direction;
  noise_runs?: number;
  keep_sigma?: number;
  confirm_runs?: number;
}): NoiseRule {
  return {
    direction: config.direction,
    noiseRuns: config.noise_runs ?? 1,
    keepSigma: config.keep_sigma ?? DEFAULT_KEEP_SIGMA,
    confirmRuns: config.confirm_runs ?? DEFAULT_CONFIRM_RUNS,
  };
}

export interface DecisionInput {
  /** The candidate's metrics so far (at least one). */
  candidate: number[];
  /** The best's metrics (all its runs). */
  best: number[];
  /** Pooled σ of one run; null while no code has been measured twice. */
  sigma: number | null;
  rule: NoiseRule;
}

export interface Decision {
  action: 'keep' | 'discard' | 'run-candidate' | 'run-best';
  /** In words, with the numbers: `within noise (−0.0040; floor 0.0113 at 2σ)`. */
  reason: string;
  mean: number;
  bestMean: number;
  /** Candidate mean − best mean (negative is better when lower is better). */
  delta: number;
  /** Standard error of the candidate's mean; null under the strict rule. */
  se: number | null;
  floor: number | null;
  strict: boolean;
}

/** Mean of a non-empty list. */
export function mean(values: number[]): number {
  return values.reduce((s, v) => s + v, 0) / values.length;
}

/**
 * Pooled standard deviation over groups of repeated measurements of the same code:
 * √(Σ squared deviations from each group's mean ÷ Σ (n − 1)). Null with no group of two.
 */
export function pooledSigma(groups: number[][]): { sigma: number | null; df: number } {
  let squares = 0;
  let df = 0;
  for (const g of groups) {
    if (g.length < 2) continue;
    const m = mean(g);
    squares += g.reduce((s, v) => s + (v - m) ** 2, 0);
    df += g.length - 1;
  }
  return { sigma: df ? Math.sqrt(squares / df) : null, df };
}

/** Whether the strict rule applies: no noise to measure, or none measured. */
export function isStrict(rule: NoiseRule, sigma: number | null): boolean {
  return rule.noiseRuns <= 1 || sigma === 0;
}

/** Keep, discard, or which side to run again — a pure function of the runs so far. */
export function decide({ candidate, best, sigma, rule }: DecisionInput): Decision {
  const m = mean(candidate);
  const mb = mean(best);
  const delta = m - mb;
  const gain = rule.direction === 'lower' ? -delta : delta;
  const base = { mean: m, bestMean: mb, delta };
  if (isStrict(rule, sigma)) {
    const why = rule.noiseRuns <= 1 ? 'strict rule' : 'deterministic metric';
    return gain > 0
      ? {
          ...base,
          action: 'keep',
          reason: `beats the best (${signed(delta)}; ${why})`,
          se: null,
          floor: null,
          strict: true,
        }
      : {
          ...base,
          action: 'discard',
          reason: `not better than the best (${signed(delta)}; ${why})`,
          se: null,
          floor: null,
          strict: true,
        };
  }
  const nc = candidate.length;
  const nb = best.length;
  const maxRuns = 1 + rule.confirmRuns;
  const next = nb < nc && nb < maxRuns ? 'run-best' : 'run-candidate';
  if (sigma === null) {
    // Nothing measured twice yet (a best from before repeats): one more run tells σ.
    if (gain <= 0) {
      return {
        ...base,
        action: 'discard',
        reason: `not better than the best (${signed(delta)})`,
        se: null,
        floor: null,
        strict: false,
      };
    }
    if (nc >= maxRuns && nb >= maxRuns) {
      return {
        ...base,
        action: 'discard',
        reason: `noise not measured after ${nc} runs (${signed(delta)})`,
        se: null,
        floor: null,
        strict: false,
      };
    }
    return {
      ...base,
      action: next,
      reason: `looks better (${signed(delta)}); measuring the noise`,
      se: null,
      floor: null,
      strict: false,
    };
  }
  const se = sigma / Math.sqrt(nc);
  const floor = rule.keepSigma * sigma * Math.sqrt(1 / nc + 1 / nb);
  const against = `${signed(delta)}; floor ${fmtNoise(floor)} at ${fmtSigmas(rule.keepSigma)}`;
  const common = { ...base, se, floor, strict: false };
  if (gain <= 0) {
    return { ...common, action: 'discard', reason: `not better (${against})` };
  }
  if (gain > floor && (nc >= 2 || rule.confirmRuns === 0)) {
    return { ...common, action: 'keep', reason: `beats the noise (${against}, ${nc} runs)` };
  }
  if (nc >= maxRuns) {
    return { ...common, action: 'discard', reason: `within noise (${against})` };
  }
  const what = gain > floor ? 'beats the floor once; confirming' : 'looks better but within noise; confirming';
  return { ...common, action: next, reason: `${what} (${against})` };
}

/** A signed metric difference with a true minus sign, e.g. −0.0040. */
export function signed(x: number): string {
  const s = fmtNoise(Math.abs(x));
  return x < 0 ? `−${s}` : `+${s}`;
}

/** A small non-negative quantity (σ, a floor, a difference) with enough digits to read. */
export function fmtNoise(x: number): string {
  if (x === 0) return '0';
  return x >= 0.001 ? x.toFixed(4) : x.toPrecision(2);
}

function fmtSigmas(k: number): string {
  return `${Number.isInteger(k) ? k : k.toFixed(1)}σ`;
}
