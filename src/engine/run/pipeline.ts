/**
 * Where the loop gets its next proposal. A slow proposer (Claude) drafts
 * proposal N+1 while experiment N trains, against the best as it stands; if N
 * is kept, the draft is re-applied on the new best by a three-way merge, and
 * proposed afresh only on a conflict. The accelerator then waits for the model
 * only when a draft is slower than a training run.
 *
 * A draft is paid for whether or not it runs: one that conflicts is charged to the proposal made
 * in its place (or, when that one fails, to the failure the loop records), and one the run ends
 * without using is handed back by discard() so that the loop records what it cost.
 */
import { mergeFiles } from '../git/merge';
import { ProposalAbandoned, type Proposal, type ProposalContext, type Proposer } from '../proposers/types';
import { ZERO_USAGE, type Usage } from '../../core/journal/journal';
import { addUsage } from '../../core/config/pricing';

type Outcome = { proposal: Proposal | null } | { error: unknown };

interface Draft {
  controller: AbortController;
  baseCommit: string;
  baseFiles: Record<string, string>;
  outcome: Promise<Outcome>;
  /** Set once the outcome is in on its own, not because the run stopped or discarded it. */
  settled: boolean;
  startedAt: number;
  settledAt?: number;
  /** The experiment that was training while it was drafted. */
  running?: number;
}

export interface NextProposal {
  proposal: Proposal | null;
  /** How the proposal came about, for the rationale and the terminal. */
  source: 'fresh' | 'draft' | 'draft-merged' | 'draft-conflict';
}

/**
 * A proposal that failed (the run stopped, or the proposer failed) after a draft it replaced had
 * been paid for: the error, with the draft's cost, so that the loop records it before it stops.
 */
export class ProposalFailed extends Error {
  constructor(
    readonly error: unknown,
    readonly draft: Proposal,
    readonly usage: Usage,
    readonly cost_usd: number,
  ) {
    super((error as Error)?.message ?? String(error), { cause: error });
    this.name = 'ProposalFailed';
  }
}

/** A draft the run ended without using, as discard() hands it back for the ledger. */
export interface DiscardedDraft {
  /** A finished proposal, or the ProposalAbandoned it ended in (stopped mid-way, or given up). */
  outcome: Proposal | ProposalAbandoned;
  /** Whether it had ended on its own before the run stopped or discarded it. */
  settled: boolean;
  baseCommit: string;
  running?: number;
  proposeSeconds: number;
}

/** How long discard() waits for a stopped draft to say what it cost; a proposer that ignores the abort is not waited for. */
const DISCARD_WAIT_MS = 5000;

export class ProposalSource {
  private draft: Draft | null = null;

  constructor(
    private readonly proposer: Proposer,
    private readonly enabled: boolean,
  ) {}

  /** Whether drafts are made at all (a pipelined proposer, and not turned off). */
  get pipelining(): boolean {
    return this.enabled && Boolean(this.proposer.pipelined);
  }

  /** Starts drafting the next proposal against `baseCommit` while an experiment trains. */
  startDraft(ctx: ProposalContext, baseCommit: string): void {
    if (!this.pipelining) {
      return;
    }
    // Its own controller, so a run that ends can stop a draft nobody will use.
    const controller = new AbortController();
    const signal = ctx.signal ? AbortSignal.any([ctx.signal, controller.signal]) : controller.signal;
    const draft: Draft = {
      controller,
      baseCommit,
      baseFiles: ctx.files,
      settled: false,
      startedAt: Date.now(),
      running: ctx.running?.n,
      outcome: Promise.resolve<Outcome>({ proposal: null }),
    };
    const settle = (o: Outcome): Outcome => {
      // An outcome that comes in once the stop (or a discard) aborted the draft is the stop's doing.
      draft.settled = !signal.aborted;
      draft.settledAt = Date.now();
      return o;
    };
    draft.outcome = this.proposer.propose({ ...ctx, signal }).then(
      proposal => settle({ proposal }),
      error => settle({ error }),
    );
    this.draft = draft;
  }

  /**
   * Stops a draft that is no longer wanted (the run is ending) and hands back what it cost: a
   * finished proposal, or the ProposalAbandoned it ended in; null when nothing is known to be billed.
   */
  async discard(): Promise<DiscardedDraft | null> {
    const d = this.draft;
    this.draft = null;
    if (!d) return null;
    const settled = d.settled;
    d.controller.abort('discarded');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>(resolve => {
      timer = setTimeout(() => resolve(null), DISCARD_WAIT_MS);
      timer.unref?.();
    });
    const outcome = await Promise.race([d.outcome, late]);
    clearTimeout(timer);
    if (!outcome) return null;
    // Any other error says nothing of what was billed.
    const got = 'error' in outcome ? outcome.error : outcome.proposal;
    if (got === null || ('error' in outcome && !(got instanceof ProposalAbandoned))) return null;
    return {
      outcome: got as Proposal | ProposalAbandoned,
      settled,
      baseCommit: d.baseCommit,
      running: d.running,
      proposeSeconds: ((d.settledAt ?? Date.now()) - d.startedAt) / 1000,
    };
  }

  /** The proposal for the best at `bestCommit` (whose files are ctx.files): the draft, merged if the best moved, else a fresh one. */
  async next(ctx: ProposalContext, bestCommit: string): Promise<NextProposal> {
    const d = this.draft;
    this.draft = null;
    if (!d) {
      return { proposal: await this.proposer.propose(ctx), source: 'fresh' };
    }
    const outcome = await d.outcome;
    if ('error' in outcome) {
      throw outcome.error;
    }
    const draft = outcome.proposal;
    if (draft === null) {
      // The draft did not know the last result; with it, the proposer may still find something.
      return { proposal: await this.proposer.propose(ctx), source: 'fresh' };
    }
    if (d.baseCommit === bestCommit) {
      return { proposal: draft, source: 'draft' };
    }
    const merged = await mergeFiles(d.baseFiles, ctx.files, draft.files);
    const changed = merged.ok && Object.entries(merged.files).some(([f, text]) => text !== ctx.files[f]);
    if (merged.ok && changed) {
      const rationale = `${draft.rationale} (Drafted while the previous experiment trained; re-applied on top of it, which was kept.)`;
      return { proposal: { ...draft, files: merged.files, rationale }, source: 'draft-merged' };
    }
    // A conflict (or nothing left of the draft): ask again on the new best, and charge the wasted
    // draft to it, or to what the loop records when it fails (abandoned, stopped, or the run's end).
    let fresh: Proposal | null;
    try {
      fresh = await this.proposer.propose(ctx);
    } catch (e) {
      throw chargeDraft(e, draft);
    }
    if (fresh === null) {
      return { proposal: null, source: 'draft-conflict' };
    }
    const usage = addUsage(fresh.usage ?? ZERO_USAGE, draft.usage ?? ZERO_USAGE);
    return {
      proposal: { ...fresh, usage, cost_usd: (fresh.cost_usd ?? 0) + (draft.cost_usd ?? 0) },
      source: 'draft-conflict',
    };
  }
}

/** The error of a proposal made in place of a conflicting draft, carrying the draft's cost too. */
function chargeDraft(e: unknown, draft: Proposal): Error {
  const usage = draft.usage ?? ZERO_USAGE;
  const cost = draft.cost_usd ?? 0;
  if (e instanceof ProposalAbandoned) {
    return new ProposalAbandoned(e.message, addUsage(e.usage, usage), e.cost_usd + cost, e.meta);
  }
  return new ProposalFailed(e, draft, usage, cost);
}
