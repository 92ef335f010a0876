import * as vega from 'vega';
import * as vegaLite from 'vega-lite';
import { describe, expect, it } from 'vitest';
import type { TransferSummary } from '../src/core/study/transfer';
import {
  TransferSummaryFile,
  transferChartSpec,
  transferChartSvg,
  transferColumns,
  transferPoints,
  transferRows,
  transferTableHtml,
} from '../src/core/views/transfer-view';

const est = (mean: number | null, runs: number) => ({ mean, runs });

function summary(over: Partial<TransferSummary> = {}): TransferSummary {
  return {
    tag: 't1',
    metric: 'val_bpb',
    direction: 'lower',
    keep_sigma: 2,
    env: { AUTORESEARCH_SCALE: '2' },
    scale: '2×',
    budget_s: 120,
    search_budget_s: 60,
    runs: 2,
    baseline: { n: 0, commit: 'a'.repeat(40), search: est(1.5, 2), transfer: est(1.4, 2) },
    changes: [
      {
        n: 3,
        commit: 'b'.repeat(40),
        description: 'raise <lr> & warmup',
        delta_search: -0.1,
        se_search: 0.01,
        delta_transfer: -0.05,
        se_transfer: 0.01,
        verdict: 'transferred',
        search: est(1.4, 2),
        transfer: est(1.35, 2),
      },
      {
        n: 7,
        commit: 'c'.repeat(40),
        description: 'deeper',
        delta_search: -0.02,
        se_search: 0.01,
        delta_transfer: null,
        se_transfer: null,
        verdict: 'unmeasured',
        search: est(1.38, 2),
        transfer: est(null, 0),
      },
    ],
    summary: {
      changes: 2,
      transferred: 1,
      neutral: 0,
      reversed: 0,
      unmeasured: 1,
      total_delta_search: -0.12,
      total_delta_transfer: null,
      total_gain_search: 0.12,
      total_gain_transfer: null,
      sigma_search: 0.01,
      sigma_transfer: 0.01,
      complete: false,
      line: '1 of 2 changes transferred',
    },
    ...over,
  };
}

describe('the transfer study as readers see it', () => {
  it('accepts what the engine writes and names what is wrong with anything else', () => {
    expect(TransferSummaryFile.safeParse(summary()).success).toBe(true);
    const bad = TransferSummaryFile.safeParse({ ...summary(), changes: [{ n: 'x' }] });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0].path[0]).toBe('changes');
  });

  it('plots gains (positive is better) with the interval the verdict tests, and skips what was not measured', () => {
    const points = transferPoints(summary());
    expect(points.map(p => [p.n, p.scale])).toEqual([
      [3, 'search'],
      [3, 'transfer'],
      [7, 'search'],
    ]);
    const [search, transfer] = points;
    expect(search.gain).toBeCloseTo(0.1);
    expect(search.lo).toBeCloseTo(0.08);
    expect(search.hi).toBeCloseTo(0.12);
    expect(transfer.gain).toBeCloseTo(0.05);
    // Higher is better: the delta is the gain.
    const higher = transferPoints(summary({ direction: 'higher' }));
    expect(higher[0].gain).toBeCloseTo(-0.1);
  });

  it('draws two series in a Vega-Lite spec and in the SVG, with the summary line as the title', () => {
    type Layer = { encoding: { x?: unknown; color?: { scale: { domain: string[] } } } };
    const spec = transferChartSpec(summary()) as { title: { text: string }; layer: Layer[] };
    expect(spec.title.text).toBe('1 of 2 changes transferred');
    expect(spec.layer[2].encoding.color?.scale.domain).toEqual(['search scale (60 s)', 'at 2× (120 s)']);
    const svg = transferChartSvg(summary());
    expect(svg.match(/<circle [^>]*r="4.5"/g)).toHaveLength(3);
    expect(svg).toContain('raise &lt;lr&gt; &amp; warmup');
  });

  it('renders in Vega with the changes alone on its x axis and the two series as its colours', async () => {
    const view = new vega.View(vega.parse(vegaLite.compile(transferChartSpec(summary()) as never).spec), {
      renderer: 'none',
    });
    await view.runAsync();
    expect(view.scale('x').domain()).toEqual(['#3 raise <lr> & warmup', '#7 deeper']);
    expect(view.scale('color').domain()).toEqual(['search scale (60 s)', 'at 2× (120 s)']);
    expect(await view.toSVG()).toContain('stroke-dasharray');
    view.finalize();
  });

  it('tables each change, with ablation columns only when the study ablated', () => {
    expect(transferColumns(summary())).toHaveLength(6);
    const rows = transferRows(summary());
    expect(rows[0]).toMatchObject({ n: 3, commit: 'bbbbbbb', verdict: 'transferred', ablation: null });
    expect(rows[1].transfer).toBe('—');
    const ablated = summary();
    ablated.changes[0].ablate = { delta: 0.09, se: 0.01, delta_kept: -0.1, verdict: 'holds', runs: 2, conflict: null };
    expect(transferColumns(ablated)).toHaveLength(8);
    const html = transferTableHtml(ablated);
    expect(html).toContain('<th>ablation</th>');
    expect(html).toContain('holds');
    expect(html).not.toMatch(/<script|<style/);
    expect(html).toContain('raise &lt;lr&gt; &amp; warmup');
  });
});
