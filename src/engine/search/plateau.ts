/**
 * The plateau rule (docs/method.md, "Search"): after `plateau` experiments without a keep, the
 * engine branches from the best near-miss — the discarded experiment on the current best that came
 * closest to clearing the floor — for branchLength(plateau) experiments, each proposed from the
 * branch's files and judged against the global best as always. A keep ends the branch (the best
 * moved, through the near-miss: a fast-forward); else the branch runs out and the search returns
 * to the best. Everything is read from the journal's records (a branch experiment's move is
 * {kind: 'branch', of: [near-miss n]}, its parent_commit the near-miss's commit), so an engine
 * resumed after kill -9 continues the branch where it was.
 */
import type { ExperimentRecord } from '../../core/journal/journal';
import { branchLength } from '../../core/config/search';
import { nearMisses } from '../../core/rule/near-miss';
import type { Direction } from '../../core/rule/noise';

/** A branch to propose on: the near-miss it is from, its commit, and how many experiments it has left (this one included). */
export interface BranchPlan {
  of: number;
  base: string;
  left: number;
  why: string;
}

/** The branch the next proposal is on, or null: propose on the best. Pure: a function of the journal's records. */
export function branchPlan(
  history: readonly ExperimentRecord[],
  o: { plateau: number; direction: Direction; sigma: number | null; bestCommit: string },
): BranchPlan | null {
  if (o.plateau <= 0) return null;
  const length = branchLength(o.plateau);
  let lastKeep = -1;
  history.forEach((r, i) => {
    if (r.status === 'keep') lastKeep = i;
  });
  // Since the last keep: experiments without one, and the branch under way (its near-miss, base and length so far).
  let without = 0;
  let branch = null as { of: number; base: string; done: number } | null;
  const tried = new Set<number>();
  for (const r of history.slice(lastKeep + 1)) {
    // Stopped before it ran (a resumed engine proposes it again), or a proposal given up before any
    // edit (a rejected record with no move): not an experiment of the plateau or of the branch.
    if (r.status === 'interrupted' || (r.status === 'rejected' && !r.move)) continue;
    const of = r.move?.kind === 'branch' ? r.move.of?.[0] : undefined;
    if (of === undefined) {
      branch = null;
      without++;
      continue;
    }
    if (branch?.of !== of) branch = { of, base: r.parent_commit, done: 0 };
    tried.add(of);
    if (++branch.done >= length) {
      // The branch ran out without beating the best: back to the best, and a plateau counts anew.
      branch = null;
      without = 0;
    }
  }
  if (branch) {
    const left = length - branch.done;
    return {
      of: branch.of,
      base: branch.base,
      left,
      why: `branch from #${branch.of}, ${left} experiment${left > 1 ? 's' : ''} left`,
    };
  }
  if (without < o.plateau) return null;
  // The near-misses on the best as it is: their commit is the branch's base, a child of the best.
  const best = nearMisses(history, o.direction, o.sigma).find(
    m => m.record.parent_commit === o.bestCommit && !tried.has(m.record.n),
  );
  if (!best?.record.commit) return null;
  const by = best.z !== null ? `${best.z.toFixed(1)}σ` : `${best.gain.toPrecision(3)}`;
  return {
    of: best.record.n,
    base: best.record.commit,
    left: length,
    why: `${without} experiments without a keep: branching from #${best.record.n} (better than the best by ${by}, within noise) for ${length} experiments`,
  };
}
