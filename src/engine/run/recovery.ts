/**
 * What a run can still hand back when its git repository is gone (a training run deleted .git):
 * the best code, as the kept experiments' diffs from the commit the run started on. The journal
 * keeps each experiment's diff against its parent, so the chain of keeps from the best back to
 * the baseline, applied in order, rebuilds the best's editable files on any clone of the repository.
 */
import { experimentsOf, type ExperimentRecord, type JournalRecord } from '../../core/journal/journal';
import { Measurements } from '../../core/rule/measurements';
import { bestOf } from './loop-records';

export interface RecoveryPatch {
  /** Concatenated diffs, each after a comment line naming its experiment; `git apply` takes them in order. */
  text: string;
  /** The commit they apply to (in the repository before the run's branch). */
  base: string;
  /** The best commit they rebuild. */
  best: string;
}

/** The best's edits as one patch; null when there is no best or the best is the unchanged baseline. */
export function recoveryPatch(records: JournalRecord[]): RecoveryPatch | null {
  const exps = experimentsOf(records);
  const best = bestOf(exps, Measurements.of(records));
  if (!best) return null;
  const kept = new Map<string, ExperimentRecord>();
  for (const e of exps) {
    if (e.status === 'keep' && e.commit) kept.set(e.commit, e);
  }
  const chain: ExperimentRecord[] = [];
  // Each keep's parent is the best it was proposed on (with several workers too), so the walk ends at the baseline.
  for (
    let e = kept.get(best.commit);
    e && e.commit !== e.parent_commit && e.diff && chain.length <= exps.length;
    e = kept.get(e.parent_commit)
  ) {
    chain.unshift(e);
  }
  if (!chain.length) return null;
  const text = chain
    .map(e => `# experiment #${e.n} (${e.commit?.slice(0, 7)}): ${e.description.replace(/\s+/g, ' ')}\n${e.diff}`)
    .join('');
  return { text, base: chain[0].parent_commit, best: best.commit };
}
