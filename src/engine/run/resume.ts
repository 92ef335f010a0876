/**
 * Picking up an experiment a killed engine left mid-measurement: its proposal was journaled
 * with its start, its commit and runs with each run, so the resumed engine measures it on
 * from where it stopped — nothing recorded is lost or run again.
 */
import type { ExperimentStartRecord, JournalRecord, ProposalFacts } from '../../core/journal/journal';
import { ZERO_USAGE } from '../../core/journal/journal';
import type { PendingReview } from '../../core/step-mode/review';
import { pendingReviewOf } from '../../core/journal/run-state';
import type { Proposal } from '../proposers/types';

export interface Continuation {
  start: ExperimentStartRecord;
  /** The experiment's own commit (the baseline's: the code it measured). */
  commit: string;
  baseline: boolean;
  /** The proposal rebuilt from its start record (files stay in the commit); null for the baseline. */
  proposal: Proposal | null;
  /** Step mode: a proposal that was awaiting review, never committed; offered again as it was. */
  pending?: true;
}

/**
 * The experiment left awaiting review (step mode), as a continuation: the same number and the same
 * files (from the pending file, which the journal's review record vouches for), offered again.
 */
export function pendingContinuations(
  records: JournalRecord[],
  inFlight: ExperimentStartRecord[],
  pending: PendingReview | null,
): Continuation[] {
  const waiting = pendingReviewOf(records);
  const start = inFlight.find(s => s.n === waiting?.n && s.n === pending?.n);
  if (!start || !pending || records.some(r => r.type === 'run' && r.n === start.n)) return [];
  const p = start.proposal;
  return [
    {
      start,
      commit: start.parent_commit,
      baseline: false,
      pending: true,
      proposal: {
        description: pending.description,
        rationale: pending.rationale,
        files: pending.files,
        usage: p?.usage,
        cost_usd: p?.cost_usd,
        meta: p?.meta ?? pending.meta,
        ...(p?.move ? { move: p.move } : {}),
      },
    },
  ];
}

/** In-flight experiments with at least one recorded run of their own code, and what they proposed. */
export function continuations(records: JournalRecord[], inFlight: ExperimentStartRecord[]): Continuation[] {
  const out: Continuation[] = [];
  for (const start of inFlight) {
    const own = records.find(r => r.type === 'run' && r.n === start.n && r.purpose !== 'best');
    if (!own || own.type !== 'run') continue;
    // A start from before proposals were journaled with it cannot be rebuilt: it is recorded as interrupted.
    const baseline = start.proposal === undefined && start.description === 'baseline';
    if (!baseline && !start.proposal) continue;
    const p = start.proposal;
    out.push({
      start,
      commit: own.commit,
      baseline,
      proposal: p
        ? {
            description: start.description,
            rationale: p.rationale,
            files: {},
            usage: p.usage,
            cost_usd: p.cost_usd,
            meta: p.meta,
            ...(p.move ? { move: p.move } : {}),
          }
        : null,
    });
  }
  return out;
}

/** What a proposal's start record keeps of it. */
export function proposalFacts(p: Proposal, proposer: string, proposeS: number): ProposalFacts {
  return {
    rationale: p.rationale,
    proposer,
    propose_s: proposeS,
    usage: p.usage ?? { ...ZERO_USAGE },
    cost_usd: p.cost_usd ?? 0,
    ...(p.meta !== undefined ? { meta: p.meta } : {}),
    ...(p.move ? { move: p.move } : {}),
  };
}
