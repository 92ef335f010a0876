/** The progress chart: the Vega-Lite spec JupyterLab renders and the static SVG exports carry. */
import * as vega from 'vega';
import * as vegaLite from 'vega-lite';
import { describe, expect, it } from 'vitest';
import { progressChart, RING, VEGALITE_MIME, warmUpSpec, type ChartOptions } from '../src/core/views/chart';
import { BINS, MAX_KEEP_POINTS, MAX_POINTS, thinRows } from '../src/core/views/chart-thin';
import { chartTheme, COLORS, THEME_VARS, type ChartTheme } from '../src/core/views/chart-theme';
import {
  BAND_SE,
  chartRows,
  chartRuns,
  LABELLED_KEEPS,
  numberDomain,
  shortLabel,
  valueDomain,
  type ChartRow,
} from '../src/core/views/chart-rows';
import { niceTicks, progressChartSvg } from '../src/core/views/chart-svg';
import { LABEL_CHAR_PX, labelBox, placeLabels } from '../src/core/views/chart-labels';
import type { ExperimentRecord } from '../src/core/journal/journal';
import { noisyExperiments } from './helpers/noisy-journal';
import { record } from './helpers/records';

/** #0 baseline 1.0, #1 discard, #2 keep 0.98, #3 crash, #4 rejected, #5 interrupted, #6 keep 0.97, #7 discard. */
function run(): ExperimentRecord[] {
  return [
    record(0, { status: 'keep', metric: 1.0 }),
    record(1, { status: 'discard', metric: 1.01 }),
    record(2, { status: 'keep', metric: 0.98, description: 'kept <b>two</b> & "more"' }),
    record(3, { status: 'crash' }),
    record(4, { status: 'rejected' }),
    record(5, { status: 'interrupted', metric: null }),
    record(6, { status: 'keep', metric: 0.97 }),
    record(7, { status: 'discard', metric: 0.99 }),
  ];
}

interface Layer {
  name?: string;
  data?: { values: unknown[] };
  transform?: Array<{ filter: string }>;
  mark: Record<string, unknown>;
  encoding: Record<string, Record<string, unknown>>;
}

describe('chartRows', () => {
  it('plots keeps, discards and crashes with the running best; rejected and interrupted are left out', () => {
    const rows = chartRows(run());
    expect(rows.map(r => r.n)).toEqual([0, 1, 2, 3, 6, 7]);
    expect(rows.map(r => r.best)).toEqual([1.0, 1.0, 0.98, 0.98, 0.97, 0.97]);
    expect(rows.find(r => r.n === 3)).toMatchObject({ status: 'crash', value: null });
    expect(rows.filter(r => r.label !== null).map(r => r.n)).toEqual([0, 2, 6]);
  });

  it('labels the baseline and only the latest keeps of a long run', () => {
    const many = Array.from({ length: 40 }, (_, n) => record(n, { status: 'keep', metric: 1 - n * 0.001 }));
    const labelled = chartRows(many)
      .filter(r => r.label !== null)
      .map(r => r.n);
    expect(labelled).toEqual([0, ...Array.from({ length: LABELLED_KEEPS }, (_, i) => 40 - LABELLED_KEEPS + i)]);
    expect(chartRows(many).every(r => r.description.length > 0)).toBe(true);
  });

  it('labels are one line and cut', () => {
    expect(shortLabel('a\n  b')).toBe('a b');
    expect(shortLabel('x'.repeat(100))).toHaveLength(40);
    expect(shortLabel('x'.repeat(100)).endsWith('…')).toBe(true);
  });
});

/**
 * vega-themes' "dark" config (vega-themes 2.x, as bundled with JupyterLab 4), which JupyterLab's
 * Vega renderer hands vega-embed whenever `document.body.dataset.jpThemeLight` is "false";
 * vega-embed merges it under the spec's own config.
 */
const VEGA_DARK = {
  background: '#333',
  view: { stroke: '#888' },
  title: { color: '#fff', subtitleColor: '#fff' },
  style: { 'guide-label': { fill: '#fff' }, 'guide-title': { fill: '#fff' } },
  axis: { domainColor: '#fff', gridColor: '#888', tickColor: '#fff' },
};

interface SceneItem {
  x?: number;
  y?: number;
  fill?: string;
  stroke?: string;
  text?: string;
  bounds: { x1: number; x2: number; y1: number; y2: number };
  items?: SceneMark[];
}
interface SceneMark {
  marktype: string;
  role: string;
  name?: string;
  items: SceneItem[];
}

/** Compiles a spec as vega-embed does (the theme's config under the spec's) and runs it headless, keeping what Vega-Lite and Vega log. */
async function render(
  spec: Record<string, unknown>,
  config?: Record<string, unknown>,
): Promise<{ view: vega.View; warnings: string[]; marks: SceneMark[] }> {
  const warnings: string[] = [];
  const logger = {
    level: () => vega.Warn,
    warn: (...args: unknown[]) => (warnings.push(args.join(' ')), logger),
    error: (...args: unknown[]) => (warnings.push(args.join(' ')), logger),
    info: () => logger,
    debug: () => logger,
  };
  const compiled = vegaLite.compile(spec as never, { config: config as never, logger: logger as never }).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none', logger: logger as never });
  await view.runAsync();
  const marks: SceneMark[] = [];
  const walk = (mark: SceneMark) => {
    marks.push(mark);
    for (const item of mark.items ?? []) {
      for (const child of item.items ?? []) walk(child);
    }
  };
  walk((view.scenegraph() as unknown as { root: SceneMark }).root);
  return { view, warnings, marks };
}

/** The items of the chart's own marks (not axes or legend) of one layer, by its name. */
function layerItems(marks: SceneMark[], name: string): SceneItem[] {
  // Vega-Lite names a layer's marks after it, spaces made underscores.
  const mark = `${name.replace(/ /g, '_')}_marks`;
  return marks.filter(m => m.role === 'mark' && m.name === mark).flatMap(m => m.items);
}

/** A theme of sentinel colours, each a distinct valid CSS colour, as the panel would read them. */
const THEME: ChartTheme = {
  keep: 'rgb(0, 128, 1)',
  best: 'rgb(0, 128, 2)',
  discard: 'rgb(128, 128, 3)',
  crash: 'rgb(200, 0, 4)',
  text: 'rgb(250, 250, 5)',
  muted: 'rgb(180, 180, 6)',
  grid: 'rgb(60, 60, 7)',
  rule: 'rgb(90, 90, 8)',
  font: 'Sentinel Sans',
};

/** Keeps with long descriptions all along, the newest last: labels at the far right. */
function longLabels(count = 12): ExperimentRecord[] {
  return Array.from({ length: count }, (_, n) =>
    record(n, {
      status: n % 3 === 1 ? 'discard' : 'keep',
      metric: n % 3 === 1 ? 1.02 : 1 - n * 0.002,
      description: `experiment ${n} with a description long enough to be cut short in the label`,
    }),
  );
}

/**
 * Six keeps, each with a discard one step later and a little worse: the ring sits just above and
 * right of the keep, where a label placed above and right of its point lands.
 */
function clustered(): ExperimentRecord[] {
  return Array.from({ length: 6 }, (_, i) => [
    record(2 * i, { status: 'keep', metric: 1 - i * 0.01, description: `keep ${i} lowers it` }),
    record(2 * i + 1, { status: 'discard', metric: 1 - i * 0.01 + 0.002, description: `discard ${i}` }),
  ]).flat();
}

/** WCAG's contrast ratio of two #rrggbb colours. */
function contrast(a: string, b: string): number {
  const lum = (hex: string) => {
    const [r, g, bl] = [1, 3, 5]
      .map(i => parseInt(hex.slice(i, i + 2), 16) / 255)
      .map(v => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (hi + 0.05) / (lo + 0.05);
}

describe('progressChart (Vega-Lite)', () => {
  it('is a v5 layered spec: the best as a step, keeps as dots, discards as rings, labels, crashes pinned', () => {
    const spec = progressChart(run(), { metric: 'val_bpb', direction: 'lower' });
    expect(VEGALITE_MIME).toBe('application/vnd.vegalite.v5+json');
    expect(spec.$schema).toBe('https://vega.github.io/schema/vega-lite/v5.json');
    expect((spec.data as { values: unknown[] }).values).toHaveLength(6);
    const layers = spec.layer as Layer[];
    expect(layers.map(l => l.name)).toEqual(['best', 'discards', 'keeps', 'labels left', 'labels right', 'crashes']);
    const [line, discards, keeps, left, right, crashes] = layers;
    expect(line.mark).toMatchObject({ type: 'line', interpolate: 'step-after' });
    expect(line.encoding.y.field).toBe('best');
    // Discards as legible as keeps: opaque, nearly as big, a ring rather than a faint dot.
    expect(discards.mark).toMatchObject({ type: 'point', filled: true, opacity: 1 });
    expect(discards.mark.size as number).toBeGreaterThanOrEqual(60);
    expect(keeps.mark).toMatchObject({ type: 'point', filled: true, size: 90 });
    expect(keeps.encoding.shape.scale).toEqual({
      domain: ['keep', 'discard', 'crash'],
      range: ['circle', RING, 'cross'],
    });
    expect(keeps.encoding.color.scale).toMatchObject({ domain: ['keep', 'discard', 'crash'] });
    // Each label where placeLabels put it: those it placed right of their point run rightwards,
    // the others leftwards; the offsets are the rows'.
    expect(left.transform?.[0].filter).toBe('datum.label != null && !datum.hidden && datum.label_dx > 0');
    expect(left.mark).toMatchObject({ type: 'text', align: 'left', dx: { expr: 'datum.label_dx' } });
    expect(right.transform?.[0].filter).toBe('datum.label != null && !datum.hidden && datum.label_dx < 0');
    expect(right.mark).toMatchObject({ type: 'text', align: 'right', dy: { expr: 'datum.label_dy' } });
    expect(left.encoding.text.field).toBe('label');
    const values = (spec.data as { values: ChartRow[] }).values;
    // #0 and #2 (left half) run rightwards; #6, the newest keep (right half), leftwards.
    expect(values.filter(r => r.label !== null).map(r => [r.n, Math.sign(r.label_dx!)])).toEqual([
      [0, 1],
      [2, 1],
      [6, -1],
    ]);
    expect(crashes.encoding.shape.field).toBe('status');
    // Lower is better: worse results lie at the top, so crashes sit just inside it.
    expect(crashes.encoding.y).toEqual({ value: 8 });
    expect(keeps.encoding.y.title).toBe('val_bpb (lower is better)');
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
  });

  it('when higher is better, crashes sit just inside the bottom', () => {
    const spec = progressChart(run(), { metric: 'acc', direction: 'higher' });
    const crashes = (spec.layer as Layer[]).find(l => l.name === 'crashes');
    expect(crashes?.encoding.y).toEqual({ value: { expr: 'height - 8' } });
  });

  it('renders in Vega without a warning whatever the run holds', async () => {
    const theme = { theme: THEME, width: 420 };
    const cases: Array<[string, ExperimentRecord[], Partial<ChartOptions>]> = [
      ['keeps, discards, a crash', run(), {}],
      // A run without a crash logged `Infinite extent for field "n"` on every draw.
      ['no crash', run().filter(r => r.status !== 'crash'), {}],
      ['no discard', run().filter(r => r.status !== 'discard'), theme],
      ['the baseline alone', [record(0, { status: 'keep', metric: 1 })], theme],
      ['a crashed baseline alone', [record(0, { status: 'crash' })], theme],
      ['nothing yet', [], {}],
      ['repeats with a band', noisyExperiments(), theme],
      ['higher is better', run(), { direction: 'higher' }],
      ['long labels in a narrow panel', longLabels(), { theme: THEME, width: 200 }],
    ];
    for (const [what, records, opts] of cases) {
      const { warnings, view } = await render(
        progressChart(records, { metric: 'val_bpb', direction: 'lower', ...opts }),
      );
      expect(warnings, what).toEqual([]);
      view.finalize();
    }
  });

  it('the warning check can fail: a layer filtered to nothing on a data-driven scale warns', async () => {
    const spec = {
      data: { values: [{ n: 0, status: 'keep', value: 1 }] },
      layer: [
        {
          mark: 'point',
          encoding: { x: { field: 'n', type: 'quantitative' }, y: { field: 'value', type: 'quantitative' } },
        },
        {
          transform: [{ filter: "datum.status === 'crash'" }],
          mark: 'point',
          encoding: { x: { field: 'n', type: 'quantitative' }, y: { value: 0 } },
        },
      ],
    };
    const { warnings } = await render(spec);
    expect(warnings.join('\n')).toContain('Infinite extent for field "n"');
  });

  it('both scales have explicit domains: half a step beyond the first and last point, the values padded', async () => {
    const records = run();
    const rows = chartRows(records);
    expect(numberDomain(rows)).toEqual([-0.5, 7.5]);
    const [lo, hi] = valueDomain(rows, []);
    expect(lo).toBeCloseTo(0.97 - 0.002, 9);
    expect(hi).toBeCloseTo(1.01 + 0.002, 9);
    const { view } = await render(progressChart(records, { metric: 'val_bpb', direction: 'lower' }));
    expect(view.scale('x').domain()).toEqual([-0.5, 7.5]);
    expect(view.scale('y').domain()).toEqual([lo, hi]);
    view.finalize();
  });

  it('nothing runs past the plot: the newest point and every label stay inside it', async () => {
    for (const opts of [{}, { theme: THEME, width: 420 }, { theme: THEME, width: 900 }]) {
      const { view, marks } = await render(
        progressChart(longLabels(), { metric: 'val_bpb', direction: 'lower', ...opts }),
      );
      const width = view.width();
      const labels = [...layerItems(marks, 'labels left'), ...layerItems(marks, 'labels right')];
      // The baseline and the latest LABELLED_KEEPS keeps, #11 (the newest) among them.
      expect(labels.map(l => l.text)).toContain(shortLabel(longLabels()[11].description));
      for (const label of labels) {
        expect(label.bounds.x1, `${label.text} in ${JSON.stringify(opts)}`).toBeGreaterThanOrEqual(0);
        expect(label.bounds.x2, `${label.text} in ${JSON.stringify(opts)}`).toBeLessThanOrEqual(width);
      }
      const newest = layerItems(marks, 'keeps').at(-1)!;
      expect(newest.bounds.x2).toBeLessThan(width);
      if ('width' in opts) {
        // The panel's chart fits the width it was given whole: axes, legend and labels.
        const root = (view.scenegraph() as unknown as { root: SceneItem }).root;
        expect(root.bounds.x2 - root.bounds.x1).toBeLessThanOrEqual(opts.width);
      }
      view.finalize();
    }
  });

  it('labels avoid the marks: clustered rings where a label above and right of its point would land', async () => {
    type Box = SceneItem['bounds'];
    const overlap = (a: Box, b: Box) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
    /** Each drawn label that overlaps a keep's dot or a ring other than its own point. */
    const collisions = (marks: SceneMark[]) => {
      const labels = [...layerItems(marks, 'labels left'), ...layerItems(marks, 'labels right')];
      const points = [...layerItems(marks, 'keeps'), ...layerItems(marks, 'discards')];
      return labels.flatMap(label =>
        points
          .filter(p => overlap(label.bounds, p.bounds))
          .filter(p => Math.abs(p.x! - (label.x ?? 0)) > 0.5) // a label's own point is at its x
          .map(p => `${label.text} over the point at ${p.x},${p.y}`),
      );
    };
    for (const opts of [{}, { theme: THEME, width: 356 }, { theme: THEME, width: 900 }]) {
      const spec = progressChart(clustered(), { metric: 'val_bpb', direction: 'lower', ...opts });
      const { view, marks } = await render(spec);
      const what = JSON.stringify(opts);
      expect(collisions(marks), what).toEqual([]);
      // Labels are still drawn (the newest keep's first), and one dropped keeps its text in the tooltip.
      const drawn = [...layerItems(marks, 'labels left'), ...layerItems(marks, 'labels right')].map(l => l.text);
      expect(drawn, what).toContain('keep 5 lowers it');
      const rows = (spec.data as { values: ChartRow[] }).values;
      for (const row of rows.filter(r => r.status === 'keep')) {
        expect(row.description, what).toBe(`keep ${row.n / 2} lowers it`);
      }
      view.finalize();

      // The check can fail: every label above and right of its point, as labels were drawn before.
      const naive = {
        ...spec,
        layer: (spec.layer as Layer[]).map(l =>
          l.name?.startsWith('labels')
            ? {
                ...l,
                transform: [{ filter: 'datum.label != null' }],
                mark: { ...l.mark, align: 'left', baseline: 'bottom', dx: 6, dy: -4 },
              }
            : l,
        ),
        data: { values: chartRows(clustered()) },
      };
      const before = await render(naive);
      expect(collisions(before.marks).length, what).toBeGreaterThan(0);
      before.view.finalize();
    }
  });

  it('placeLabels is deterministic, and drops a label that fits nowhere', () => {
    const frame = { width: 200, height: 100, x: (n: number) => n * 10, y: (v: number) => v, crashY: 8, limit: 90 };
    const row = (n: number, value: number, label: string | null): ChartRow => ({
      n,
      status: label === null ? 'discard' : 'keep',
      value,
      best: null,
      description: `#${n} tried something`,
      label,
    });
    // #5's label has a ring above, below and beside it on both sides: no room anywhere.
    const boxedIn = [
      row(5, 50, 'boxed in'),
      row(4, 50, null),
      row(6, 50, null),
      row(5.1, 39, null),
      row(5.1, 61, null),
    ];
    const placed = placeLabels(boxedIn, [], frame);
    expect(placed[0]).toMatchObject({ label: null, description: '#5 tried something' });
    // In the open, it goes above and to the right, the first place tried, and the same each time.
    const open = placeLabels([row(5, 50, 'in the open')], [], frame);
    expect(open[0]).toMatchObject({ label: 'in the open', label_dx: 7, label_dy: -11 });
    expect(placeLabels([row(5, 50, 'in the open')], [], frame)).toEqual(open);
    // Right of the middle, it runs leftwards; against the top, it goes below.
    expect(placeLabels([row(15, 50, 'late')], [], frame)[0]).toMatchObject({ label_dx: -7, label_dy: -11 });
    expect(placeLabels([row(5, 8, 'top')], [], frame)[0]).toMatchObject({ label_dx: 7, label_dy: 11 });
    // The estimate holds a label at its limit, so a long one is boxed as drawn (cut to the limit).
    expect(labelBox('x'.repeat(40), 0, 50, { dx: 7, dy: 0 }, 90).x2).toBe(7 + 90 + 1);
    expect(LABEL_CHAR_PX).toBeGreaterThanOrEqual(8);
  });

  it('the SVG export places its labels clear of the rings too', () => {
    const svg = progressChartSvg(clustered(), { metric: 'val_bpb', direction: 'lower' });
    const rings = [...svg.matchAll(/<circle cx="([\d.]+)" cy="([\d.]+)" r="4" [^>]*><title>#/g)].map(m => [
      Number(m[1]),
      Number(m[2]),
    ]);
    const labels = [
      ...svg.matchAll(/<text x="([\d.]+)" y="([\d.]+)" [^>]*font-size="10"[^>]*?( text-anchor="end")?>([^<]*)</g),
    ];
    expect(rings).toHaveLength(6); // the legend's ring has no title
    expect(labels.map(m => m[4])).toContain('keep 5 lowers it');
    for (const [, x, y, end, text] of labels) {
      const width = text.length * LABEL_CHAR_PX;
      const x1 = end ? Number(x) - width : Number(x);
      for (const [cx, cy] of rings) {
        const clear = cx + 5 <= x1 || cx - 5 >= x1 + width || cy + 5 <= Number(y) - 6 || cy - 5 >= Number(y) + 6;
        expect(clear, `${text} over the ring at ${cx},${cy}`).toBe(true);
      }
    }
  });

  it('the panel spec takes every colour from the theme, even under vega-embed’s dark theme', async () => {
    const spec = progressChart(run(), { metric: 'val_bpb', direction: 'lower', theme: THEME, width: 500 });
    // No colour of its own: every one is the theme's (the background transparent, the panel's own).
    expect(JSON.stringify(spec)).not.toMatch(/#[0-9a-f]{3,8}\b/i);
    for (const config of [undefined, VEGA_DARK]) {
      const { view, marks } = await render(spec, config);
      expect(view.background()).toBe('transparent');
      const fills = (role: string) =>
        new Set(marks.filter(m => m.role === role).flatMap(m => m.items.map(i => i.fill)));
      expect(fills('axis-label')).toEqual(new Set([THEME.muted]));
      expect(fills('axis-title')).toEqual(new Set([THEME.text]));
      expect(fills('legend-label')).toEqual(new Set([THEME.muted]));
      expect(new Set(layerItems(marks, 'labels left').map(i => i.fill))).toEqual(new Set([THEME.text]));
      expect(new Set(layerItems(marks, 'keeps').map(i => i.fill))).toEqual(new Set([THEME.keep]));
      expect(new Set(layerItems(marks, 'discards').map(i => i.fill))).toEqual(new Set([THEME.discard]));
      expect(new Set(layerItems(marks, 'crashes').map(i => i.fill))).toEqual(new Set([THEME.crash]));
      expect(layerItems(marks, 'best')[0].stroke).toBe(THEME.best);
      const grid = marks.filter(m => m.role === 'axis-grid').flatMap(m => m.items.map(i => i.stroke));
      expect(new Set(grid)).toEqual(new Set([THEME.grid]));
      view.finalize();
    }
  });

  it('the export’s labels follow the background: white under vega-embed’s dark theme, near-black on white', async () => {
    const spec = progressChart(run(), { metric: 'val_bpb', direction: 'lower' });
    expect(spec.config).toBeUndefined();
    const light = await render(spec);
    const dark = await render(spec, VEGA_DARK);
    const labelFill = (marks: SceneMark[]) => new Set(layerItems(marks, 'labels left').map(i => i.fill));
    expect(labelFill(dark.marks)).toEqual(new Set(['#ffffff']));
    expect(labelFill(light.marks)).toEqual(new Set(['#212121']));
    expect(light.view.background()).toBe('white');
    expect(dark.view.background()).toBe('#333');
    // The status colours are fixed, and the same in both.
    for (const { marks } of [light, dark]) {
      expect(new Set(layerItems(marks, 'keeps').map(i => i.fill))).toEqual(new Set([COLORS.keep]));
      expect(new Set(layerItems(marks, 'discards').map(i => i.fill))).toEqual(new Set([COLORS.discard]));
    }
    light.view.finalize();
    dark.view.finalize();
  });

  it('the export’s status colours read on white and on the dark theme’s #333 (3:1, WCAG for graphics)', () => {
    for (const [name, color] of Object.entries(COLORS)) {
      expect(contrast(color, '#ffffff'), `${name} on white`).toBeGreaterThanOrEqual(3);
      expect(contrast(color, '#333333'), `${name} on #333`).toBeGreaterThanOrEqual(3);
    }
  });
});

describe('progressChart following the panel’s filter (shown)', () => {
  const opts: ChartOptions = { metric: 'val_bpb', direction: 'lower' };
  const domains = (spec: Record<string, unknown>) =>
    (spec.layer as Layer[]).map(l => [l.encoding.x?.scale, l.encoding.y?.scale]).find(([x]) => x);

  it('draws only the points shown, keeps the best line and the axes of the whole run', () => {
    const all = progressChart(run(), opts);
    const crashes = progressChart(run(), { ...opts, shown: new Set([3]) });
    expect((crashes.layer as Layer[]).map(l => l.name)).toEqual(['best', 'keeps', 'crashes']);
    // The keeps' layer stays for the axes, but every keep is hidden from it.
    const rows = (crashes.data as { values: Array<{ n: number; hidden?: boolean }> }).values;
    expect(rows.filter(r => !r.hidden).map(r => r.n)).toEqual([3]);
    expect(domains(crashes)).toEqual(domains(all));
    const keepsOnly = progressChart(run(), { ...opts, shown: new Set([0, 2, 6]) });
    expect((keepsOnly.layer as Layer[]).map(l => l.name)).toEqual(['best', 'keeps', 'labels left', 'labels right']);
  });

  it('is the unfiltered chart when nothing is filtered', () => {
    expect(progressChart(run(), { ...opts, shown: null })).toEqual(progressChart(run(), opts));
  });
});

describe('chartTheme', () => {
  it('reads each colour from its JupyterLab CSS variable, trimmed', () => {
    const vars: Record<string, string> = {
      '--jp-success-color1': ' #4caf50',
      '--jp-error-color1': '#f44336 ',
      '--jp-ui-font-color1': 'rgba(255, 255, 255, 0.87)',
      '--jp-ui-font-color2': 'rgba(255, 255, 255, 0.54)',
      '--jp-border-color1': '#616161',
      '--jp-border-color2': '#424242',
      '--jp-ui-font-family': 'system-ui, sans-serif',
    };
    expect(chartTheme(name => vars[name] ?? '')).toEqual({
      keep: '#4caf50',
      best: '#4caf50',
      discard: 'rgba(255, 255, 255, 0.54)',
      crash: '#f44336',
      text: 'rgba(255, 255, 255, 0.87)',
      muted: 'rgba(255, 255, 255, 0.54)',
      grid: '#424242',
      rule: '#616161',
      font: 'system-ui, sans-serif',
    });
    expect(Object.values(THEME_VARS).every(name => name.startsWith('--jp-'))).toBe(true);
  });

  it('falls back to the export’s colours where a variable is unset', () => {
    const theme = chartTheme(() => '');
    expect(theme).toMatchObject({ keep: COLORS.keep, discard: COLORS.discard, crash: COLORS.crash });
    expect(Object.values(theme).every(v => v.length > 0)).toBe(true);
  });
});

describe('progressChartSvg', () => {
  it('draws a point per keep and discard, a cross per crash, the step line, and escapes labels', () => {
    const svg = progressChartSvg(run(), { metric: 'val_bpb', direction: 'lower' });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.endsWith('</svg>')).toBe(true);
    // Circles: 5 plotted results plus two legend marks.
    expect(svg.match(/<circle /g)).toHaveLength(5 + 2);
    expect(svg.match(/<title>#3 crash/g)).toHaveLength(1);
    // Discards (#1, #7) as opaque rings, as the Vega-Lite spec draws them; the legend says so.
    const ring = `r="4" fill="none" stroke="${COLORS.discard}" stroke-width="2"`;
    expect(svg.match(new RegExp(`<circle [^>]*${ring}><title>#\\d discard`, 'g'))).toHaveLength(2);
    expect(svg).toContain(`<circle cx="0" cy="0" ${ring}/>`);
    expect(svg).toMatch(/<path d="M[\d.]+ [\d.]+ H[\d.]+ V[\d.]+/);
    expect(svg).toContain('kept &lt;b&gt;two&lt;/b&gt; &amp; &quot;more&quot;');
    expect(svg).not.toMatch(/<script|<style|\sstyle=|<b>/);
    expect(svg).toContain('val_bpb (lower is better)');
    // Balanced tags: every element opened is closed or self-closing.
    const opened = (svg.match(/<[a-z]+[^>]*[^/]>/g) ?? []).length;
    const closed = (svg.match(/<\/[a-z]+>/g) ?? []).length;
    expect(opened).toBe(closed);
  });

  it('an empty run still draws a chart that says so', () => {
    const svg = progressChartSvg([], { metric: 'val_bpb', direction: 'lower' });
    expect(svg).toContain('no experiments with a result yet');
    expect(svg).not.toContain('NaN');
  });

  it('a single flat result is not a degenerate scale', () => {
    expect(
      progressChartSvg([record(0, { status: 'keep', metric: 1 })], { metric: 'm', direction: 'higher' }),
    ).not.toContain('NaN');
  });

  it('niceTicks picks 1-2-5 steps', () => {
    expect(niceTicks(0, 10)).toEqual([0, 2, 4, 6, 8, 10]);
    expect(niceTicks(0.96, 1.01)).toEqual([0.96, 0.97, 0.98, 0.99, 1, 1.01]);
    expect(niceTicks(3, 3)).toEqual([3]);
  });
});

describe('the chart of a noise-aware run (repeated runs, verdicts)', () => {
  const half = (runs: number) => (BAND_SE * 0.004) / Math.sqrt(runs);

  it('a journal from before repeats has no band and no run dots', () => {
    expect(chartRows(run()).some(r => 'best_lo' in r || 'best_hi' in r)).toBe(false);
    expect(chartRuns(run())).toEqual([]);
    const names = (progressChart(run(), { metric: 'val_bpb', direction: 'lower' }).layer as Layer[]).map(l => l.name);
    expect(names).not.toContain('noise band');
    expect(names).not.toContain('runs');
  });

  it('the best carries a band of ±2σ/√n over its runs; a re-measure of the best moves its mean and n', () => {
    const rows = chartRows(noisyExperiments());
    expect(rows.map(r => r.n)).toEqual([0, 1, 2, 3, 4, 5]);
    // #3's judging re-measured #2: the bar is #2's mean over 3 runs from there on.
    expect(rows.map(r => r.best)).toEqual([1, 1, 0.982, 0.98233, 0.98233, 0.98233]);
    expect(rows[0].best_hi! - rows[0].best!).toBeCloseTo(half(3), 9);
    expect(rows[2].best! - rows[2].best_lo!).toBeCloseTo(half(2), 9);
    expect(rows[3].best_hi! - rows[3].best_lo!).toBeCloseTo(2 * half(3), 9);
    // The crash and the reused result carry the band on.
    expect(rows[4].best_lo).toBeCloseTo(rows[3].best_lo!, 12);
  });

  it('no band when σ is 0 (a deterministic metric) or unmeasured', () => {
    const exps = noisyExperiments().map(e => (e.verdict ? { ...e, verdict: { ...e.verdict, sigma: 0 } } : e));
    expect(chartRows(exps).some(r => r.best_lo !== undefined)).toBe(false);
    const none = noisyExperiments().map(e => (e.verdict ? { ...e, verdict: { ...e.verdict, sigma: null } } : e));
    expect(chartRows(none).some(r => r.best_lo !== undefined)).toBe(false);
  });

  it('every run of an experiment measured more than once is a dot; reused runs are marked', () => {
    const runs = chartRuns(noisyExperiments());
    expect(runs.map(r => [r.n, r.metric])).toEqual([
      [0, 1],
      [0, 1.004],
      [0, 0.996],
      [2, 0.98],
      [2, 0.984],
      [3, 0.978],
      [3, 0.984],
      [3, 0.981],
      [5, 0.98],
      [5, 0.984],
    ]);
    expect(runs.filter(r => !r.own).map(r => r.n)).toEqual([5, 5]);
    expect(runs.find(r => r.n === 3 && r.k === 2)).toMatchObject({ status: 'discard', seed: 3003 });
  });

  it('the Vega-Lite spec draws the band behind the line and the run dots under the means', () => {
    const spec = progressChart(noisyExperiments(), { metric: 'val_bpb', direction: 'lower' });
    const layers = spec.layer as Layer[];
    expect(layers.map(l => l.name)).toEqual([
      'noise band',
      'best',
      'runs',
      'discards',
      'keeps',
      'labels left',
      'crashes',
    ]);
    const [band, line, dots, , means] = layers;
    expect(band.mark).toMatchObject({ type: 'area', interpolate: 'step-after' });
    expect(band.encoding.y.field).toBe('best_lo');
    expect(band.encoding.y2).toEqual({ field: 'best_hi' });
    expect(line.encoding.y.field).toBe('best');
    expect(dots.data?.values).toHaveLength(10);
    expect(dots.encoding.y.field).toBe('metric');
    expect(dots.encoding.opacity).toMatchObject({ condition: { test: 'datum.own' } });
    expect(means.encoding.y.field).toBe('value');
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
  });

  it('the SVG draws the band, a dot per run and says so in the legend', () => {
    const svg = progressChartSvg(noisyExperiments(), { metric: 'val_bpb', direction: 'lower' });
    // 5 means, 10 runs, and legend marks for keep, discard and one run.
    expect(svg.match(/<circle /g)).toHaveLength(5 + 10 + 3);
    expect(svg.match(/<title>#\d run \d \(seed \d+\)/g)).toHaveLength(10);
    expect(svg).toMatch(
      new RegExp(`<path d="M[\\d.]+ [\\d.]+ H[\\d.]+ V[\\d.]+[^"]* Z" fill="${COLORS.best}" fill-opacity="0.15"`),
    );
    expect(svg).toContain('±2 se of best');
    expect(svg).toContain('one run');
    expect(svg).not.toContain('NaN');
    const opened = (svg.match(/<[a-z]+[^>]*[^/]>/g) ?? []).length;
    const closed = (svg.match(/<\/[a-z]+>/g) ?? []).length;
    expect(opened).toBe(closed);
  });
});

/** A long run of `count` experiments: a keep every 20th (each 0.0001 better), a crash every 13th, the rest discards. */
function longRun(count: number): ExperimentRecord[] {
  let best = 1.2;
  return Array.from({ length: count }, (_, n) => {
    if (n % 20 === 0) {
      best -= 0.0001;
      return record(n, { status: 'keep', metric: best, description: `keep ${n}` });
    }
    if (n % 13 === 0) {
      return record(n, { status: 'crash', description: `crash ${n}` });
    }
    return record(n, { status: 'discard', metric: best + 0.001 + (n % 7) * 0.001, description: `discard ${n}` });
  });
}

describe('the chart of a long run (more than MAX_POINTS points)', () => {
  const opts: ChartOptions = { metric: 'val_bpb', direction: 'lower', theme: THEME, width: 900 };

  it('a run of MAX_POINTS points is drawn point by point', () => {
    const rows = chartRows(longRun(MAX_POINTS));
    expect(thinRows(rows, 'lower')).toEqual(rows);
    expect((progressChart(longRun(MAX_POINTS), opts).data as { values: unknown[] }).values).toHaveLength(MAX_POINTS);
  });

  it('keeps every keep and bins the discards and crashes: counted once each, nearest and farthest miss', () => {
    const rows = chartRows(longRun(10_000));
    for (const direction of ['lower', 'higher'] as const) {
      const thin = thinRows(rows, direction);
      // Every keep is still a row of the best line (500 keeps: more than MAX_KEEP_POINTS, so their
      // points are binned but for the labelled ones).
      expect(thin.filter(r => r.status === 'keep' && r.count === undefined).map(r => [r.n, r.best])).toEqual(
        rows.filter(r => r.status === 'keep').map(r => [r.n, r.best]),
      );
      const pointed = thin.filter(r => r.status === 'keep' && r.count === undefined && !r.hidden);
      expect(pointed.map(r => r.n)).toEqual(rows.filter(r => r.label !== null).map(r => r.n));
      const bins = thin.filter(r => r.count !== undefined);
      expect(bins.filter(r => r.status === 'keep').reduce((sum, r) => sum + (r.count ?? 0), 0) + pointed.length).toBe(
        rows.filter(r => r.status === 'keep').length,
      );
      for (const status of ['discard', 'crash'] as const) {
        const mine = bins.filter(r => r.status === status);
        expect(mine.length).toBeLessThanOrEqual(BINS);
        expect(mine.reduce((sum, r) => sum + (r.count ?? 0), 0)).toBe(rows.filter(r => r.status === status).length);
      }
      // One bin, checked against the rows it stands for.
      const bin = bins.find(r => r.status === 'discard' && r.count! > 10)!;
      const [lo, hi] = bin.range!.split('–').map(t => Number(t.replace('#', '')));
      const members = rows.filter(r => r.status === 'discard' && r.n >= lo && r.n <= hi);
      expect(members).toHaveLength(bin.count!);
      const values = members.map(r => r.value!);
      const [near, far] = direction === 'lower' ? [Math.min, Math.max] : [Math.max, Math.min];
      expect(bin.value).toBe(near(...values));
      expect(bin.value_far).toBe(far(...values));
      expect(bin.description).toBe(`${bin.count} discarded, ${bin.range}`);
      // The best line still reaches the last experiment (#9999, a discard), which draws no point of its own.
      const end = thin.at(-1)!;
      expect(end).toMatchObject({ n: 9999, hidden: true, best: rows.at(-1)!.best });
    }
  });

  it('with MAX_KEEP_POINTS keeps or fewer, every keep keeps its own point', () => {
    const rows = thinRows(chartRows(longRun(4000)), 'lower');
    const keeps = rows.filter(r => r.status === 'keep');
    expect(keeps).toHaveLength(200);
    expect(keeps.every(r => !r.hidden && r.count === undefined)).toBe(true);
    expect(rows.some(r => r.status === 'discard' && r.count !== undefined)).toBe(true);
  });

  it('10,000 experiments: a few thousand marks, the axes of the whole run, no warning', async () => {
    const records = longRun(10_000);
    const spec = progressChart(records, opts);
    const values = (spec.data as { values: unknown[] }).values;
    expect(values.length).toBeLessThan(500 + 4 * BINS);
    const { view, marks, warnings } = await render(spec);
    expect(warnings).toEqual([]);
    expect(view.scale('x').domain()).toEqual([-0.5, 9999.5]);
    expect(view.scale('y').domain()).toEqual(valueDomain(chartRows(records), []));
    // The labelled keeps and a point per bin of the others.
    expect(layerItems(marks, 'keeps').length).toBeGreaterThan(MAX_KEEP_POINTS / 2);
    expect(layerItems(marks, 'keeps').length).toBeLessThanOrEqual(BINS + LABELLED_KEEPS + 1);
    expect(layerItems(marks, 'discard spread').length).toBeGreaterThan(BINS / 2);
    // A line or an area is one path however many points it has.
    const drawn = marks
      .filter(m => m.role === 'mark')
      .reduce((sum, m) => sum + (['line', 'area'].includes(m.marktype) ? 1 : m.items.length), 0);
    expect(drawn).toBeLessThan(5 * BINS);
    view.finalize();
  });

  it('the warm-up chart has every layer a real one may draw, thinned, and draws without a warning', async () => {
    // src/lab/panel/warm-up.ts draws it to get Vega ready: a layer missing here is code left cold.
    const spec = warmUpSpec(opts);
    expect((spec.layer as Layer[]).map(l => l.name)).toEqual([
      'noise band',
      'best',
      'runs',
      'discard spread',
      'discards',
      'keeps',
      'labels left',
      'labels right',
      'crashes',
    ]);
    expect((spec.data as { values: unknown[] }).values.length).toBeLessThan(MAX_POINTS);
    const { marks, warnings } = await render(spec);
    expect(warnings).toEqual([]);
    for (const name of ['discard spread', 'discards', 'keeps', 'crashes', 'runs']) {
      expect(layerItems(marks, name).length).toBeGreaterThan(0);
    }
  });

  it('bins only what the filter shows; the best line stays the run’s', () => {
    const records = longRun(10_000);
    const crashes = new Set(records.filter(r => r.status === 'crash').map(r => r.n));
    const spec = progressChart(records, { ...opts, shown: crashes });
    const rows = (spec.data as { values: ChartRowLike[] }).values;
    expect(rows.some(r => r.status === 'discard' && !r.hidden)).toBe(false);
    expect(rows.filter(r => r.status === 'crash').reduce((sum, r) => sum + (r.count ?? 0), 0)).toBe(crashes.size);
    expect(rows.filter(r => r.status === 'keep').every(r => r.hidden)).toBe(true);
    expect((spec.layer as Layer[]).map(l => l.name)).toEqual(['best', 'keeps', 'crashes']);
  });
});

interface ChartRowLike {
  n: number;
  status: string;
  count?: number;
  hidden?: boolean;
}
