/**
 * Propose, the method's first step: the lane's next job — an experiment a killed engine left in
 * flight, else a fresh proposal on the best as it stands (re-applied on a best that moved while
 * it was made) — with what the proposer is told, what a proposal cost when it never ran, and,
 * with one worker and a pipelined proposer, the next draft made while an experiment trains.
 */
import { ZERO_USAGE } from '../../core/journal/journal';
import { noiseFacts } from '../experiment/ledger';
import { abandonedRecord, billed, unrunRecord, type Best, type Unrun } from './loop-records';
import { resumedFor, type Lane } from './lanes';
import { LoopState, type Job } from './loop-state';
import { ProposalFailed } from './pipeline';
import { ProposalAbandoned, type MoveCandidate, type Proposal, type ProposalContext } from '../proposers/types';
import { branchLength } from '../../core/config/search';
import { MoveBuilder } from '../search/moves';
import { branchPlan, type BranchPlan } from '../search/plateau';
import { runFacts } from '../proposers/run-facts';
import { filesAt, rebaseProposal } from './rebase-proposal';
import { currentProgramBody } from '../workspace/workspace';
import { notRegularProblem, readRegularText } from '../workspace/workspace-files';

/** What an abandoned (or stopped) proposal had cost, for its record. */
function spentOf(e: ProposalAbandoned): Unrun {
  return { usage: e.usage, cost_usd: e.cost_usd, meta: e.meta };
}

/** A finished proposal that never ran, for its record. */
function unrunOf(p: Proposal): Unrun {
  return {
    usage: p.usage ?? ZERO_USAGE,
    cost_usd: p.cost_usd ?? 0,
    meta: p.meta,
    description: p.description,
    rationale: p.rationale,
  };
}

/** The loop's propose step, on the state it shares; RunLoop (loop.ts) runs what it hands over. */
export abstract class Proposing extends LoopState {
  /** Builds the prepared moves (search: tree), remembering what it built for the best. */
  private moves: MoveBuilder | undefined;

  /** The lane's next job: a resumed experiment, else a fresh proposal. */
  protected async take(lane: Lane): Promise<Job | 'stop' | 'wait' | 'retry'> {
    if (this.halted() || !this.best) return 'stop';
    // A resumed experiment goes back to its own worker when that worker still exists.
    const mine = resumedFor(this.resumed, lane, this.o.executors.length);
    const c = mine >= 0 ? this.resumed.splice(mine, 1)[0] : undefined;
    if (c) {
      if (c.proposal) this.proposed++;
      // A proposal left awaiting review was never committed: it is offered again on the best.
      const pending = c.pending === true && c.proposal !== null;
      const files = pending
        ? await this.filesOfBest(lane, this.best)
        : await filesAt(this.main, this.best.commit, this.o.config.editable);
      this.inFlight.set(c.start.n, {
        n: c.start.n,
        worker: lane.k,
        description: c.start.description,
        diff: '',
        meta: c.proposal?.meta,
        cost: 0,
      });
      return {
        n: c.start.n,
        proposal: c.proposal,
        from: pending ? this.best.commit : c.commit,
        parent: this.best,
        files,
        proposeSeconds: c.start.proposal?.propose_s ?? 0,
        // One left awaiting review is offered again as a fresh proposal (the reviewer requires it), not resumed.
        ...(pending ? {} : { resume: c }),
      };
    }
    return this.propose(lane);
  }

  /** A fresh proposal on the best as it stands, numbered and started; or why there is none now. */
  protected async propose(lane: Lane): Promise<Job | 'stop' | 'wait' | 'retry'> {
    if (!this.best) return 'stop';
    const { proposer, config } = this.o;
    // A result that lands meanwhile moves the best: then again, so the proposer sees the best as it is.
    let best: Best;
    let files: Record<string, string>;
    do {
      best = this.best;
      files = await this.filesOfBest(lane, best);
    } while (this.best !== null && this.best.commit !== best.commit);
    // Past greedy (src/engine/search/): on a plateau's branch, from the near-miss's files; else the moves prepared on the best.
    const plan = this.branchPlanFor(lane, best);
    if (plan) files = await filesAt(this.main, plan.base, config.editable);
    const ctx = this.context(lane, files, best);
    if (plan) ctx.start = { n: plan.of, kind: 'branch', left: plan.left, why: plan.why };
    else if (config.search === 'tree') ctx.moves = await this.movesFor(best);
    if (this.o.maxDollars !== undefined) {
      const spent = this.spent();
      const estimate = proposer.estimateNextCost?.(ctx) ?? 0;
      if (spent + estimate > this.o.maxDollars) {
        this.stopped = {
          reason: 'budget',
          message: `spent $${spent.toFixed(4)} of --max-dollars ${this.o.maxDollars}; the next proposal would cost about $${estimate.toFixed(4)}`,
        };
        return 'stop';
      }
    }
    this.emitFor(lane, 'phase', this.next, 'propose', '');
    const started = Date.now();
    let proposal: Proposal | null;
    try {
      proposal = (await this.source.next(ctx, plan?.base ?? best.commit)).proposal;
    } catch (e) {
      // What was billed for it, when the error says (a proposal abandoned or stopped mid-way, a draft wasted).
      const spent: Unrun | null =
        e instanceof ProposalAbandoned ? spentOf(e) : e instanceof ProposalFailed ? { ...e.draft } : null;
      const proposeS = (Date.now() - started) / 1000;
      if (this.signal.aborted) {
        // Stopped while proposing: what the proposal had cost is recorded (interrupted), and the run ends.
        if (spent) this.recordUnrun(lane, best.commit, spent, proposeS, this.stoppedWhileProposing());
        return 'stop';
      }
      if (e instanceof ProposalAbandoned) {
        // The model gave up (too many turns or failed edits): record what it cost and try again.
        const record = abandonedRecord(this.next++, best, e, proposer.name, (Date.now() - started) / 1000);
        if (this.several) record.worker = lane.k;
        this.proposed++;
        this.record(record);
        return 'retry';
      }
      const message = `the ${proposer.name} proposer failed: ${(e as Error).message}`;
      // A draft paid for and then wasted (the proposal made in its place failed): its cost stays in the ledger.
      if (spent) this.recordUnrun(lane, best.commit, spent, proposeS, message);
      this.fail(message);
      return 'stop';
    }
    if (this.signal.aborted) {
      // It came back as the run was stopped: never run, but paid for.
      if (proposal) {
        this.recordUnrun(
          lane,
          best.commit,
          unrunOf(proposal),
          (Date.now() - started) / 1000,
          this.stoppedWhileProposing(),
        );
      }
      return 'stop';
    }
    if (proposal === null) {
      if (this.inFlight.size === 0) {
        this.stopped = { reason: 'exhausted', message: `the ${proposer.name} proposer has nothing left to try` };
        return 'stop';
      }
      // What is in flight may change the best, or free its ideas: ask again when one finishes.
      return 'wait';
    }
    // A slow proposal may have seen the best move: re-applied on the new one; on a conflict it runs
    // from the best it was made on (and is judged, like every result, against the best when it lands).
    let parent = best;
    for (let tries = 0; this.best !== null && this.best.commit !== parent.commit && tries < 3; tries++) {
      const now: Best = this.best;
      const onto = await filesAt(this.main, now.commit, config.editable);
      const rebased = await rebaseProposal(proposal, files, onto);
      if (!rebased) break;
      [proposal, files, parent] = [rebased, onto, now];
    }
    // A branch's experiment starts from the near-miss's commit, and is judged against the best as always.
    if (plan) proposal = { ...proposal, move: { kind: 'branch', of: [plan.of] } };
    const from = plan?.base ?? parent.commit;
    const n = this.next++;
    this.proposed++;
    const proposeSeconds = (Date.now() - started) / 1000;
    this.start(n, lane, from, proposal.description, proposal.meta, proposal.cost_usd ?? 0, proposal, proposeSeconds);
    return { n, proposal, from, parent, files, proposeSeconds };
  }

  /**
   * The plateau's branch the next proposal is on (search/plateau.ts), or null: on the best. One
   * worker only: with several, each worker's tree starts from the best, and the branch would be one
   * worker's while the others went on from the best (docs/method.md says so).
   */
  protected branchPlanFor(lane: Lane, best: Best, announce = true): BranchPlan | null {
    const { config } = this.o;
    if (this.several || config.search !== 'tree' || !config.plateau) return null;
    const plan = branchPlan(this.history, {
      plateau: config.plateau,
      direction: config.direction,
      sigma: this.ledger.measurements.sigma().sigma,
      bestCommit: best.commit,
    });
    if (announce && plan && plan.left === branchLength(config.plateau)) this.emitFor(lane, 'note', plan.why);
    return plan;
  }

  /**
   * A draft's context past greedy, as propose() builds it (src/engine/search/): on a plateau's
   * branch, the near-miss's files and where it starts; else the moves prepared on the best. The
   * branch may end, or start, with the result of the experiment training now: then next() re-applies
   * the draft on the base it finds, as it does when the best moves.
   */
  private async draftSearch(
    lane: Lane,
    ctx: ProposalContext,
  ): Promise<{ ctx: ProposalContext; baseCommit: string } | null> {
    const best = this.best;
    if (!best || this.o.config.search !== 'tree') return null;
    const plan = this.branchPlanFor(lane, best, false);
    if (plan) {
      const files = await filesAt(this.main, plan.base, this.o.config.editable);
      const start = { n: plan.of, kind: 'branch' as const, left: plan.left, why: plan.why };
      return { ctx: { ...ctx, files, start }, baseCommit: plan.base };
    }
    return { ctx: { ...ctx, moves: await this.movesFor(best) }, baseCommit: best.commit };
  }

  /** The moves prepared on the best (search/moves.ts): built once per best commit and state, with few git calls. */
  protected async movesFor(best: Best): Promise<MoveCandidate[]> {
    this.moves ??= new MoveBuilder(this.main, this.o.config.editable);
    const taken = new Set<string>();
    for (const r of this.history) if (r.state) taken.add(r.state);
    taken.add(best.state);
    return this.moves.build({
      history: this.history,
      best,
      direction: this.o.config.direction,
      sigma: this.ledger.measurements.sigma().sigma,
      taken,
    });
  }

  /**
   * The best's editable files as the proposal sees them. A worker's branch is put on the best first,
   * so a resume after kill -9 knows a commit on top of it as this experiment's; one worker's folder
   * is there already, and its files are read from disk without asking git.
   */
  protected async filesOfBest(lane: Lane, best: Best): Promise<Record<string, string>> {
    const { editable } = this.o.config;
    if (!this.several) {
      // A link or FIFO a run left in a file's place is never read (its target could be anything, and
      // the proposer would send it away): the best's own text is in git, and the edit is refused.
      if (editable.some(f => notRegularProblem(lane.dir, f) !== null)) return filesAt(this.main, best.commit, editable);
      return Object.fromEntries(editable.map(f => [f, readRegularText(lane.dir, f)]));
    }
    await lane.repo.resetHard(best.commit);
    return filesAt(this.main, best.commit, editable);
  }

  /** What a proposer is told: the files, the history, program.md as it is now, the noise and the run's facts. */
  protected context(lane: Lane, files: Record<string, string>, best: Best | null): ProposalContext {
    const { config } = this.o;
    const ctx: ProposalContext = {
      // program.md as the researcher has it now in the workspace folder (edits reach the next proposal).
      workdir: lane.dir,
      files,
      history: [...this.history],
      program: currentProgramBody(this.o.dir, this.o.programBody),
      metric: config.metric,
      direction: config.direction,
      seed: this.o.seed,
      signal: this.signal,
      noise: noiseFacts(config, this.ledger.measurements, best),
      // What the run is and has left, for a proposer that tells its model (the claude proposer's facts).
      run: runFacts({
        config,
        executor: this.o.executors[lane.k - 1].name,
        workers: this.o.executors.length,
        maxExperiments: this.o.maxExperiments,
        proposed: this.proposed,
        deadline: this.o.deadline,
        maxDollars: this.o.maxDollars,
        spentUsd: this.spent(),
        env: this.o.devices[lane.k - 1],
      }),
      // The reviewer's rules (a knob a note names is left alone) hold for the rest of the run.
      reviewNotes: [...(this.review?.notes ?? this.journalNotes)],
    };
    if (this.several && best) {
      ctx.inFlight = [...this.inFlight.values()].map(({ cost: _cost, ...e }) => e);
      ctx.bestCommit = best.commit;
    }
    return ctx;
  }

  /** Dollars spent so far: the experiments recorded and the proposals in flight. */
  protected spent(): number {
    return (
      this.history.reduce((s, r) => s + r.cost_usd, 0) + [...this.inFlight.values()].reduce((s, e) => s + e.cost, 0)
    );
  }

  /** Drafts the next proposal while this experiment trains (one worker, a pipelined proposer), unless this run is the last. */
  protected draft(lane: Lane, job: Job, description: string, diff: string): void {
    const affordable =
      this.o.maxDollars === undefined ||
      this.spent() + (this.o.proposer.estimateNextCost?.(this.context(lane, job.files, this.best)) ?? 0) * 2 <=
        this.o.maxDollars;
    const more = this.o.maxExperiments === undefined || this.proposed < this.o.maxExperiments;
    if (this.source.pipelining && more && affordable && Date.now() < this.o.deadline) {
      // The running proposal's meta says what its prompt showed and taught (claude/unseen.ts) and whether it wrote the notes.
      const meta = job.proposal?.meta;
      const running = { n: job.n, description, diff, ...(meta !== undefined ? { meta } : {}) };
      const ctx = { ...this.context(lane, job.files, this.best), running };
      // Against the best as it stands (during the baseline: the code it runs), or the branch it is on.
      this.source.startDraft(ctx, this.best?.commit ?? job.from, c => this.draftSearch(lane, c));
    }
  }

  /**
   * The draft the run ends without (stopped while an experiment trained, or the run is over): a
   * finished one, or one the stop cut short, is recorded as interrupted with what it cost; one
   * abandoned before the end, as the loop would have recorded it (rejected).
   */
  protected async recordDiscardedDraft(lane: Lane): Promise<void> {
    const d = await this.source.discard();
    if (!d) return;
    const { proposer } = this.o;
    const e = d.outcome;
    if (e instanceof ProposalAbandoned && d.settled && this.best && billed(e)) {
      this.proposed++;
      this.record(abandonedRecord(this.next++, this.best, e, proposer.name, d.proposeSeconds));
      return;
    }
    const drafted = d.running !== undefined ? `drafted while #${d.running} trained; ` : '';
    const why = !(e instanceof ProposalAbandoned) ? 'not run' : d.settled ? e.message : 'stopped while proposing';
    const spent = e instanceof ProposalAbandoned ? spentOf(e) : unrunOf(e);
    this.recordUnrun(
      lane,
      d.baseCommit,
      spent,
      d.proposeSeconds,
      `${drafted}${why}: the run ended (${this.endReason()})`,
    );
  }

  /** Journals a proposal that was paid for and never ran (interrupted), if it was billed anything. */
  protected recordUnrun(lane: Lane, parentCommit: string, spent: Unrun, proposeS: number, reason: string): void {
    if (!billed(spent)) return;
    const record = unrunRecord(this.next++, parentCommit, this.best, spent, this.o.proposer.name, proposeS, reason);
    if (this.several) record.worker = lane.k;
    // Interrupted, never run: not one of the run's experiments (experimentsMade).
    this.record(record);
  }

  /** Why a proposal in flight was cut short: the user's stop, or another worker's failure. */
  protected stoppedWhileProposing(): string {
    return this.fatal ? `the run stopped while proposing: ${this.fatal}` : 'stopped by the user while proposing';
  }
}
