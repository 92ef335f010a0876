/** The keep rule: a result is kept only when it strictly beats the best so far. */

export type Direction = 'lower' | 'higher';

/** True when `candidate` beats `best` in the given direction (a first result always does). */
export function isImprovement(candidate: number, best: number | null, direction: Direction): boolean {
  if (best === null) {
    return true;
  }
  return direction === 'lower' ? candidate < best : candidate > best;
}

/** Signed change against the best before (negative is better when lower is better). */
export function deltaOf(candidate: number | null, best: number | null): number | null {
  return candidate === null || best === null ? null : candidate - best;
}
