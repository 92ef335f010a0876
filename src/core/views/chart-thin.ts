/**
 * A long run's chart in bins: above MAX_POINTS points its discards and crashes (and, past
 * MAX_KEEP_POINTS, its keeps) are drawn as one row per bin, so the chart stays legible and quick.
 */
import type { Direction } from '../rule/noise';
import type { ChartRow } from './chart-rows';

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
