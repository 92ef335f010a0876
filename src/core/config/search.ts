/**
 * How the search goes past greedy (docs/method.md, "Search"): the front matter's `search` and
 * `plateau`. Data only: the browser imports run-options.ts, which declares the keys with these.
 */

/** tree: the engine prepares moves and branches on a plateau; greedy: every proposal from the best. */
export const SEARCH_MODES = ['tree', 'greedy'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];
export const DEFAULT_SEARCH: SearchMode = 'tree';

/** Experiments without a keep before the engine branches from the best near-miss; 0: never. */
export const DEFAULT_PLATEAU = 12;

/** How many experiments a plateau's branch lasts: derived from `plateau`, so one key says both. */
export function branchLength(plateau: number): number {
  return Math.max(2, Math.round(plateau / 2));
}
