/**
 * The progress chart as a Vega-Lite v5 spec, which JupyterLab renders natively
 * (`application/vnd.vegalite.v5+json`): every experiment with a metric as a
 * point by number, kept ones highlighted and labelled, the running best as a
 * step line, crashes as crosses along the edge where the worse results lie.
 * Rejected and interrupted experiments never produced a metric and are left out.
 * Under the noise-aware rule an experiment's point is the mean of its runs: each run is
 * also drawn as a small dot, and the best carries a band of ±2 standard errors of its mean,
 * so a reader sees what the keep rule saw. Journals from before repeats get neither.
 */
import type { ExperimentRecord, JournalRecord } from './journal';
import type { Direction } from './keep';
import { bestTimeline } from './measurements';

export const VEGALITE_MIME = 'application/vnd.vegalite.v5+json';

export interface ChartOptions {
  metric: string;
  direction: Direction;
}

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
  /** The best's noise band, best ± 2·σ/√(its runs); only when a verdict measured σ. */
  best_lo?: number;
  best_hi?: number;
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

/** Status colours, shared by the Vega-Lite spec and the static SVG so the two look alike. */
export const COLORS = { keep: '#2e7d32', discard: '#9e9e9e', crash: '#c62828', best: '#2e7d32' } as const;

/** How long a kept experiment's label may be before it is cut with an ellipsis. */
export const LABEL_CHARS = 40;

/** How many of the latest kept experiments carry a label (the baseline always does). */
export const LABELLED_KEEPS = 8;

/** Cuts a description to a one-line label. */
export function shortLabel(text: string, max = LABEL_CHARS): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** The experiment records of a list that may hold a journal's other records too. */
function experimentsIn(records: readonly JournalRecord[]): ExperimentRecord[] {
  return records.filter((r): r is ExperimentRecord => r.type === 'experiment');
}

/**
 * The rows the chart plots, in experiment order, with the running best (and its band) filled in.
 * The best after each experiment is bestTimeline's (the rule the engine and state.json's best_path
 * follow): given a whole journal its estimates use every run; experiment records alone say the same.
 */
export function chartRows(records: readonly JournalRecord[]): ChartRow[] {
  const rows: ChartRow[] = [];
  const bestAfter = new Map(bestTimeline(records).map(b => [b.n, b.best]));
  let sigma: number | null = null;
  for (const r of experimentsIn(records).sort((a, b) => a.n - b.n)) {
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
      label: r.status === 'keep' ? shortLabel(r.description) : null,
    };
    if (best !== null && sigma) {
      const half = (BAND_SE * sigma) / Math.sqrt(bestRuns);
      row.best_lo = best - half;
      row.best_hi = best + half;
    }
    rows.push(row);
  }
  // A long run keeps hundreds of times: label the baseline and the latest keeps only, or the
  // labels pile into an unreadable block. Every point keeps its description in the tooltip.
  const kept = rows.filter(row => row.label !== null);
  for (const row of kept.slice(1, Math.max(1, kept.length - LABELLED_KEEPS))) {
    row.label = null;
  }
  return rows;
}

/** Every run of the experiments measured more than once (one run is its own mean: no dot). */
export function chartRuns(records: readonly JournalRecord[]): RunPoint[] {
  const points: RunPoint[] = [];
  for (const r of experimentsIn(records).sort((a, b) => a.n - b.n)) {
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

/** The Vega-Lite v5 spec of a run's progress. */
export function progressChart(records: readonly JournalRecord[], opts: ChartOptions): Record<string, unknown> {
  const rows = chartRows(records);
  const runs = chartRuns(records);
  const x = { field: 'n', type: 'quantitative', title: 'experiment', axis: { tickMinStep: 1, format: 'd' } };
  const y = {
    field: 'value',
    type: 'quantitative',
    title: `${opts.metric} (${opts.direction} is better)`,
    scale: { zero: false },
  };
  const color = {
    field: 'status',
    type: 'nominal',
    title: 'status',
    scale: { domain: ['keep', 'discard', 'crash'], range: [COLORS.keep, COLORS.discard, COLORS.crash] },
  };
  const tooltip = [
    { field: 'n', type: 'quantitative', title: '#' },
    { field: 'status', type: 'nominal' },
    { field: 'value', type: 'quantitative', title: opts.metric, format: '.6f' },
    { field: 'description', type: 'nominal' },
  ];
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    description: `Progress of ${opts.metric} over the experiments of an autoresearch run`,
    width: 640,
    height: 320,
    data: { values: rows },
    // The band and the run dots only when there is something to draw, so a journal from
    // before repeats gets the very spec it always did.
    layer: [
      ...(rows.some(r => r.best_lo !== undefined) ? [bandLayer(x, y)] : []),
      {
        // The running best: a step that moves only when an experiment is kept.
        transform: [{ filter: 'datum.best != null' }],
        mark: { type: 'line', interpolate: 'step-after', color: COLORS.best, strokeWidth: 2 },
        encoding: { x, y: { ...y, field: 'best' } },
      },
      ...(runs.length ? [runsLayer(runs, x, y, color, opts.metric)] : []),
      {
        transform: [{ filter: "datum.status !== 'crash'" }],
        mark: { type: 'point', filled: true },
        encoding: {
          x,
          y,
          color,
          size: { condition: { test: "datum.status === 'keep'", value: 90 }, value: 30 },
          opacity: { condition: { test: "datum.status === 'keep'", value: 1 }, value: 0.5 },
          tooltip,
        },
      },
      {
        transform: [{ filter: "datum.status === 'keep'" }],
        mark: { type: 'text', align: 'left', baseline: 'bottom', dx: 6, dy: -4, fontSize: 10 },
        encoding: { x, y, text: { field: 'label' } },
      },
      {
        // Crashes have no metric: pin them to the edge where worse results lie (the top when lower is better).
        transform: [{ filter: "datum.status === 'crash'" }],
        mark: { type: 'point', shape: 'cross', filled: true, size: 70 },
        encoding: { x, y: { value: opts.direction === 'lower' ? 0 : 'height' }, color, tooltip },
      },
    ],
  };
}

type Channel = Record<string, unknown>;

/** The best's noise band: what a gain had to get past, drawn behind everything. */
function bandLayer(x: Channel, y: Channel): Record<string, unknown> {
  return {
    name: 'noise band',
    transform: [{ filter: 'datum.best_lo != null' }],
    mark: { type: 'area', interpolate: 'step-after', color: COLORS.best, opacity: 0.15 },
    encoding: { x, y: { ...y, field: 'best_lo' }, y2: { field: 'best_hi' } },
  };
}

/** Each run as a small dot under its experiment's mean; reused runs fainter. */
function runsLayer(runs: RunPoint[], x: Channel, y: Channel, color: Channel, metric: string): Record<string, unknown> {
  return {
    name: 'runs',
    data: { values: runs },
    mark: { type: 'point', filled: true, size: 14 },
    encoding: {
      x,
      y: { ...y, field: 'metric' },
      color,
      opacity: { condition: { test: 'datum.own', value: 0.55 }, value: 0.25 },
      tooltip: [
        { field: 'n', type: 'quantitative', title: '#' },
        { field: 'k', type: 'quantitative', title: 'run' },
        { field: 'seed', type: 'quantitative' },
        { field: 'metric', type: 'quantitative', title: metric, format: '.6f' },
      ],
    },
  };
}
