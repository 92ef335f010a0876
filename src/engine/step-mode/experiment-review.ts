/**
 * Step mode inside an experiment: between the checks and the commit, the applied proposal waits
 * for its reviewer (step-review.ts). A rejection ends the experiment unrun and uncommitted; an edit
 * puts the reviewer's files in the proposal's place after the same checks a proposal passes.
 */
import type { ExperimentRecord } from '../../core/journal/journal';
import { reviewerReason } from '../../core/step-mode/review';
import { countDiffLines } from '../git/git';
import { stateOf } from '../experiment/ledger';
import type { Proposal } from '../proposers/types';
import type { StepReview } from './step-review';
import type { ExperimentEnv } from '../experiment/experiment-env';
import { readRegularText } from '../workspace/workspace-files';

type Apply = (env: ExperimentEnv, proposal: Proposal) => Promise<{ problem: string | null; diff: string }>;

/**
 * Offers the applied proposal to the reviewer and waits. Returns the fields of a rejected
 * record, or null to go on and commit what is in the tree (the proposal, or the reviewer's edit).
 */
export async function awaitReview(
  env: ExperimentEnv & { review: StepReview },
  n: number,
  proposal: Proposal,
  record: ExperimentRecord,
  apply: Apply,
): Promise<Partial<ExperimentRecord> | null> {
  const { editable } = env.config;
  const read = (f: string) => readRegularText(env.dir, f);
  // The whole editable files as proposed (the tree has the proposal now): what an editor opens.
  const proposed: Proposal = { ...proposal, files: Object.fromEntries(editable.map(f => [f, read(f)])) };
  const offer = {
    n,
    proposal: proposed,
    diff: record.diff,
    proposer: env.proposerName,
    editable,
    tryEdit: async (files: Record<string, string>) => {
      const tried = await apply(env, { ...proposed, files: { ...proposed.files, ...files } });
      const m = env.ledger.measurements;
      const earlier = tried.problem ? null : m.decision(stateOf(env.dir, editable));
      const problem =
        tried.problem ??
        (tried.diff.trim() === '' ? 'the edit changes nothing against the best' : null) ??
        (earlier ? `the edited code is the same as #${earlier.n}'s, already measured` : null);
      if (problem) {
        // The proposal goes back in the tree, still awaiting review.
        await apply(env, proposed);
        return { problem, diff: record.diff };
      }
      return tried;
    },
  };
  const outcome = await env.review.review(offer);
  record.review = { action: outcome.action, source: outcome.source, waited_s: outcome.waited_s };
  if (outcome.action === 'reject') {
    return { status: 'rejected', reason: reviewerReason(outcome.note) };
  }
  if (outcome.action === 'edit') {
    const { added, removed } = countDiffLines(offer.diff);
    Object.assign(record, { diff: offer.diff, lines_added: added, lines_removed: removed });
  }
  return null;
}
