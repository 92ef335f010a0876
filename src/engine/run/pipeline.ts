/**
 * Where the loop gets its next proposal. A slow proposer (Claude) drafts
 * proposal N+1 while experiment N trains, against the best as it stands; if N
 * is kept, the draft is re-applied on the new best by a three-way merge, and
 * proposed afresh only on a conflict. The accelerator then waits for the model
 * only when a draft is slower than a training run. If N crashed, the draft (which never saw the
 * crash, its traceback, nor the offer to fix it) is dropped, stopped first when still at work, and
 * a fresh proposal made with the crash in its history.
 *
 * A draft is paid for whether or not it runs: one that conflicts or is dropped after a crash is
 * charged to the proposal made in its place (or, when that one fails, to the failure the loop
 * records), and one the run ends without using is handed back by discard() so that the loop
 * records what it cost.
 */
import { mergeFiles } from '../git/merge';
import { ProposalAbandoned, type Proposal, type ProposalContext, type Proposer } from '../proposers/types';
import { ZERO_USAGE, type ExperimentRecord, type Usage } from '../../core/journal/journal';
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
  source: 'fresh' | 'draft' | 'draft-merged' | 'draft-conflict' | 'draft-stale';
}

/** What a draft the loop will not run had cost, and what it was, for the ledger. */
export interface DraftCost {
  usage: Usage;
  cost_usd: number;
  meta?: unknown;
  description?: string;
  rationale?: string;
}

/**
 * A proposal that failed (the run stopped, or the proposer failed) after a draft it replaced had
 * been paid for: the error, with the draft's cost, so that the loop records it before it stops.
 */
export class ProposalFailed extends Error {
  constructor(
    readonly error: unknown,
    readonly draft: DraftCost,
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

  /**
   * Starts drafting the next proposal against `baseCommit` while an experiment trains. `prepare`,
   * when given, finishes the context first (the search's moves or a plateau branch's files, which
   * take git reads): the draft is registered at once, so next() never misses it.
   */
  startDraft(
    ctx: ProposalContext,
    baseCommit: string,
    prepare?: (ctx: ProposalContext) => Promise<{ ctx: ProposalContext; baseCommit: string } | null>,
  ): void {
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
    // A context that cannot be finished (a git read failed) drafts on the plain one: the best's files, no moves.
    const ready = prepare
      ? prepare(ctx).then(
          p => {
            if (!p) return ctx;
            draft.baseCommit = p.baseCommit;
            draft.baseFiles = p.ctx.files;
            return p.ctx;
          },
          () => ctx,
        )
      : Promise.resolve(ctx);
    draft.outcome = ready
      .then(c => this.proposer.propose({ ...c, signal }))
      .then(
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
    const outcome = await settledWithin(d.outcome);
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

  /**
   * The proposal for the best at `bestCommit` (whose files are ctx.files): the draft, merged if the
   * best moved, else a fresh one; a fresh one too when the experiment that trained while the draft
   * was made crashed (the draft is stopped if still at work, and its cost charged to the fresh one).
   */
  async next(ctx: ProposalContext, bestCommit: string): Promise<NextProposal> {
    const d = this.draft;
    this.draft = null;
    if (!d) {
      return { proposal: await this.proposer.propose(ctx), source: 'fresh' };
    }
    if (d.running !== undefined && crashed(ctx.history, d.running)) {
      const spent = await this.dropStale(d);
      if (spent !== 'kept') return this.instead(ctx, spent, 'draft-stale');
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
    return this.instead(ctx, costOf(draft), 'draft-conflict');
  }

  /**
   * A fresh proposal in place of a wasted draft, charged with what the draft cost (null: nothing
   * known to be billed); when it fails, the error carries that cost to what the loop records
   * (abandoned, stopped, or the run's end).
   */
  private async instead(
    ctx: ProposalContext,
    spent: DraftCost | null,
    source: 'draft-conflict' | 'draft-stale',
  ): Promise<NextProposal> {
    let fresh: Proposal | null;
    try {
      fresh = await this.proposer.propose(ctx);
    } catch (e) {
      throw spent ? chargeDraft(e, spent) : e;
    }
    if (fresh === null || !spent) {
      return { proposal: fresh, source };
    }
    const usage = addUsage(fresh.usage ?? ZERO_USAGE, spent.usage);
    return { proposal: { ...fresh, usage, cost_usd: (fresh.cost_usd ?? 0) + spent.cost_usd }, source };
  }

  /**
   * A draft made while an experiment that then crashed trained: stopped if still at work (it is
   * stale), and what it cost. 'kept' when it had ended on its own in an error (an abandonment the
   * loop records as such, which counts toward the stop after too many in a row), so that next()
   * handles it as before; the next proposal still sees the crash, which no prompt has shown.
   */
  private async dropStale(d: Draft): Promise<DraftCost | null | 'kept'> {
    if (d.settledAt === undefined) d.controller.abort('stale');
    const outcome = await settledWithin(d.outcome);
    if (!outcome) return null;
    if ('error' in outcome) {
      if (d.settled) return 'kept';
      return outcome.error instanceof ProposalAbandoned ? costOf(outcome.error) : null;
    }
    return outcome.proposal ? costOf(outcome.proposal) : null;
  }
}

/** Whether experiment `n` is in the history as a crash. */
function crashed(history: ExperimentRecord[], n: number): boolean {
  return history.some(r => r.n === n && r.status === 'crash');
}

/** The outcome, or null when a proposer that ignores the abort keeps it past DISCARD_WAIT_MS. */
async function settledWithin(outcome: Promise<Outcome>): Promise<Outcome | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>(resolve => {
    timer = setTimeout(() => resolve(null), DISCARD_WAIT_MS);
    timer.unref?.();
  });
  try {
    return await Promise.race([outcome, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** What a finished draft, or one abandoned mid-way, had cost. */
function costOf(p: Proposal | ProposalAbandoned): DraftCost {
  if (p instanceof ProposalAbandoned) return { usage: p.usage, cost_usd: p.cost_usd, meta: p.meta };
  return {
    usage: p.usage ?? ZERO_USAGE,
    cost_usd: p.cost_usd ?? 0,
    meta: p.meta,
    description: p.description,
    rationale: p.rationale,
  };
}

/** The error of a proposal made in place of a wasted draft, carrying the draft's cost too. */
function chargeDraft(e: unknown, spent: DraftCost): Error {
  if (e instanceof ProposalAbandoned) {
    return new ProposalAbandoned(e.message, addUsage(e.usage, spent.usage), e.cost_usd + spent.cost_usd, e.meta);
  }
  return new ProposalFailed(e, spent);
}
