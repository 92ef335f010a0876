/**
 * The progress chart following the panel's experiment filter (src/lab/panel/list/experiment-filter.ts).
 * Pure, so src/core/views/chart.ts can apply it to the rows it made: the rows are filtered after
 * chartRows computed them from the whole journal, never by handing the chart fewer records, since
 * the running best is the run's whatever is shown (a best re-measured while judging a discard
 * counts towards its estimate, and a crashes-only view still needs the best line).
 */

/**
 * The chart's rows (ChartRow) or per-run dots (RunPoint) of the experiments shown: those whose n is
 * in `shown`; all of them when `shown` is null (the filter hides nothing). Each row keeps its
 * `best`, computed from the whole run, so the best line stays the run's.
 */
export function filterChartRows<T extends { n: number }>(rows: readonly T[], shown: ReadonlySet<number> | null): T[] {
  return shown === null ? [...rows] : rows.filter(row => shown.has(row.n));
}
