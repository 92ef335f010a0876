/**
 * The noise the keep rule is aware of: the rule's settings (noiseRuleOf, the one place a run's
 * config becomes them, the strict rule included), σ pooled over repeated runs, and the standard
 * errors built from it. The decision itself is judge.ts's.
 */

/** Which way the metric improves. */
export type Direction = 'lower' | 'higher';

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

/** Whether the rule measures noise at all (`noise_runs` above 1); else it is the original's strict rule. */
export function measuresNoise(rule: Pick<NoiseRule, 'noiseRuns'>): boolean {
  return rule.noiseRuns > 1;
}

/** Whether the strict rule applies: no noise to measure, or none measured (σ 0: a deterministic metric). */
export function isStrict(rule: NoiseRule, sigma: number | null): boolean {
  return !measuresNoise(rule) || sigma === 0;
}

/** σ/√runs: the standard error of a mean over `runs` runs; null while σ is not measured. */
export function standardError(sigma: number, runs: number): number;
export function standardError(sigma: number | null, runs: number): number | null;
export function standardError(sigma: number | null, runs: number): number | null {
  return sigma === null ? null : sigma / Math.sqrt(runs);
}

/** σ·√(1/a + 1/b): the standard error of the difference of two means over `a` and `b` runs. */
export function differenceError(sigma: number, a: number, b: number): number {
  return sigma * Math.sqrt(1 / a + 1 / b);
}

/**
 * The floor a gain must clear: keep_sigma standard errors of the difference of a candidate's mean
 * over `candidateRuns` runs and the best's over `bestRuns`. The one place it is computed, so that
 * the judge's reasons and what the prompt tells the model are the same number for the same runs.
 */
export function keepFloor(sigma: number, keepSigma: number, candidateRuns: number, bestRuns: number): number {
  return keepSigma * differenceError(sigma, candidateRuns, Math.max(1, bestRuns));
}

/** `1 run vs 3`: the runs a floor was computed for, the candidate's then the best's. */
export function runsVs(candidateRuns: number, bestRuns: number): string {
  return `${candidateRuns} run${candidateRuns === 1 ? '' : 's'} vs ${bestRuns}`;
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

/** `2σ`, `2.5σ`: a number of standard errors. */
export function fmtSigmas(k: number): string {
  return `${Number.isInteger(k) ? k : k.toFixed(1)}σ`;
}
