/**
 * Where the chart's point labels go: each labelled keep tries a few places around its point, in
 * a fixed order, and takes the first whose box overlaps no mark (keep, ring, cross, run dot), no
 * label already placed and no edge of the plot; a label with nowhere to go is dropped (its
 * point's tooltip still has the description). Without a way to measure text here, a label's box
 * is estimated from its length, generously, so a real one fits inside it.
 *
 * Deterministic and pure, so the panel's Vega-Lite spec and the exported SVG place labels alike
 * (each with its own geometry, LabelFrame).
 */
import type { ChartRow, RunPoint } from './chart-rows';

/** The plot's geometry in pixels, from its top left corner. */
export interface LabelFrame {
  width: number;
  height: number;
  /** Where an experiment number lies across the plot. */
  x(n: number): number;
  /** Where a metric value lies down the plot. */
  y(value: number): number;
  /** Where crashes (no metric) are pinned down the plot. */
  crashY: number;
  /** The most a label is drawn in (longer ones are cut with an ellipsis). */
  limit: number;
}

/** A label's offset from its point: it runs rightwards from dx > 0, leftwards from dx < 0, centred on dy. */
export interface LabelPlace {
  dx: number;
  dy: number;
}

/**
 * Estimated width of one character of a 10 px label: 0.8 em, Vega's own estimate where it cannot
 * measure text (headless), and more than a browser draws even in capitals, so a label fits its box.
 */
export const LABEL_CHAR_PX = 8;
/** A label's height at 10 px (Vega's text bounds), and the room kept clear around it. */
const LABEL_H = 11;
const LABEL_GAP = 1;
/** Half the size of each mark's box: keeps (size 90: radius 5.4), rings (70) and crosses (80), and a run's dot (14). */
const POINT_HALF = 5;
const RUN_HALF = 3;

/**
 * The places tried, in order, for a point in the left half of the plot: above right, above left,
 * below right, below left, right, left. A point in the right half tries them mirrored, so the
 * newest points' labels run leftwards, inside the plot.
 */
const SPOTS: ReadonlyArray<LabelPlace> = [
  { dx: 7, dy: -11 },
  { dx: -7, dy: -11 },
  { dx: 7, dy: 11 },
  { dx: -7, dy: 11 },
  { dx: 9, dy: 0 },
  { dx: -9, dy: 0 },
];

interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

function overlaps(a: Box, b: Box): boolean {
  return a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
}

function around(x: number, y: number, half: number): Box {
  return { x1: x - half, y1: y - half, x2: x + half, y2: y + half };
}

/** The box a label of `text` takes at `place` from a point at (x, y), with its clear margin. */
export function labelBox(text: string, x: number, y: number, place: LabelPlace, limit: number): Box {
  const width = Math.min(text.length * LABEL_CHAR_PX, limit);
  const x1 = place.dx > 0 ? x + place.dx : x + place.dx - width;
  const top = y + place.dy - LABEL_H / 2;
  return { x1: x1 - LABEL_GAP, y1: top - LABEL_GAP, x2: x1 + width + LABEL_GAP, y2: top + LABEL_H + LABEL_GAP };
}

/**
 * Each row with its label placed: `label_dx`/`label_dy` set where it goes, `label` null where it
 * fits nowhere. Labels are placed newest first, so the latest keep's is the last to be dropped.
 * Hidden rows draw nothing and are no obstacle.
 */
export function placeLabels(rows: readonly ChartRow[], runs: readonly RunPoint[], frame: LabelFrame): ChartRow[] {
  const out = rows.map(r => ({ ...r }));
  // Each mark's box, with the row it is the point of (a label clears every point but its own).
  const marks: Array<[Box, ChartRow | null]> = [];
  for (const r of out) {
    if (r.hidden) {
      continue;
    }
    if (r.status === 'crash') {
      marks.push([around(frame.x(r.n), frame.crashY, POINT_HALF), r]);
    } else if (r.value !== null) {
      marks.push([around(frame.x(r.n), frame.y(r.value), POINT_HALF), r]);
    }
  }
  for (const p of runs) {
    marks.push([around(frame.x(p.n), frame.y(p.metric), RUN_HALF), null]);
  }
  const placed: Box[] = [];
  const labelled = out.filter(r => r.label !== null && !r.hidden && r.value !== null).sort((a, b) => b.n - a.n);
  for (const row of labelled) {
    const x = frame.x(row.n);
    const y = frame.y(row.value as number);
    const mirrored = x > frame.width / 2;
    const spots = mirrored ? SPOTS.map(s => ({ dx: -s.dx, dy: s.dy })) : SPOTS;
    const spot = spots.find(s => {
      const box = labelBox(row.label as string, x, y, s, frame.limit);
      const inside = box.x1 >= 0 && box.x2 <= frame.width && box.y1 >= 0 && box.y2 <= frame.height;
      const clear = marks.every(([m, owner]) => owner === row || !overlaps(box, m));
      return inside && clear && !placed.some(p => overlaps(box, p));
    });
    if (spot) {
      row.label_dx = spot.dx;
      row.label_dy = spot.dy;
      placed.push(labelBox(row.label as string, x, y, spot, frame.limit));
    } else {
      row.label = null;
    }
  }
  return out;
}
