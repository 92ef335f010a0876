/**
 * Near-misses: experiments that looked better than the best they were judged against but did not
 * clear the keep rule's floor ("within noise"). They are where a search that stalls goes back to:
 * re-tested on a best that moved since, combined with another change that helped, or branched
 * from on a plateau. Their gain is given in today's terms — the pooled σ as it is now, not the σ
 * the decision was made with, which early in a run is measured on a handful of runs.
 */
import type { ExperimentRecord } from '../journal/journal';
import { differenceError, type Direction } from './noise';

export interface NearMiss {
  record: ExperimentRecord;
  /** How much better than the best before it, in the metric's units (> 0 is better, either direction). */
  gain: number;
  /** The gain in standard errors of the difference, with today's σ; null when σ is unknown or 0. */
  z: number | null;
}

/** Runs an experiment's mean is made of (a record from before repeats had one). */
export function runsOf(r: ExperimentRecord): number {
  return Math.max(1, r.runs?.filter(x => x.metric !== null).length ?? 1);
}

/** The gain of an experiment over the best before it (> 0: better), or null when it has none. */
export function gainOf(r: ExperimentRecord, direction: Direction): number | null {
  if (r.delta === null || r.metric === null) return null;
  return direction === 'lower' ? -r.delta : r.delta;
}

/**
 * The near-misses of a run, the most promising first: discarded experiments with a commit whose
 * mean beat the best before them. Ranked by z (today's σ) when σ is known, else by raw gain.
 */
export function nearMisses(
  history: readonly ExperimentRecord[],
  direction: Direction,
  sigma: number | null,
): NearMiss[] {
  const out: NearMiss[] = [];
  for (const r of history) {
    if (r.status !== 'discard' || r.commit === null || r.same_as !== undefined) continue;
    const gain = gainOf(r, direction);
    if (gain === null || gain <= 0) continue;
    const bestRuns = Math.max(1, r.verdict?.best_runs ?? 1);
    const z = sigma ? gain / differenceError(sigma, runsOf(r), bestRuns) : null;
    out.push({ record: r, gain, z });
  }
  return out.sort((a, b) => (b.z ?? b.gain) - (a.z ?? a.gain) || a.record.n - b.record.n);
}
