/**
 * The progress chart as a Vega-Lite v5 spec, which JupyterLab renders natively
 * (`application/vnd.vegalite.v5+json`): every experiment with a metric as a
 * point by number, kept ones highlighted and labelled, the running best as a
 * step line, crashes as crosses along the edge where the worse results lie.
 * Rejected and interrupted experiments never produced a metric and are left out.
 */
import type { ExperimentRecord } from './journal';
import type { Direction } from './keep';

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
}

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

/** The rows the chart plots, in experiment order, with the running best filled in. */
export function chartRows(records: ExperimentRecord[]): ChartRow[] {
  const rows: ChartRow[] = [];
  let best: number | null = null;
  for (const r of [...records].sort((a, b) => a.n - b.n)) {
    if (r.status === 'rejected' || r.status === 'interrupted') {
      continue;
    }
    // The engine's rule (bestOf): the best is the last kept result, so the line follows keeps only.
    if (r.status === 'keep' && r.metric !== null) {
      best = r.metric;
    }
    const value = r.status === 'crash' ? null : r.metric;
    if (r.status !== 'crash' && value === null) {
      continue;
    }
    rows.push({ n: r.n, status: r.status, value, best, description: r.description, label: r.status === 'keep' ? shortLabel(r.description) : null });
  }
  // A long run keeps hundreds of times: label the baseline and the latest keeps only, or the
  // labels pile into an unreadable block. Every point keeps its description in the tooltip.
  const kept = rows.filter(row => row.label !== null);
  for (const row of kept.slice(1, Math.max(1, kept.length - LABELLED_KEEPS))) {
    row.label = null;
  }
  return rows;
}

/** The Vega-Lite v5 spec of a run's progress. */
export function progressChart(records: ExperimentRecord[], opts: ChartOptions): Record<string, unknown> {
  const rows = chartRows(records);
  const x = { field: 'n', type: 'quantitative', title: 'experiment', axis: { tickMinStep: 1, format: 'd' } };
  const y = { field: 'value', type: 'quantitative', title: `${opts.metric} (${opts.direction} is better)`, scale: { zero: false } };
  const color = {
    field: 'status',
    type: 'nominal',
    title: 'status',
    scale: { domain: ['keep', 'discard', 'crash'], range: [COLORS.keep, COLORS.discard, COLORS.crash] }
  };
  const tooltip = [
    { field: 'n', type: 'quantitative', title: '#' },
    { field: 'status', type: 'nominal' },
    { field: 'value', type: 'quantitative', title: opts.metric, format: '.6f' },
    { field: 'description', type: 'nominal' }
  ];
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    description: `Progress of ${opts.metric} over the experiments of an autoresearch run`,
    width: 640,
    height: 320,
    data: { values: rows },
    layer: [
      {
        // The running best: a step that moves only when an experiment is kept.
        transform: [{ filter: 'datum.best != null' }],
        mark: { type: 'line', interpolate: 'step-after', color: COLORS.best, strokeWidth: 2 },
        encoding: { x, y: { ...y, field: 'best' } }
      },
      {
        transform: [{ filter: "datum.status !== 'crash'" }],
        mark: { type: 'point', filled: true },
        encoding: {
          x,
          y,
          color,
          size: { condition: { test: "datum.status === 'keep'", value: 90 }, value: 30 },
          opacity: { condition: { test: "datum.status === 'keep'", value: 1 }, value: 0.5 },
          tooltip
        }
      },
      {
        transform: [{ filter: "datum.status === 'keep'" }],
        mark: { type: 'text', align: 'left', baseline: 'bottom', dx: 6, dy: -4, fontSize: 10 },
        encoding: { x, y, text: { field: 'label' } }
      },
      {
        // Crashes have no metric: pin them to the edge where worse results lie (the top when lower is better).
        transform: [{ filter: "datum.status === 'crash'" }],
        mark: { type: 'point', shape: 'cross', filled: true, size: 70 },
        encoding: { x, y: { value: opts.direction === 'lower' ? 0 : 'height' }, color, tooltip }
      }
    ]
  };
}
