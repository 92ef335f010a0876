/**
 * The transfer study as readers see it: the schema that validates `transfer/summary.json` where it
 * is read (the panel, through the server), the table's rows, and the two-series chart (the gain of
 * each kept change at the search scale and at the transfer scale) as Vega-Lite for JupyterLab and
 * as a static SVG and an HTML table for exported notebooks on GitHub. One source for the panel and
 * the export, so both show the same figures. Pure: no DOM, no Node APIs.
 */
import * as z from 'zod/mini';
import { VEGALITE_MIME } from './chart';
import { niceTicks } from './chart-svg';
import { escapeHtml, NO_MATH_CLASSES } from './bundle';
import { fmtDeltaWithError, type TransferSummary } from '../study/transfer';
import { englishMessages } from '../journal/zod-english';

englishMessages();

const num = z.nullable(z.number());
const Estimate = z.object({ mean: num, runs: z.int().check(z.nonnegative()) });

/** transfer/summary.json (src/core/study/transfer.ts's TransferSummary), checked where it crosses a boundary. */
export const TransferSummaryFile = z.object({
  tag: z.string(),
  metric: z.string(),
  direction: z.enum(['lower', 'higher']),
  keep_sigma: z.number(),
  env: z.record(z.string(), z.string()),
  scale: z.string(),
  budget_s: z.number(),
  search_budget_s: z.number(),
  runs: z.int(),
  baseline: z.nullable(z.object({ n: z.int(), commit: z.string(), search: Estimate, transfer: Estimate })),
  changes: z.array(
    z.object({
      n: z.int(),
      commit: z.string(),
      description: z.string(),
      delta_search: num,
      se_search: num,
      delta_transfer: num,
      se_transfer: num,
      verdict: z.enum(['transferred', 'neutral', 'reversed', 'unmeasured']),
      search: Estimate,
      transfer: Estimate,
      ablate: z.optional(
        z.object({
          delta: num,
          se: num,
          delta_kept: num,
          verdict: z.enum(['holds', 'neutral', 'reversed', 'unmeasured', 'conflict']),
          runs: z.int(),
          conflict: z.nullable(z.string()),
        }),
      ),
    }),
  ),
  summary: z.object({
    changes: z.int(),
    transferred: z.int(),
    neutral: z.int(),
    reversed: z.int(),
    unmeasured: z.int(),
    total_delta_search: num,
    total_delta_transfer: num,
    total_gain_search: num,
    total_gain_transfer: num,
    sigma_search: num,
    sigma_transfer: num,
    complete: z.boolean(),
    line: z.string(),
  }),
});

// The schema and the engine's type must describe the same file: this fails to compile when they part.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const sameShape: Same<z.infer<typeof TransferSummaryFile>, TransferSummary> = true;
void sameShape;

/** One row of the study's table, every figure already in words. */
export interface TransferRow {
  n: number;
  commit: string;
  description: string;
  search: string;
  transfer: string;
  verdict: TransferSummary['changes'][number]['verdict'];
  /** With --ablate: the loss when the change is removed from the best, or that its revert conflicts. */
  ablation: string | null;
  ablate_verdict: string | null;
}

/** The table's column titles, the ablation's only when the study has them. */
export function transferColumns(s: TransferSummary): string[] {
  const head = ['#', 'commit', 'change', `Δ search (${s.search_budget_s} s)`, `Δ at ${s.scale} (${s.budget_s} s)`];
  head.push('verdict');
  if (s.changes.some(c => c.ablate)) head.push('Δ removed from best', 'ablation');
  return head;
}

/** The study's kept changes as table rows, in the order the run kept them. */
export function transferRows(s: TransferSummary): TransferRow[] {
  return s.changes.map(c => ({
    n: c.n,
    commit: c.commit.slice(0, 7),
    description: c.description,
    search: fmtDeltaWithError(c.delta_search, c.se_search),
    transfer: fmtDeltaWithError(c.delta_transfer, c.se_transfer),
    verdict: c.verdict,
    ablation: c.ablate
      ? c.ablate.verdict === 'conflict'
        ? 'revert conflicts'
        : fmtDeltaWithError(c.ablate.delta, c.ablate.se)
      : null,
    ablate_verdict: c.ablate ? c.ablate.verdict : null,
  }));
}

/** Series colours, shared by the Vega-Lite spec and the SVG. */
export const TRANSFER_COLORS = { search: '#1565c0', transfer: '#ef6c00' } as const;

/** One plotted estimate: a change's gain at one scale, with its interval. */
export interface TransferPoint {
  n: number;
  change: string;
  series: string;
  scale: 'search' | 'transfer';
  /** Positive is better, whichever the metric's direction. */
  gain: number;
  lo: number | null;
  hi: number | null;
  verdict: string;
}

/** The series' names as the legend shows them. */
export function seriesNames(s: TransferSummary): { search: string; transfer: string } {
  return { search: `search scale (${s.search_budget_s} s)`, transfer: `at ${s.scale} (${s.budget_s} s)` };
}

/**
 * The points of the chart: each change's gain at both scales, with an interval of keep_sigma
 * standard errors either side — the interval the verdict tests, so a bar that crosses zero is a
 * neutral change.
 */
export function transferPoints(s: TransferSummary): TransferPoint[] {
  const sign = s.direction === 'lower' ? -1 : 1;
  const names = seriesNames(s);
  const out: TransferPoint[] = [];
  for (const c of s.changes) {
    const change = `#${c.n} ${c.description.length > 32 ? `${c.description.slice(0, 31)}…` : c.description}`;
    for (const scale of ['search', 'transfer'] as const) {
      const delta = scale === 'search' ? c.delta_search : c.delta_transfer;
      const se = scale === 'search' ? c.se_search : c.se_transfer;
      if (delta === null) continue;
      const gain = sign * delta;
      const half = se === null ? null : s.keep_sigma * se;
      out.push({
        n: c.n,
        change,
        series: names[scale],
        scale,
        gain,
        lo: half === null ? null : gain - half,
        hi: half === null ? null : gain + half,
        verdict: c.verdict,
      });
    }
  }
  return out;
}

/** The two-series chart as Vega-Lite v5 (JupyterLab renders it natively). */
export function transferChartSpec(s: TransferSummary): Record<string, unknown> {
  const names = seriesNames(s);
  const points = transferPoints(s);
  const x = {
    field: 'change',
    type: 'nominal',
    sort: { field: 'n' },
    title: 'kept change, in the order kept',
    axis: { labelAngle: -30, labelLimit: 180 },
  };
  const color = {
    field: 'series',
    type: 'nominal',
    title: null,
    scale: { domain: [names.search, names.transfer], range: [TRANSFER_COLORS.search, TRANSFER_COLORS.transfer] },
    legend: { orient: 'top' },
  };
  const y = { field: 'gain', type: 'quantitative', title: `gain in ${s.metric} (higher is better)` };
  const xOffset = { field: 'series', sort: [names.search, names.transfer] };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
    title: { text: s.summary.line, fontSize: 12 },
    width: Math.max(240, 90 * s.changes.length),
    height: 260,
    data: { values: points },
    layer: [
      // The zero line spans the plot: no x of its own, so it does not join the changes' axis.
      { mark: { type: 'rule', color: '#9e9e9e', strokeDash: [4, 4] }, encoding: { y: { datum: 0 } } },
      {
        mark: { type: 'rule', strokeWidth: 2 },
        transform: [{ filter: 'datum.lo !== null' }],
        encoding: { x, xOffset, color, y: { field: 'lo', type: 'quantitative' }, y2: { field: 'hi' } },
      },
      {
        mark: { type: 'point', filled: true, size: 70 },
        encoding: {
          x,
          xOffset,
          color,
          y,
          tooltip: [{ field: 'change' }, { field: 'series' }, { field: 'gain', format: '.6f' }, { field: 'verdict' }],
        },
      },
    ],
  };
}

const W = 640;
const H = 320;
const M = { left: 72, right: 16, top: 48, bottom: 64 };

/** The same chart as a static SVG document, for exports read where Vega does not run. */
export function transferChartSvg(s: TransferSummary): string {
  const points = transferPoints(s);
  const names = seriesNames(s);
  const values = points.flatMap(p => [p.gain, p.lo, p.hi]).filter((v): v is number => v !== null);
  let lo = Math.min(0, ...values);
  let hi = Math.max(0, ...values);
  const pad = hi > lo ? (hi - lo) * 0.08 : 1;
  [lo, hi] = [lo - pad, hi + pad];
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const slot = plotW / Math.max(1, s.changes.length);
  const sy = (v: number) => M.top + (1 - (v - lo) / (hi - lo)) * plotH;
  const r = (v: number) => String(Math.round(v * 10) / 10);
  const e = escapeHtml;
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img">`,
    `<title>${e(s.summary.line)}</title>`,
    `<rect x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${M.left}" y="18" font-family="sans-serif" font-size="12">${e(s.summary.line)}</text>`,
  ];
  for (const [i, key] of (['search', 'transfer'] as const).entries()) {
    const x = M.left + i * 220;
    out.push(
      `<circle cx="${x + 5}" cy="34" r="4" fill="${TRANSFER_COLORS[key]}"/>`,
      `<text x="${x + 14}" y="38" font-family="sans-serif" font-size="11">${e(names[key])}</text>`,
    );
  }
  for (const t of niceTicks(lo, hi, 5)) {
    out.push(
      `<line x1="${M.left}" x2="${W - M.right}" y1="${r(sy(t))}" y2="${r(sy(t))}" stroke="${t === 0 ? '#9e9e9e' : '#eeeeee'}"${t === 0 ? ' stroke-dasharray="4 4"' : ''}/>`,
      `<text x="${M.left - 6}" y="${r(sy(t) + 4)}" text-anchor="end" font-family="sans-serif" font-size="10">${t}</text>`,
    );
  }
  out.push(
    `<text transform="translate(14 ${r(M.top + plotH / 2)}) rotate(-90)" text-anchor="middle" font-family="sans-serif" font-size="11">${e(`gain in ${s.metric}`)}</text>`,
  );
  s.changes.forEach((c, i) => {
    const mid = M.left + slot * (i + 0.5);
    out.push(
      `<text x="${r(mid)}" y="${H - M.bottom + 16}" text-anchor="middle" font-family="sans-serif" font-size="10">${e(`#${c.n}`)}</text>`,
    );
    for (const p of points.filter(q => q.n === c.n)) {
      const x = mid + (p.scale === 'search' ? -0.15 : 0.15) * slot;
      const color = TRANSFER_COLORS[p.scale];
      if (p.lo !== null && p.hi !== null) {
        out.push(
          `<line x1="${r(x)}" x2="${r(x)}" y1="${r(sy(p.lo))}" y2="${r(sy(p.hi))}" stroke="${color}" stroke-width="2"/>`,
        );
      }
      out.push(
        `<circle cx="${r(x)}" cy="${r(sy(p.gain))}" r="4.5" fill="${color}"><title>${e(`${p.change}: ${p.series} ${p.gain.toFixed(6)}`)}</title></circle>`,
      );
    }
  });
  out.push(
    `<text x="${r(M.left + plotW / 2)}" y="${H - 12}" text-anchor="middle" font-family="sans-serif" font-size="11">kept change, in the order kept (bars: ±${s.keep_sigma} SE)</text>`,
    '</svg>',
  );
  return out.join('\n');
}

/** The table as HTML without scripts or styles (GitHub keeps it as it is). */
export function transferTableHtml(s: TransferSummary): string {
  const e = escapeHtml;
  const head = transferColumns(s);
  const ablate = s.changes.some(c => c.ablate);
  const rows = transferRows(s).map(row => {
    const cells = [String(row.n), `<code>${e(row.commit)}</code>`, e(row.description), e(row.search), e(row.transfer)];
    cells.push(`<b>${e(row.verdict)}</b>`);
    if (ablate) cells.push(e(row.ablation ?? '—'), e(row.ablate_verdict ?? '—'));
    return `<tr>${cells.map(c => `<td>${c}</td>`).join('')}</tr>`;
  });
  // JupyterLab typesets `$…$` in an HTML output, and the descriptions are a model's text (./bundle).
  return [
    `<div class="${NO_MATH_CLASSES}">`,
    `<p><b>${e(s.summary.line)}</b></p>`,
    '<table>',
    `<thead><tr>${head.map(h => `<th>${e(h)}</th>`).join('')}</tr></thead>`,
    `<tbody>${rows.join('')}</tbody>`,
    '</table>',
    '</div>',
  ].join('\n');
}

/** The table as plain text, one change a line. */
export function transferTableText(s: TransferSummary): string {
  const lines = transferRows(s).map(
    r =>
      `#${r.n} ${r.commit} ${r.description}: ${r.search} → ${r.transfer} ${r.verdict}${r.ablation ? `; removed: ${r.ablation}` : ''}`,
  );
  return [s.summary.line, ...lines].join('\n');
}

/** The table's output bundle (two outputs, not one: a front end shows one type of each bundle). */
export function transferTableBundle(s: TransferSummary): Record<string, string> {
  return { 'text/html': transferTableHtml(s), 'text/plain': transferTableText(s) };
}

/** The chart's output bundle: Vega-Lite for JupyterLab, SVG for GitHub and nbviewer, text for the rest. */
export function transferChartBundle(s: TransferSummary): Record<string, unknown> {
  return {
    [VEGALITE_MIME]: transferChartSpec(s),
    'image/svg+xml': transferChartSvg(s),
    'text/plain': `<transfer chart: ${s.changes.length} kept changes at the search scale and at ${s.scale}>`,
  };
}
