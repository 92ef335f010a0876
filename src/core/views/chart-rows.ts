/**
 * What the progress chart plots, from a journal: one row per experiment with a metric (its mean
 * under the noise-aware rule) or a crash, the running best and its noise band, and the runs of
 * experiments measured more than once; and the extent of both axes.
 */
import type { ExperimentRecord, JournalRecord } from '../journal/journal';
import { bestTimeline } from '../rule/measurements';
import { standardError } from '../rule/noise';

/** One experiment as the chart plots it. */
export interface ChartRow {
  n: number;
  status: 'keep' | 'discard' | 'crash';
  /** The metric; null for a crash. */
  value: number | null;
  /** The best kept metric after this experiment (the step line); null before the first keep. */
  best: number | null;
  description: string;
  /** A short label for kept experiments, null for the rest. */
  label: string | null;
  /** Where the label sits from its point, in pixels (placeLabels, ./chart-labels.ts); set in the spec's rows only. */
  label_dx?: number;
  label_dy?: number;
  /** The best's noise band, best ± 2·σ/√(its runs); only when a verdict measured σ. */
  best_lo?: number;
  best_hi?: number;
  /** Left out by the panel's filter (ChartOptions.shown): no point or label of its own. */
  hidden?: true;
  /**
   * A long run's chart (more than MAX_POINTS points) draws its discards and crashes in bins of
   * consecutive experiments: such a row stands for `count` of them, numbered `range`, at their
   * middle; `value` is the nearest miss among them and `value_hi` the farthest.
   */
  count?: number;
  value_far?: number;
  /** The experiment numbers a row stands for, as the tooltip shows them ("#120–#171", or "#7"). */
  range?: string;
}

/** One run of an experiment measured more than once (the small dots). */
export interface RunPoint {
  n: number;
  status: 'keep' | 'discard' | 'crash';
  k: number;
  seed: number;
  metric: number;
  /** False for an earlier experiment's run of the same code, reused. */
  own: boolean;
}

/** Standard errors either side of the best's mean the band covers (about a 95 % interval). */
export const BAND_SE = 2;

/** How long a kept experiment's label may be before it is cut with an ellipsis. */
export const LABEL_CHARS = 40;

/** How many of the latest kept experiments carry a label (the baseline always does). */
export const LABELLED_KEEPS = 8;

/** Cuts a description to a one-line label. */
export function shortLabel(text: string, max = LABEL_CHARS): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/**
 * The experiment records of a list that may hold a journal's other records too, by number. A
 * journal's are in order but for workers finishing out of turn, so they are sorted only when not.
 */
function experimentsIn(records: readonly JournalRecord[]): ExperimentRecord[] {
  const experiments = records.filter((r): r is ExperimentRecord => r.type === 'experiment');
  const sorted = experiments.every((r, i) => i === 0 || experiments[i - 1].n <= r.n);
  return sorted ? experiments : experiments.sort((a, b) => a.n - b.n);
}

/**
 * The rows the chart plots, in experiment order, with the running best (and its band) filled in.
 * The best after each experiment is bestTimeline's (the rule the engine and state.json's best
 * follow): given a whole journal its estimates use every run; experiment records alone say the same.
 */
export function chartRows(records: readonly JournalRecord[]): ChartRow[] {
  const rows: ChartRow[] = [];
  const bestAfter = new Map(bestTimeline(records).map(b => [b.n, b.best]));
  let sigma: number | null = null;
  for (const r of experimentsIn(records)) {
    if (r.status === 'rejected' || r.status === 'interrupted') {
      continue;
    }
    if (r.verdict) {
      sigma = r.verdict.sigma;
    }
    const estimate = bestAfter.get(r.n) ?? null;
    const best = estimate?.metric ?? null;
    const bestRuns = estimate?.runs ?? 1;
    const value = r.status === 'crash' ? null : r.metric;
    if (r.status !== 'crash' && value === null) {
      continue;
    }
    const row: ChartRow = {
      n: r.n,
      status: r.status,
      value,
      best,
      description: r.description,
      label: null, // the labelled keeps get theirs below
    };
    if (best !== null && sigma) {
      const half = BAND_SE * standardError(sigma, bestRuns);
      row.best_lo = best - half;
      row.best_hi = best + half;
    }
    rows.push(row);
  }
  // A long run keeps hundreds of times: label the baseline and the latest keeps only, or the
  // labels pile into an unreadable block. Every point keeps its description in the tooltip.
  const kept = rows.filter(row => row.status === 'keep');
  for (const row of [...kept.slice(0, 1), ...kept.slice(Math.max(1, kept.length - LABELLED_KEEPS))]) {
    row.label = shortLabel(row.description);
  }
  return rows;
}

/** Every run of the experiments measured more than once (one run is its own mean: no dot). */
export function chartRuns(records: readonly JournalRecord[]): RunPoint[] {
  const points: RunPoint[] = [];
  for (const r of experimentsIn(records)) {
    if ((r.runs?.length ?? 0) < 2) {
      continue; // most of a long run: nothing to filter
    }
    const measured = (r.runs ?? []).filter(run => run.metric !== null);
    if (measured.length < 2 || (r.status !== 'keep' && r.status !== 'discard')) {
      continue;
    }
    for (const run of measured) {
      points.push({
        n: r.n,
        status: r.status,
        k: run.k,
        seed: run.seed,
        metric: run.metric as number,
        own: run.own !== false,
      });
    }
  }
  return points;
}

/**
 * The range of metric values the chart shows: every mean, run, best and band edge, padded 5 %
 * so no point sits on the frame (a flat history gets a band of its own). Shared with the SVG.
 */
export function valueDomain(rows: readonly ChartRow[], runs: readonly RunPoint[]): [number, number] {
  // One pass, no arrays: a long run's chart calls this on ten thousand rows at every draw.
  let lo = Infinity;
  let hi = -Infinity;
  const take = (v: number | null | undefined) => {
    if (v !== null && v !== undefined && Number.isFinite(v)) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
  };
  for (const r of rows) {
    take(r.value);
    take(r.best);
    take(r.best_lo);
    take(r.best_hi);
  }
  for (const r of runs) {
    take(r.metric);
  }
  if (lo === Infinity) {
    return [0, 1];
  }
  const pad = hi > lo ? (hi - lo) * 0.05 : Math.abs(hi) * 0.01 || 1;
  return [lo - pad, hi + pad];
}

/** The experiment numbers the chart shows, half a step beyond the first and the last point. */
export function numberDomain(rows: readonly ChartRow[]): [number, number] {
  if (rows.length === 0) {
    return [-0.5, 0.5];
  }
  const ns = rows.map(r => r.n);
  return [Math.min(...ns) - 0.5, Math.max(...ns) + 0.5];
}
