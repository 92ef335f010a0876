/**
 * The progress chart as a Vega-Lite v5 spec, which JupyterLab renders natively
 * (`application/vnd.vegalite.v5+json`): every experiment with a metric as a
 * point by number, kept ones filled and labelled, discarded ones as rings, the running best as a
 * step line, crashes as crosses along the edge where the worse results lie.
 * Rejected and interrupted experiments never produced a metric and are left out.
 * Under the noise-aware rule an experiment's point is the mean of its runs: each run is
 * also drawn as a small dot, and the best carries a band of ±2 standard errors of its mean,
 * so a reader sees what the keep rule saw. Journals from before repeats get neither.
 *
 * The same spec serves the panel (given a theme read from JupyterLab's CSS variables and the
 * panel's width) and the exported notebook (neither: fixed colours, see COLORS).
 */
import type { ExperimentRecord, JournalRecord } from '../journal/journal';
import { standardError, type Direction } from '../rule/noise';
import { bestTimeline } from '../rule/measurements';
import { filterChartRows } from './chart-filter';
import { placeLabels } from './chart-labels';

export const VEGALITE_MIME = 'application/vnd.vegalite.v5+json';

export interface ChartOptions {
  metric: string;
  direction: Direction;
  /**
   * The panel's colours and font, read from JupyterLab's CSS variables when it draws. Without
   * one (an exported notebook, which cannot know the theme it will be read in) the spec keeps
   * COLORS and leaves text and axes to the Vega theme JupyterLab chooses.
   */
  theme?: ChartTheme;
  /** The width to fit, axes and legend included (the panel's); else the plot is 640 wide and the rest pads it. */
  width?: number;
  /**
   * The experiments the panel's filter shows (null or absent: all). The others draw no point or
   * label, but the running best, its band and the axes stay the whole run's, so the chart does
   * not jump as the filter changes and a crashes-only view still has the best line.
   */
  shown?: ReadonlySet<number> | null;
}

/** The colours and font of the panel's chart, each from a JupyterLab CSS variable (THEME_VARS). */
export interface ChartTheme {
  keep: string;
  discard: string;
  crash: string;
  best: string;
  /** Point labels and titles. */
  text: string;
  /** Tick and legend labels. */
  muted: string;
  grid: string;
  /** Axis lines, ticks and the plot's frame. */
  rule: string;
  font: string;
}

/**
 * Where each of the panel chart's colours comes from, so the light, dark and high-contrast
 * themes (and any other) colour it as they colour text, success and error everywhere else.
 */
export const THEME_VARS: Readonly<Record<keyof ChartTheme, string>> = {
  keep: '--jp-success-color1',
  best: '--jp-success-color1',
  // A ring in the secondary text colour: as legible as the axis labels in every theme, and told
  // from a keep by its shape, not only its colour.
  discard: '--jp-ui-font-color2',
  crash: '--jp-error-color1',
  text: '--jp-ui-font-color1',
  muted: '--jp-ui-font-color2',
  grid: '--jp-border-color2',
  rule: '--jp-border-color1',
  font: '--jp-ui-font-family',
};

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

/**
 * Status colours of the exported chart: its Vega-Lite spec and its SVG. An export cannot know the
 * theme it is read in: JupyterLab draws its Vega-Lite on white in a light theme and on
 * vega-themes' "dark" background (#333) in a dark one, GitHub draws the SVG on white. So each is
 * a mid tone with at least 3:1 contrast (WCAG's figure for graphics) against both white and #333
 * (test/chart.test.ts checks). The panel uses THEME_VARS instead.
 */
export const COLORS = { keep: '#3d9a40', discard: '#888888', crash: '#e0433a', best: '#3d9a40' } as const;

/** The panel's look where a CSS variable is unset (never in JupyterLab): the export's colours, mid-grey text. */
const FALLBACK_THEME: ChartTheme = {
  ...COLORS,
  text: '#757575',
  muted: '#757575',
  grid: '#8888884d',
  rule: '#888888',
  font: 'sans-serif',
};

/** The panel's theme from a reader of CSS variables (getComputedStyle(node).getPropertyValue). */
export function chartTheme(read: (cssVar: string) => string): ChartTheme {
  const theme = { ...FALLBACK_THEME };
  for (const key of Object.keys(THEME_VARS) as Array<keyof ChartTheme>) {
    theme[key] = read(THEME_VARS[key]).trim() || FALLBACK_THEME[key];
  }
  return theme;
}

/**
 * A discarded experiment's mark: a ring (a filled annulus, as an SVG path in Vega's unit square),
 * as legible as a keep's dot and told from it by shape as well as colour. A filled path rather
 * than an unfilled circle so the legend, which Vega-Lite draws filled, shows the same ring.
 */
export const RING = 'M-1,0A1,1 0 1,0 1,0A1,1 0 1,0 -1,0ZM-0.5,0A0.5,0.5 0 1,1 0.5,0A0.5,0.5 0 1,1 -0.5,0Z';

/** How far a crash's cross sits inside the plot's edge, in pixels, so none of it is cut by the frame. */
const CRASH_INSET = 8;

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

/** Above this many points the chart bins its discards and crashes (thinRows). */
export const MAX_POINTS = 1500;
/** How many bins a long run's discards (and its crashes) are drawn in: a few pixels each. */
export const BINS = 200;
/** A long run with more keeps than this draws them in bins too (the best line still steps at each). */
export const MAX_KEEP_POINTS = 300;

/**
 * A long run's rows as its chart draws them: every keep (the steps of the best line) as it is, and
 * the discards and the crashes of each of BINS runs of consecutive experiments as one row each
 * (their count, the nearest miss and the farthest, by `direction`; the crashes' count). Ten thousand rings in a
 * chart a thousand pixels wide are one grey blot that takes seconds to draw; two hundred bins
 * show where the misses lay and how close they came, in a fraction of it. Rows the filter hides
 * are left out of the bins; the last experiment stays (without a point) so the best line reaches
 * it. With more than MAX_KEEP_POINTS keeps, the keeps are binned as well: each stays as a row of
 * the best line and its band (`hidden`, no point), the labelled ones keep their points, and a
 * bin's point is its best keep. Runs of MAX_POINTS rows or fewer are returned as they are.
 */
export function thinRows(rows: readonly ChartRow[], direction: Direction, bins = BINS): ChartRow[] {
  if (rows.length <= MAX_POINTS || rows.length === 0) {
    return [...rows];
  }
  const first = rows[0].n;
  const last = rows[rows.length - 1].n;
  const width = Math.max(1, Math.ceil((last - first + 1) / bins));
  const out: ChartRow[] = [];
  // Keyed by bin and status as one number: ten thousand string keys cost more than the binning.
  const groups = new Map<number, ChartRow[]>();
  const STATUS_KEY = { keep: 0, discard: 1, crash: 2 } as const;
  const binKeeps = rows.filter(row => row.status === 'keep').length > MAX_KEEP_POINTS;
  for (const row of rows) {
    let binned = !row.hidden;
    if (row.status === 'keep') {
      // Every keep stays a row of the best line and its band; its point may be its bin's.
      binned = binKeeps && row.label === null && !row.hidden;
      out.push(binned ? { ...row, hidden: true, range: `#${row.n}` } : { ...row, range: `#${row.n}` });
    }
    if (binned) {
      const key = Math.floor((row.n - first) / width) * 3 + STATUS_KEY[row.status];
      const group = groups.get(key);
      if (group) {
        group.push(row);
      } else {
        groups.set(key, [row]);
      }
    }
  }
  for (const group of groups.values()) {
    const { status } = group[0];
    const lo = group[0].n;
    const hi = group[group.length - 1].n;
    const values = group.map(r => r.value).filter((v): v is number => v !== null);
    const [near, far] = direction === 'lower' ? [Math.min, Math.max] : [Math.max, Math.min];
    const range = lo === hi ? `#${lo}` : `#${lo}–#${hi}`;
    const what = status === 'crash' ? 'crashed' : status === 'keep' ? 'kept' : 'discarded';
    out.push({
      n: (lo + hi) / 2,
      status,
      value: status === 'crash' ? null : near(...values),
      ...(status === 'crash' ? {} : { value_far: far(...values) }),
      best: null,
      description: group.length === 1 ? group[0].description : `${group.length} ${what}, ${range}`,
      label: null,
      count: group.length,
      range,
    });
  }
  const end = rows[rows.length - 1];
  if (end.status !== 'keep') {
    // The best line runs on to the last experiment; the point itself is its bin's.
    out.push({ ...end, hidden: true, label: null, range: `#${end.n}` });
  }
  return out.sort((a, b) => a.n - b.n);
}

/**
 * The export's label colour: near-black or white, whichever stands out more from the background
 * the chart is drawn on. `background` is Vega's signal of it: white by default, #333 under the
 * dark theme JupyterLab's renderer gives vega-embed in a dark theme. (An unreadable background,
 * 'transparent', makes both contrasts NaN: near-black.)
 */
const EXPORT_TEXT = "contrast('#ffffff', background) > contrast('#212121', background) ? '#ffffff' : '#212121'";

/** The export's plot width; the panel fits the chart to its own width instead. */
const EXPORT_WIDTH = 640;
/**
 * The narrowest the panel's chart gets: below it, the chart scrolls in its own box rather than
 * squeezing the axes. A 760 px wide JupyterLab with its file browser open leaves it about 350.
 */
export const MIN_WIDTH = 280;
/** The plot's height, in pixels. */
const PLOT_HEIGHT = 320;
/** What the y axis (its extent, fixed below, and its title) and the padding take of the panel chart’s width, as Vega lays it out. */
const Y_AXIS_PX = 83;

/**
 * The Vega-Lite v5 spec of a run's progress.
 *
 * A run of more than MAX_POINTS points draws its discards and crashes in bins (thinRows): the
 * keeps, the best line, its band and both axes stay exact.
 *
 * Both scales have explicit domains and every layer is there only when it has rows to draw: a
 * layer whose filter leaves nothing makes Vega compute an empty extent and log
 * `Infinite extent for field "n"` (a run without a crash did, on every draw). Labels in the right
 * half of the chart run leftwards from their point and are cut to half its width, so the newest
 * one never runs past the right edge.
 *
 * Colours: with opts.theme (the panel) every colour is the theme's, axes and legend included,
 * on a transparent background. Without (the export) the status colours are COLORS, which read on
 * white and on dark, and axes are left to the Vega theme: JupyterLab's renderer passes vega-embed
 * `theme: 'dark'` in a dark theme (vega-themes' "dark": #333 background, white guides). The point
 * labels follow the background too (EXPORT_TEXT): Vega-Lite gives text marks a fixed black that
 * no theme overrides, which is how they came out black on dark grey.
 */
export function progressChart(records: readonly JournalRecord[], opts: ChartOptions): Record<string, unknown> {
  return chartSpec(chartRows(records), chartRuns(records), opts);
}

/** progressChart's spec from the rows and runs it plots (chartRows, chartRuns). */
export function chartSpec(
  chartRowsIn: readonly ChartRow[],
  allRuns: readonly RunPoint[],
  opts: ChartOptions,
): Record<string, unknown> {
  const shown = opts.shown ?? null;
  const allRows = chartRowsIn.map(r => (shown && !shown.has(r.n) ? { ...r, hidden: true as const } : r));
  // A long run: discards and crashes in bins, and only the keeps' own runs as dots (thinRows).
  const thinned = allRows.length > MAX_POINTS;
  const runs = filterChartRows(thinned ? allRuns.filter(r => r.status === 'keep') : allRuns, shown);
  const { theme } = opts;
  const colors = theme ?? COLORS;
  const width = opts.width === undefined ? EXPORT_WIDTH : Math.max(MIN_WIDTH, Math.floor(opts.width));
  const [nLo, nHi] = numberDomain(allRows);
  const [vLo, vHi] = valueDomain(allRows, allRuns);
  // The panel's width includes the y axis; the export's is the plot's own.
  const plotWidth = opts.width === undefined ? width : width - Y_AXIS_PX;
  // Half the plot, less the gap to the point: a label never needs more room than that.
  const labelLimit = Math.round(plotWidth / 2) - 12;
  const rows = placeLabels(thinned ? thinRows(allRows, opts.direction) : allRows, runs, {
    width: plotWidth,
    height: PLOT_HEIGHT,
    x: n => ((n - nLo) / (nHi - nLo)) * plotWidth,
    y: v => ((vHi - v) / (vHi - vLo)) * PLOT_HEIGHT,
    crashY: opts.direction === 'lower' ? CRASH_INSET : PLOT_HEIGHT - CRASH_INSET,
    limit: labelLimit,
  });
  const x = {
    field: 'n',
    type: 'quantitative',
    title: 'experiment',
    scale: { domain: [nLo, nHi], nice: false, zero: false },
    axis: { tickMinStep: 1, format: 'd' },
  };
  const y = {
    field: 'value',
    type: 'quantitative',
    title: `${opts.metric} (${opts.direction} is better)`,
    scale: { domain: [vLo, vHi], nice: false, zero: false },
    // Room between the rotated title and the tick labels (at the default 4 px they touched).
    axis: { titlePadding: 10, minExtent: 52, maxExtent: 52 },
  };
  const statuses = ['keep', 'discard', 'crash'];
  const color = {
    field: 'status',
    type: 'nominal',
    title: null,
    scale: { domain: statuses, range: [colors.keep, colors.discard, colors.crash] },
    legend: { orient: 'top' },
  };
  const shape = {
    field: 'status',
    type: 'nominal',
    title: null,
    // The legend shows each status as its points are drawn: a dot, a ring, a cross.
    scale: { domain: statuses, range: ['circle', RING, 'cross'] },
  };
  const tooltip = [
    // A bin's row stands for several experiments: its range, not its middle.
    thinned ? { field: 'range', type: 'nominal', title: '#' } : { field: 'n', type: 'quantitative', title: '#' },
    { field: 'status', type: 'nominal' },
    { field: 'value', type: 'quantitative', title: opts.metric, format: '.6f' },
    { field: 'description', type: 'nominal' },
  ];
  const any = (test: (r: ChartRow) => boolean) => rows.some(test);
  // The point and label layers draw what the filter shows; `datum.hidden` marks the rest.
  const anyShown = (test: (r: ChartRow) => boolean) => rows.some(r => !r.hidden && test(r));
  // Labels where placeLabels put them, clear of the marks: `labels left` are aligned left (they
  // run rightwards from their point), `labels right` run leftwards.
  const label = (side: 'left' | 'right'): Record<string, unknown> => ({
    name: `labels ${side}`,
    transform: [{ filter: `datum.label != null && !datum.hidden && datum.label_dx ${side === 'left' ? '>' : '<'} 0` }],
    mark: {
      type: 'text',
      align: side,
      baseline: 'middle',
      dx: { expr: 'datum.label_dx' },
      dy: { expr: 'datum.label_dy' },
      fontSize: 10,
      limit: labelLimit,
      ...(theme ? { color: theme.text, font: theme.font } : { color: { expr: EXPORT_TEXT } }),
    },
    encoding: { x, y, text: { field: 'label' } },
  });
  const layer: Array<Record<string, unknown>> = [
    ...(any(r => r.best_lo !== undefined) ? [bandLayer(x, y, colors.best)] : []),
    ...(any(r => r.best !== null)
      ? [
          {
            // The running best: a step that moves only when an experiment is kept.
            name: 'best',
            transform: [{ filter: 'datum.best != null' }],
            mark: { type: 'line', interpolate: 'step-after', color: colors.best, strokeWidth: 2 },
            encoding: { x, y: { ...y, field: 'best' } },
          },
        ]
      : []),
    ...(runs.length ? [runsLayer(runs, x, y, color, opts.metric)] : []),
    ...(thinned && anyShown(r => r.status === 'discard' && (r.count ?? 1) > 1)
      ? [
          {
            // Each bin's discards from the nearest miss (its ring) to the farthest.
            name: 'discard spread',
            transform: [{ filter: "datum.status === 'discard' && datum.count > 1" }],
            mark: { type: 'rule', color: colors.discard, opacity: 0.6, strokeWidth: 1 },
            encoding: { x, y, y2: { field: 'value_far' } },
          },
        ]
      : []),
    ...(anyShown(r => r.status === 'discard')
      ? [
          {
            name: 'discards',
            transform: [{ filter: "datum.status === 'discard' && !datum.hidden" }],
            mark: { type: 'point', filled: true, size: 70, opacity: 1 },
            encoding: { x, y, color, shape, tooltip },
          },
        ]
      : []),
    // The keeps' layer also when nothing has a value yet (no rows, or only crashes), for the axes:
    // its scales' domains are explicit, so an empty layer costs no warning.
    ...(anyShown(r => r.status === 'keep') || !anyShown(r => r.value !== null)
      ? [
          {
            name: 'keeps',
            transform: [{ filter: "datum.status === 'keep' && !datum.hidden" }],
            mark: { type: 'point', filled: true, size: 90, opacity: 1 },
            encoding: { x, y, color, shape, tooltip },
          },
        ]
      : []),
    ...(anyShown(r => r.label !== null && (r.label_dx ?? 0) > 0) ? [label('left')] : []),
    ...(anyShown(r => r.label !== null && (r.label_dx ?? 0) < 0) ? [label('right')] : []),
    ...(anyShown(r => r.status === 'crash')
      ? [
          {
            // Crashes have no metric: pin them inside the edge where worse results lie (the top when lower is better).
            name: 'crashes',
            transform: [{ filter: "datum.status === 'crash' && !datum.hidden" }],
            mark: { type: 'point', filled: true, size: 80, opacity: 1 },
            encoding: {
              x,
              y: { value: opts.direction === 'lower' ? CRASH_INSET : { expr: `height - ${CRASH_INSET}` } },
              color,
              shape,
              tooltip,
            },
          },
        ]
      : []),
  ];
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    description: `Progress of ${opts.metric} over the experiments of an autoresearch run`,
    width,
    height: PLOT_HEIGHT,
    // The panel's chart fits its width whole (axes, legend and labels inside it); the export's
    // plot keeps its size and the rest pads it.
    ...(opts.width === undefined ? {} : { autosize: { type: 'fit-x', contains: 'padding' } }),
    data: { values: rows },
    layer,
    ...(theme ? { config: themeConfig(theme) } : {}),
  };
}

/** Vega-Lite config for the panel: every colour the theme's, over the panel's own background. */
function themeConfig(theme: ChartTheme): Record<string, unknown> {
  return {
    background: 'transparent',
    font: theme.font,
    view: { stroke: theme.rule },
    axis: {
      labelColor: theme.muted,
      titleColor: theme.text,
      domainColor: theme.rule,
      tickColor: theme.rule,
      gridColor: theme.grid,
    },
    legend: { labelColor: theme.muted, titleColor: theme.text },
    title: { color: theme.text },
    // vega-embed merges its dark theme under this config; these override its white guide text.
    style: { 'guide-label': { fill: theme.muted }, 'guide-title': { fill: theme.text } },
  };
}

type Channel = Record<string, unknown>;

/** The best's noise band: what a gain had to get past, drawn behind everything. */
function bandLayer(x: Channel, y: Channel, fill: string): Record<string, unknown> {
  return {
    name: 'noise band',
    transform: [{ filter: 'datum.best_lo != null' }],
    mark: { type: 'area', interpolate: 'step-after', color: fill, opacity: 0.15 },
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

/**
 * A made-up long run's spec for getting Vega ready before a panel draws (src/lab/panel/warm-up.ts):
 * MAX_POINTS + 100 rows of keeps, discards and crashes with a best line, its band, labels and
 * runs, so that it is thinned and has every layer a real chart may have. Never shown.
 */
export function warmUpSpec(opts: Omit<ChartOptions, 'shown'>): Record<string, unknown> {
  const rows: ChartRow[] = [];
  const runs: RunPoint[] = [];
  let best: number | null = null;
  const count = MAX_POINTS + 100;
  const lastKeep = Math.floor((count - 1) / 23) * 23;
  for (let n = 0; n < count; n++) {
    const status = n % 97 === 5 ? 'crash' : n % 23 === 0 ? 'keep' : 'discard';
    // The labelled two (the first keep and the last) lie apart from the cloud, so placeLabels finds
    // room for both: the first's label runs rightwards, the last's leftwards.
    const labelled = n === 0 || n === lastKeep;
    const apart = n === 0 ? 1.2 : 0.7;
    const value = status === 'crash' ? null : labelled ? apart : 1 - n / 1e4 + (n % 7) / 100;
    if (status === 'keep' && value !== null) {
      best = best === null ? value : Math.min(best, value);
      runs.push(
        { n, status, k: 1, seed: 1, metric: value, own: true },
        { n, status, k: 2, seed: 2, metric: value + 0.01, own: true },
      );
    }
    const row: ChartRow = {
      n,
      status,
      value,
      best,
      description: `experiment ${n}`,
      label: labelled ? `#${n}` : null,
    };
    rows.push(best === null ? row : { ...row, best_lo: best - 0.01, best_hi: best + 0.01 });
  }
  return chartSpec(rows, runs, opts);
}
