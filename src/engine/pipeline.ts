/**
 * Where the loop gets its next proposal. A slow proposer (Claude) drafts
 * proposal N+1 while experiment N trains, against the best as it stands; if N
 * is kept, the draft is re-applied on the new best by a three-way merge, and
 * proposed afresh only on a conflict. The accelerator then waits for the model
 * only when a draft is slower than a training run.
 */
import { mergeFiles } from './merge';
import type { Proposal, ProposalContext, Proposer } from './proposers/types';
import { ZERO_USAGE } from '../core/journal';
import { addUsage } from '../core/pricing';

interface Draft {
  controller: AbortController;
  baseCommit: string;
  baseFiles: Record<string, string>;
  outcome: Promise<{ proposal: Proposal | null } | { error: unknown }>;
}

export interface NextProposal {
  proposal: Proposal | null;
  /** How the proposal came about, for the rationale and the terminal. */
  source: 'fresh' | 'draft' | 'draft-merged' | 'draft-conflict';
}

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
    const outcome = this.proposer.propose({ ...ctx, signal }).then(
      proposal => ({ proposal }),
      error => ({ error }),
    );
    this.draft = { controller, baseCommit, baseFiles: ctx.files, outcome };
  }

  /** Stops a draft that is no longer wanted (the run is ending). */
  discard(): void {
    this.draft?.controller.abort('discarded');
    this.draft = null;
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
    // A conflict (or nothing left of the draft): ask again on the new best, and charge the wasted draft to it.
    const fresh = await this.proposer.propose(ctx);
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
