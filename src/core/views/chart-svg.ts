/**
 * The progress chart as a static SVG, for exported notebooks: GitHub and
 * nbviewer do not run Vega, so the chart output also carries `image/svg+xml`.
 * A small writer of our own rather than vega's headless renderer: the chart
 * is a handful of axes, points and one path, and the engine bundle stays free
 * of vega's ~40 packages. It draws what the Vega-Lite spec draws (same rows,
 * same colours). Pure string building: no DOM, no Node APIs.
 */
import { type ChartOptions } from './chart';
import { COLORS } from './chart-theme';
import { chartRows, chartRuns, valueDomain, type ChartRow } from './chart-rows';
import { placeLabels } from './chart-labels';
import type { ExperimentRecord } from '../journal/journal';

const W = 720;
const H = 380;
const M = { left: 72, right: 24, top: 40, bottom: 48 };
const PLOT_W = W - M.left - M.right;
const PLOT_H = H - M.top - M.bottom;
const FONT = 'font-family="sans-serif"';
/** A discard's ring. */
const RING_STYLE = `fill="none" stroke="${COLORS.discard}" stroke-width="2"`;

/** Escapes text for SVG (XML) content and attribute values. */
function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Rounds for coordinates: short output, sub-pixel precision is invisible. */
function r1(v: number): string {
  return String(Math.round(v * 10) / 10);
}

/** About `count` round tick values covering [lo, hi] (the usual 1-2-5 steps). */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) {
    return [lo];
  }
  const raw = (hi - lo) / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(s => s * mag).find(s => raw <= s * (1 + 1e-9)) ?? 10 * mag;
  const ticks: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    // Repeated addition drifts (0.1 + 0.2); snap to the step's precision.
    ticks.push(Number(v.toFixed(Math.max(0, -Math.floor(Math.log10(step)) + 1))));
  }
  return ticks;
}

/** The progress chart as an SVG document (a string), matching `progressChart`. */
export function progressChartSvg(records: ExperimentRecord[], opts: ChartOptions): string {
  const unplaced = chartRows(records);
  const runs = chartRuns(records);
  const ns = unplaced.map(r => r.n);
  const nLo = ns.length ? Math.min(...ns) : 0;
  const nHi = ns.length ? Math.max(...ns, nLo + 1) : 1;
  // A little room on both sides so the first and last points sit off the frame.
  const xPad = Math.max(0.5, (nHi - nLo) * 0.02);
  const [xLo, xHi] = [nLo - xPad, nHi + xPad];
  const [yLo, yHi] = valueDomain(unplaced, runs);
  const sx = (n: number) => M.left + ((n - xLo) / (xHi - xLo)) * PLOT_W;
  const sy = (v: number) => M.top + (1 - (v - yLo) / (yHi - yLo)) * PLOT_H;
  // Crashes have no metric: crosses along the edge where worse results lie.
  const crashY = opts.direction === 'lower' ? M.top + 6 : M.top + PLOT_H - 6;
  // Labels clear of the marks, as the panel's chart places them (whole: an SVG cannot cut them).
  const rows = placeLabels(unplaced, runs, {
    width: PLOT_W,
    height: PLOT_H,
    x: n => sx(n) - M.left,
    y: v => sy(v) - M.top,
    crashY: crashY - M.top,
    limit: Infinity,
  });
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img">`,
    `<title>${esc(`${opts.metric} by experiment (${opts.direction} is better)`)}</title>`,
    `<rect x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>`,
  ];
  // Axes: a frame, ticks with labels, titles.
  out.push(`<rect x="${M.left}" y="${M.top}" width="${PLOT_W}" height="${PLOT_H}" fill="none" stroke="#bdbdbd"/>`);
  const yTicks = niceTicks(yLo, yHi);
  // Every label with the same decimals as the step, so 1 reads 1.000 beside 0.999.
  const decimals = yTicks.length > 1 ? Math.max(0, -Math.floor(Math.log10(yTicks[1] - yTicks[0]) + 1e-9)) : 6;
  for (const t of yTicks) {
    const y = r1(sy(t));
    out.push(
      `<line x1="${M.left}" x2="${M.left + PLOT_W}" y1="${y}" y2="${y}" stroke="#eeeeee"/>`,
      `<text x="${M.left - 6}" y="${y}" ${FONT} font-size="11" fill="#424242" text-anchor="end" dominant-baseline="middle">${t.toFixed(decimals)}</text>`,
    );
  }
  for (const t of niceTicks(nLo, nHi, Math.min(10, nHi - nLo)).filter(t => Number.isInteger(t))) {
    const x = r1(sx(t));
    out.push(
      `<line x1="${x}" x2="${x}" y1="${M.top + PLOT_H}" y2="${M.top + PLOT_H + 4}" stroke="#757575"/>`,
      `<text x="${x}" y="${M.top + PLOT_H + 16}" ${FONT} font-size="11" fill="#424242" text-anchor="middle">${t}</text>`,
    );
  }
  out.push(
    `<text x="${M.left + PLOT_W / 2}" y="${H - 10}" ${FONT} font-size="12" fill="#212121" text-anchor="middle">experiment</text>`,
    `<text x="16" y="${M.top + PLOT_H / 2}" ${FONT} font-size="12" fill="#212121" text-anchor="middle" transform="rotate(-90 16 ${M.top + PLOT_H / 2})">${esc(`${opts.metric} (${opts.direction} is better)`)}</text>`,
  );
  // The best's noise band behind everything: a step-shaped polygon, upper edge out, lower edge back.
  const bandRows = rows.filter(r => r.best_lo !== undefined && r.best_hi !== undefined);
  if (bandRows.length) {
    out.push(
      `<path d="${bandPath(bandRows, sx, sy)}" fill="${COLORS.best}" fill-opacity="0.15" stroke="none"><title>best ± 2 standard errors of its mean</title></path>`,
    );
  }
  // The running best as a step line (step-after: it holds until the next keep).
  const bestRows = rows.filter(r => r.best !== null);
  if (bestRows.length) {
    const d = bestRows.map((r, i) => {
      const x = r1(sx(r.n));
      const y = r1(sy(r.best as number));
      return i === 0 ? `M${x} ${y}` : `H${x} V${y}`;
    });
    out.push(`<path d="${d.join(' ')}" fill="none" stroke="${COLORS.best}" stroke-width="2"/>`);
  }
  // Each run of an experiment measured more than once, small, under the means.
  for (const p of runs) {
    const fill = p.status === 'keep' ? COLORS.keep : COLORS.discard;
    out.push(
      `<circle cx="${r1(sx(p.n))}" cy="${r1(sy(p.metric))}" r="2" fill="${fill}" fill-opacity="${p.own ? 0.6 : 0.3}"><title>${esc(`#${p.n} run ${p.k} (seed ${p.seed}): ${p.metric}`)}</title></circle>`,
    );
  }
  // Discards first so kept points draw over them: rings, as legible as a keep's dot and told
  // from it by shape as well as colour (the Vega-Lite spec draws the same).
  for (const r of rows.filter(r => r.status === 'discard')) {
    out.push(
      `<circle cx="${r1(sx(r.n))}" cy="${r1(sy(r.value as number))}" r="4" ${RING_STYLE}><title>${esc(`#${r.n} discard ${r.value}: ${r.description}`)}</title></circle>`,
    );
  }
  for (const r of rows.filter(r => r.status === 'keep')) {
    const x = sx(r.n);
    const y = sy(r.value as number);
    out.push(
      `<circle cx="${r1(x)}" cy="${r1(y)}" r="5" fill="${COLORS.keep}"><title>${esc(`#${r.n} keep ${r.value}: ${r.description}`)}</title></circle>`,
    );
    if (r.label !== null && r.label_dx !== undefined && r.label_dy !== undefined) {
      const anchor = r.label_dx < 0 ? ' text-anchor="end"' : '';
      out.push(
        `<text x="${r1(x + r.label_dx)}" y="${r1(y + r.label_dy)}" ${FONT} font-size="10" fill="#212121" dominant-baseline="middle"${anchor}>${esc(r.label)}</text>`,
      );
    }
  }
  for (const r of rows.filter(r => r.status === 'crash')) {
    const x = sx(r.n);
    out.push(
      `<path d="M${r1(x - 4)} ${r1(crashY - 4)} L${r1(x + 4)} ${r1(crashY + 4)} M${r1(x - 4)} ${r1(crashY + 4)} L${r1(x + 4)} ${r1(crashY - 4)}" stroke="${COLORS.crash}" stroke-width="2"><title>${esc(`#${r.n} crash: ${r.description}`)}</title></path>`,
    );
  }
  // A legend in the top margin: what each mark means.
  const legend: Array<[string, string]> = [
    [`<circle cx="0" cy="0" r="5" fill="${COLORS.keep}"/>`, 'keep'],
    [`<circle cx="0" cy="0" r="4" ${RING_STYLE}/>`, 'discard'],
    [`<path d="M-4 -4 L4 4 M-4 4 L4 -4" stroke="${COLORS.crash}" stroke-width="2"/>`, 'crash'],
    [`<path d="M-8 0 H8" stroke="${COLORS.best}" stroke-width="2"/>`, 'best so far'],
  ];
  if (bandRows.length) {
    legend.push([
      `<rect x="-8" y="-5" width="16" height="10" fill="${COLORS.best}" fill-opacity="0.15"/>`,
      '±2 se of best',
    ]);
  }
  if (runs.length) {
    legend.push([`<circle cx="0" cy="0" r="2" fill="${COLORS.discard}"/>`, 'one run']);
  }
  // Six entries at the old spacing would run past the right edge.
  const step = legend.length > 4 ? 100 : 110;
  legend.forEach(([mark, text], i) => {
    const x = M.left + 10 + i * step;
    out.push(
      `<g transform="translate(${x} ${M.top - 18})">${mark}<text x="12" y="0" ${FONT} font-size="11" fill="#424242" dominant-baseline="middle">${text}</text></g>`,
    );
  });
  if (rows.length === 0) {
    out.push(
      `<text x="${M.left + PLOT_W / 2}" y="${M.top + PLOT_H / 2}" ${FONT} font-size="13" fill="#757575" text-anchor="middle">no experiments with a result yet</text>`,
    );
  }
  out.push('</svg>');
  return out.join('\n');
}

/** The band as one closed path: along the upper edge by steps, back along the lower edge. */
function bandPath(rows: ChartRow[], sx: (n: number) => number, sy: (v: number) => number): string {
  const upper = rows.map(
    (r, i) => `${i === 0 ? 'M' : 'H'}${r1(sx(r.n))}${i === 0 ? ' ' : ' V'}${r1(sy(r.best_hi as number))}`,
  );
  // Back along the lower edge, right to left: at each x the band steps to the previous row's value.
  const lower = [`V${r1(sy(rows[rows.length - 1].best_lo as number))}`];
  for (let i = rows.length - 1; i > 0; i--) {
    lower.push(`V${r1(sy(rows[i - 1].best_lo as number))} H${r1(sx(rows[i - 1].n))}`);
  }
  return `${upper.join(' ')} ${lower.join(' ')} Z`;
}
