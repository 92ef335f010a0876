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
import type { JournalRecord } from '../journal/journal';
import type { Direction } from '../rule/noise';
import { filterChartRows } from './chart-filter';
import { placeLabels } from './chart-labels';
import { chartRows, chartRuns, numberDomain, valueDomain, type ChartRow, type RunPoint } from './chart-rows';
import { COLORS, themeConfig, type ChartTheme } from './chart-theme';
import { MAX_POINTS, thinRows } from './chart-thin';

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

/**
 * A discarded experiment's mark: a ring (a filled annulus, as an SVG path in Vega's unit square),
 * as legible as a keep's dot and told from it by shape as well as colour. A filled path rather
 * than an unfilled circle so the legend, which Vega-Lite draws filled, shows the same ring.
 */
export const RING = 'M-1,0A1,1 0 1,0 1,0A1,1 0 1,0 -1,0ZM-0.5,0A0.5,0.5 0 1,1 0.5,0A0.5,0.5 0 1,1 -0.5,0Z';

/** How far a crash's cross sits inside the plot's edge, in pixels, so none of it is cut by the frame. */
const CRASH_INSET = 8;

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
