/** The progress chart: the Vega-Lite spec JupyterLab renders and the static SVG exports carry. */
import { describe, expect, it } from 'vitest';
import {
  BAND_SE,
  chartRows,
  chartRuns,
  LABELLED_KEEPS,
  progressChart,
  shortLabel,
  VEGALITE_MIME,
} from '../src/core/chart';
import { niceTicks, progressChartSvg } from '../src/core/chart-svg';
import type { ExperimentRecord } from '../src/core/journal';
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

describe('progressChart (Vega-Lite)', () => {
  it('is a v5 layered spec: step line of the best, points by status, labels for keeps, crashes pinned', () => {
    const spec = progressChart(run(), { metric: 'val_bpb', direction: 'lower' });
    expect(VEGALITE_MIME).toBe('application/vnd.vegalite.v5+json');
    expect(spec.$schema).toBe('https://vega.github.io/schema/vega-lite/v5.json');
    expect((spec.data as { values: unknown[] }).values).toHaveLength(6);
    const [line, points, labels, crashes] = spec.layer as Layer[];
    expect(line.mark).toMatchObject({ type: 'line', interpolate: 'step-after' });
    expect(line.encoding.y.field).toBe('best');
    expect(points.mark.type).toBe('point');
    expect(points.encoding.color.scale).toMatchObject({ domain: ['keep', 'discard', 'crash'] });
    expect(points.encoding.size).toMatchObject({ condition: { test: "datum.status === 'keep'" } });
    expect(labels.mark.type).toBe('text');
    expect(labels.transform?.[0].filter).toBe("datum.status === 'keep'");
    expect(labels.encoding.text.field).toBe('label');
    expect(crashes.mark).toMatchObject({ type: 'point', shape: 'cross' });
    // Lower is better: worse results lie at the top, so crashes sit there.
    expect(crashes.encoding.y).toEqual({ value: 0 });
    expect(points.encoding.y.title).toBe('val_bpb (lower is better)');
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
  });

  it('when higher is better, crashes sit at the bottom', () => {
    const spec = progressChart(run(), { metric: 'acc', direction: 'higher' });
    expect((spec.layer as Layer[])[3].encoding.y).toEqual({ value: 'height' });
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
    expect((progressChart(run(), { metric: 'val_bpb', direction: 'lower' }).layer as Layer[]).map(l => l.name)).toEqual(
      [undefined, undefined, undefined, undefined],
    );
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
    expect(layers.map(l => l.name ?? l.mark.type)).toEqual(['noise band', 'line', 'runs', 'point', 'text', 'point']);
    const [band, line, dots, means] = layers;
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
    expect(svg).toMatch(/<path d="M[\d.]+ [\d.]+ H[\d.]+ V[\d.]+[^"]* Z" fill="#2e7d32" fill-opacity="0.15"/);
    expect(svg).toContain('±2 se of best');
    expect(svg).toContain('one run');
    expect(svg).not.toContain('NaN');
    const opened = (svg.match(/<[a-z]+[^>]*[^/]>/g) ?? []).length;
    const closed = (svg.match(/<\/[a-z]+>/g) ?? []).length;
    expect(opened).toBe(closed);
  });
});
