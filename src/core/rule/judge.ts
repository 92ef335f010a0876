/**
 * The judge: every keep / discard / run-again decision of a run is taken here, by one pure
 * function of the runs measured so far (the engine only gathers runs and records them). On one slide:
 *
 *  1. **σ, the noise of one run**: the pooled standard deviation of every code state measured
 *     more than once (the baseline runs `noise_runs` times to start it; every repeat refines it).
 *  2. **The bar** is the best's *mean* over all its runs, never one lucky draw.
 *  3. **The floor** a gain must clear (keepFloor): `keep_sigma × σ × √(1/n_candidate + 1/n_best)`, i.e.
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
import type { Measurements } from './measurements';
import {
  fmtNoise,
  fmtSigmas,
  isStrict,
  keepFloor,
  mean,
  measuresNoise,
  runsVs,
  signed,
  standardError,
  type NoiseRule,
} from './noise';

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
  /** In words, with the numbers: `within noise (−0.0040; floor 0.0113 at 2σ, 3 runs vs 3)`. */
  reason: string;
  mean: number;
  bestMean: number;
  /** Candidate mean − best mean (negative is better when lower is better). */
  delta: number;
  /** Standard error of the candidate's mean; null under the strict rule. */
  se: number | null;
  floor: number | null;
  strict: boolean;
  /** The best's runs the bar is the mean of (0 for the baseline, which has no bar). */
  bestRuns: number;
}

/** Keep, discard, or which side to run again — a pure function of the runs so far. */
export function judge({ candidate, best, sigma, rule }: DecisionInput): Decision {
  const m = mean(candidate);
  const mb = mean(best);
  const delta = m - mb;
  const gain = rule.direction === 'lower' ? -delta : delta;
  const base = { mean: m, bestMean: mb, delta, bestRuns: best.length };
  if (isStrict(rule, sigma)) {
    const why = measuresNoise(rule) ? 'deterministic metric' : 'strict rule';
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
  const se = standardError(sigma, nc);
  const floor = keepFloor(sigma, rule.keepSigma, nc, nb);
  // The runs the floor is for are said, so that it reads the same as the prompt's (keepFloor both).
  const against = `${signed(delta)}; floor ${fmtNoise(floor)} at ${fmtSigmas(rule.keepSigma)}, ${runsVs(nc, nb)}`;
  const common = { ...base, se, floor, strict: false };
  if (gain <= 0) {
    return { ...common, action: 'discard', reason: `not better (${against})` };
  }
  if (gain > floor && (nc >= 2 || rule.confirmRuns === 0)) {
    return { ...common, action: 'keep', reason: `beats the noise (${against})` };
  }
  if (nc >= maxRuns) {
    return { ...common, action: 'discard', reason: `within noise (${against})` };
  }
  const what = gain > floor ? 'beats the floor once; confirming' : 'looks better but within noise; confirming';
  return { ...common, action: next, reason: `${what} (${against})` };
}

/**
 * The judge on a code state against the best as the measurements stand: every run of both, and
 * σ pooled over all. A best from before runs were journaled has none: its recorded metric is the bar.
 */
export function judgeAgainstBest(
  m: Measurements,
  state: string,
  best: { state: string; metric: number },
  rule: NoiseRule,
): Decision {
  const bestValues = m.values(best.state);
  return judge({
    candidate: m.values(state),
    best: bestValues.length ? bestValues : [best.metric],
    sigma: m.sigma().sigma,
    rule,
  });
}

/** The baseline, once its noise runs are done: kept as the reference every later experiment is judged against. */
export function judgeBaseline(values: number[], sigma: number | null, rule: NoiseRule): Decision {
  const reason =
    values.length > 1
      ? `the reference: mean of ${values.length} runs${sigma !== null ? `, σ ${fmtNoise(sigma)}` : ''}`
      : 'the reference';
  return {
    action: 'keep',
    reason,
    mean: mean(values),
    bestMean: NaN,
    delta: 0,
    se: standardError(sigma, values.length),
    floor: null,
    strict: isStrict(rule, sigma),
    bestRuns: 0,
  };
}
