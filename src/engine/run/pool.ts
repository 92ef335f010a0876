/**
 * The loop, for one worker or N: propose → run → record, on each lane, until a stop
 * condition. One worker works in the workspace folder itself (and, with a slow proposer,
 * drafts the next proposal while an experiment trains: pipelining); several work in git
 * worktrees, each with its own executor, and the others train while one waits for a proposal.
 *
 * One global best: the branch `autoresearch/<tag>`, checked out in the workspace folder. Every
 * proposal starts from it as it is at that moment, and a result is kept only if it beats it as
 * it is when the result lands (the noise-aware rule, measured in experiment.ts/measure.ts).
 * With several workers the kept commit itself becomes the tip of the branch: a fast-forward when
 * the best did not move meanwhile, else a sideways move to the new keep, which beat the one that
 * landed in between — re-applying it would make a commit nobody measured. Numbers are allocated
 * as proposals arrive, so they are unique and in order.
 */
import * as fs from 'node:fs';
import { budgetWarning } from '../../core/rule/budget-check';
import type { ExperimentRecord, JournalRecord, RunConfig, RunEndRecord, RunPurpose } from '../../core/journal/journal';
import { experimentsOf, ZERO_USAGE } from '../../core/journal/journal';
import { reviewNotesOf, type ReviewNote } from '../../core/step-mode/knob-notes';
import { noiseRuleOf } from '../../core/rule/noise';
import { sandboxOf } from '../../core/config/sandbox';
import { readEngineInfo, setRunningGroup, setRunningKernel } from './engine-lock';
import type { Executor } from '../executor/types';
import { rejudge, runExperiment } from '../experiment/experiment';
import { MISSING_MODULE } from '../experiment/measure';
import { Repo } from '../git/git';
import type { JournalStore } from '../store/journal-store';
import type { EmitLoopEvent, LaneEvents, LoopEvents, Phase } from './loop-events';
import type { LogCapture } from '../experiment/log-capture';
import { Ledger, noiseFacts } from '../experiment/ledger';
import {
  abandonedRecord,
  bestOf,
  billed,
  experimentsMade,
  interruptedRecord,
  stopReason,
  unrunRecord,
  type Best,
  type Unrun,
} from './loop-records';
import { EventCount, Mutex } from './mutex';
import { ProposalFailed, ProposalSource } from './pipeline';
import {
  ProposalAbandoned,
  type InFlight,
  type Proposal,
  type ProposalContext,
  type Proposer,
} from '../proposers/types';
import { runFacts } from '../proposers/run-facts';
import { filesAt, rebaseProposal } from './rebase-proposal';
import { proposalFacts, type Continuation } from './resume';
import type { ResultsFile } from '../store/results-file';
import { ReviewPostponed, StepReview, type Asker } from '../step-mode/step-review';
import { currentProgramBody, runPaths, UserError } from '../workspace/workspace';
import { createWorktrees, removeWorktrees, worktreesRoot } from '../git/worktrees';
import { notRegularProblem, openAppend, readRegularText } from '../workspace/workspace-files';

export interface PoolOptions {
  dir: string;
  tag: string;
  branch: string;
  config: RunConfig;
  journal: JournalStore;
  python: string;
  proposer: Proposer;
  programBody: string;
  readonlyHashes: Record<string, string>;
  seed: number;
  /** One per worker, worker K's at K-1; likewise its extra environment. */
  executors: Executor[];
  devices: Array<Record<string, string>>;
  signal: AbortSignal;
  /** The run's experiments in all, those of earlier sessions included (as experimentsMade counts them). */
  maxExperiments?: number;
  /** Epoch ms after which no experiment starts. */
  deadline: number;
  maxDollars?: number;
  /** Draft the next proposal while an experiment trains (one worker, a pipelined proposer). */
  pipeline: boolean;
  /** Experiments a killed engine left mid-measurement, measured on first. */
  resumed: Continuation[];
  logHeadBytes?: number;
  logTailBytes?: number;
  /** results.tsv, checked against the journals before each row. */
  results: ResultsFile;
  /** Step mode's in-process reviewer (the terminal's prompt); decision files are always read. */
  asker?: Asker;
  emit: EmitLoopEvent;
}

/** Where one worker works: the workspace folder itself (one worker), or its worktree. */
interface Lane {
  k: number;
  dir: string;
  repo: Repo;
  /** When its previous run ended, for idle_s. */
  lastRunEnd: number;
}

interface Job {
  n: number;
  proposal: Proposal | null;
  /** The commit the experiment starts from, and the best it was proposed against (null for the baseline). */
  from: string;
  parent: Best | null;
  /** The files the proposal was made against (the next draft starts from them). */
  files: Record<string, string>;
  proposeSeconds: number;
  resume?: Continuation;
}

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

/** Runs the loop until a stop condition; writes and returns the run_end record. */
export async function runPool(o: PoolOptions, records: JournalRecord[]): Promise<RunEndRecord> {
  return new Pool(o, records).run();
}

class Pool {
  private best: Best | null;
  private next: number;
  /** Experiments of the run so far, over every session: --max-experiments is the run's in all. */
  private proposed: number;
  private readonly several: boolean;
  /** Experiments finished: a worker whose proposer had nothing waits for the next one. */
  private readonly finished = new EventCount();
  private readonly inFlight = new Map<number, InFlight & { cost: number }>();
  private stopped: { reason: RunEndRecord['reason']; message: string | null } | null = null;
  private fatal: string | null = null;
  private readonly proposals = new Mutex();
  private readonly gitLock = new Mutex();
  private readonly main: Repo;
  /** Aborted by the user's signal, or by a fatal error in one worker so the others stop too. */
  private readonly internal = new AbortController();
  private readonly signal: AbortSignal;
  private readonly history: ExperimentRecord[];
  private readonly ledger: Ledger;
  private readonly source: ProposalSource;
  private readonly resumed: Continuation[];
  /** Step mode's reviewer: every one-worker run has one, as step mode may be switched on while it goes on; null with several, mostly. */
  private readonly review: StepReview | null;
  /** The notes of the review decisions journaled before this engine (a resumed run's). */
  private readonly journalNotes: ReviewNote[];

  constructor(
    private readonly o: PoolOptions,
    records: JournalRecord[],
  ) {
    this.several = o.executors.length > 1;
    this.history = experimentsOf(records);
    this.journalNotes = reviewNotesOf(records);
    this.proposed = experimentsMade(records);
    this.ledger = new Ledger(o.journal, records);
    this.best = this.currentBest();
    this.next =
      Math.max(-1, ...records.filter(r => r.type === 'experiment' || r.type === 'experiment_start').map(r => r.n)) + 1;
    this.main = new Repo(o.dir, this.several ? this.gitLock : undefined);
    this.signal = AbortSignal.any([o.signal, this.internal.signal]);
    this.signal.addEventListener('abort', () => this.finished.wakeAll(), { once: true });
    this.source = new ProposalSource(o.proposer, o.pipeline && !this.several);
    this.resumed = [...o.resumed];
    const left = this.resumed.filter(c => c.pending);
    const claim = readEngineInfo(o.dir);
    // With several workers, only to offer again a proposal left awaiting review: step mode is never switched on for them.
    this.review =
      this.several && left.length === 0
        ? null
        : new StepReview({
            root: runPaths(o.dir, o.tag).root,
            journal: o.journal,
            signal: this.signal,
            asker: o.asker,
            note: text => o.emit('note', text),
            enabled: o.config.step === true,
            firstN: Math.max(1, Math.min(this.next, ...left.map(c => c.start.n))),
            // A switch made once this engine held the workspace counts, even before the loop began.
            since: claim?.pid === process.pid ? Date.parse(claim.started) : Date.now(),
            switchable: !this.several,
            notes: this.journalNotes,
          });
    // A proposal left awaiting review is reviewed even by an engine resumed without step mode.
    for (const c of left) this.review?.require(c.start.n);
  }

  async run(): Promise<RunEndRecord> {
    const root = worktreesRoot(this.o.dir, this.o.tag);
    let lanes: Lane[];
    if (this.several) {
      const start = this.best?.commit ?? (await this.main.head());
      const trees = await createWorktrees(this.main, root, this.o.branch, this.o.executors.length, start, this.gitLock);
      lanes = trees.map(t => ({ k: t.k, dir: t.dir, repo: t.repo, lastRunEnd: Date.now() }));
    } else {
      lanes = [{ k: 1, dir: this.o.dir, repo: this.main, lastRunEnd: Date.now() }];
    }
    try {
      await this.guard(lanes[0], () => this.baseline(lanes[0]));
      await Promise.all(lanes.map(l => this.guard(l, () => this.loop(l))));
    } finally {
      // A draft the run ends without using was paid for: its cost goes in the journal before run_end.
      await this.recordDiscardedDraft(lanes[0]).catch(() => undefined);
      // No mode switch is journaled after the run's end.
      this.review?.close();
      if (this.several) await removeWorktrees(this.main, root).catch(() => undefined);
    }
    const reason = this.endReason();
    const record: RunEndRecord = {
      type: 'run_end',
      ts: new Date().toISOString(),
      reason,
      message: this.fatal ?? this.stopped?.message ?? null,
      best_commit: this.best?.commit ?? null,
      best_metric: this.best?.metric ?? null,
    };
    this.o.journal.append(record);
    if (this.fatal) {
      throw new UserError(this.fatal);
    }
    return record;
  }

  private endReason(): RunEndRecord['reason'] {
    return this.fatal ? 'error' : (this.stopped?.reason ?? stopReason(this.o.signal));
  }

  /**
   * The draft the run ends without (stopped while an experiment trained, or the run is over): a
   * finished one, or one the stop cut short, is recorded as interrupted with what it cost; one
   * abandoned before the end, as the loop would have recorded it (rejected).
   */
  private async recordDiscardedDraft(lane: Lane): Promise<void> {
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
  private recordUnrun(lane: Lane, parentCommit: string, spent: Unrun, proposeS: number, reason: string): void {
    if (!billed(spent)) return;
    const record = unrunRecord(this.next++, parentCommit, this.best, spent, this.o.proposer.name, proposeS, reason);
    if (this.several) record.worker = lane.k;
    // Interrupted, never run: not one of the run's experiments (experimentsMade).
    this.record(record);
  }

  /** Why a proposal in flight was cut short: the user's stop, or another worker's failure. */
  private stoppedWhileProposing(): string {
    return this.fatal ? `the run stopped while proposing: ${this.fatal}` : 'stopped by the user while proposing';
  }

  /** The best as it stands: the last keep to land, its metric the mean of all its runs. */
  private currentBest(): Best | null {
    return bestOf(this.history, this.ledger.measurements);
  }

  /** True once no new experiment may start; records why the first time. */
  private halted(): boolean {
    if (this.fatal || this.stopped) return true;
    const stop = (reason: RunEndRecord['reason'], message: string | null = null) => (
      (this.stopped = { reason, message }),
      true
    );
    if (this.o.signal.aborted) return stop(stopReason(this.o.signal));
    if (this.best && this.o.maxExperiments !== undefined && this.proposed >= this.o.maxExperiments)
      return stop('max-experiments');
    if (Date.now() >= this.o.deadline) return stop('hours');
    return false;
  }

  private fail(message: string): void {
    this.fatal ??= message;
    this.internal.abort('error');
  }

  /** Git or the proposer's plumbing failing outside an experiment stops every worker cleanly. */
  private async guard(lane: Lane, work: () => Promise<void>): Promise<void> {
    try {
      await work();
    } catch (e) {
      this.fail(this.several ? `worker ${lane.k} failed: ${(e as Error).message}` : (e as Error).message);
    }
  }

  /** The baseline, first: measured from scratch, or on from where a killed engine left it. */
  private async baseline(lane: Lane): Promise<void> {
    const resumed = this.resumed.findIndex(c => c.baseline);
    if (this.best || this.halted()) {
      if (resumed >= 0) this.resumed.splice(resumed, 1);
      return;
    }
    const parent = await this.main.head();
    const files = await filesAt(this.main, parent, this.o.config.editable);
    let job: Job;
    if (resumed >= 0) {
      const c = this.resumed.splice(resumed, 1)[0];
      job = { n: c.start.n, proposal: null, from: c.commit, parent: null, files, proposeSeconds: 0, resume: c };
    } else {
      const n = this.next++;
      this.start(n, lane, parent, 'baseline', undefined, 0);
      job = { n, proposal: null, from: parent, parent: null, files, proposeSeconds: 0 };
    }
    const record = await this.experiment(lane, job);
    if (!this.best && record?.status === 'crash') {
      // A module the environment lacks is the environment's to fix, not the code's.
      const fix = MISSING_MODULE.test(record.reason ?? '') ? 'install it' : `fix ${this.o.config.editable[0]}`;
      this.fail(
        `the baseline crashed (${record.reason}); ${fix} — the log is ${record.log_path} — then run again with --resume`,
      );
    }
  }

  /** One worker: an experiment left in flight first, then propose (one worker at a time), run, record. */
  private async loop(lane: Lane): Promise<void> {
    for (;;) {
      const seen = this.finished.count;
      const job = await this.proposals.run(() => this.take(lane));
      if (job === 'stop') return;
      if (job === 'retry') continue;
      if (job === 'wait') {
        await this.finished.after(seen, () => this.signal.aborted || this.fatal !== null);
        continue;
      }
      await this.experiment(lane, job);
    }
  }

  /** The lane's next job: a resumed experiment, else a fresh proposal. */
  private async take(lane: Lane): Promise<Job | 'stop' | 'wait' | 'retry'> {
    if (this.halted() || !this.best) return 'stop';
    // A resumed experiment goes back to its own worker when that worker still exists.
    const lanes = this.o.executors.length;
    const mine = this.resumed.findIndex(
      c => !this.several || c.start.worker === undefined || c.start.worker === lane.k || c.start.worker > lanes,
    );
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

  private context(lane: Lane, files: Record<string, string>, best: Best | null): ProposalContext {
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

  private spent(): number {
    return (
      this.history.reduce((s, r) => s + r.cost_usd, 0) + [...this.inFlight.values()].reduce((s, e) => s + e.cost, 0)
    );
  }

  private async propose(lane: Lane): Promise<Job | 'stop' | 'wait' | 'retry'> {
    if (!this.best) return 'stop';
    const { proposer, config } = this.o;
    // A result that lands meanwhile moves the best: then again, so the proposer sees the best as it is.
    let best: Best;
    let files: Record<string, string>;
    do {
      best = this.best;
      files = await this.filesOfBest(lane, best);
    } while (this.best !== null && this.best.commit !== best.commit);
    const ctx = this.context(lane, files, best);
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
      proposal = (await this.source.next(ctx, best.commit)).proposal;
    } catch (e) {
      // What was billed for it, when the error says (a proposal abandoned or stopped mid-way, a draft wasted).
      const spent: Unrun | null =
        e instanceof ProposalAbandoned
          ? spentOf(e)
          : e instanceof ProposalFailed
            ? { ...unrunOf(e.draft), usage: e.usage, cost_usd: e.cost_usd }
            : null;
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
    const n = this.next++;
    this.proposed++;
    const proposeSeconds = (Date.now() - started) / 1000;
    this.start(
      n,
      lane,
      parent.commit,
      proposal.description,
      proposal.meta,
      proposal.cost_usd ?? 0,
      proposal,
      proposeSeconds,
    );
    return { n, proposal, from: parent.commit, parent, files, proposeSeconds };
  }

  /**
   * The best's editable files as the proposal sees them. A worker's branch is put on the best first,
   * so a resume after kill -9 knows a commit on top of it as this experiment's; one worker's folder
   * is there already, and its files are read from disk without asking git.
   */
  private async filesOfBest(lane: Lane, best: Best): Promise<Record<string, string>> {
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

  /** Events name the worker only when there are several. */
  /**
   * What experiment n does now, for state.json (LivePhase): the steps before and after its runs.
   * A run's own phases come from noteRunStart, when it has started, not when it is about to.
   */
  private notePhase(n: number, phase: Phase): void {
    if (phase === 'apply' || phase === 'review' || phase === 'commit' || phase === 'judge' || phase === 'check') {
      this.o.journal.setPhase(n, { name: phase, since: new Date().toISOString() });
    }
  }

  /** A training run of experiment n started: `train`, counted down from now, then `evaluate` once it says so. */
  private noteRunStart(n: number, log: LogCapture, startedAt: number, purpose: RunPurpose): void {
    const run = {
      // Its runs journaled so far, this one not yet: the same count runOnce numbers its log by.
      i: this.ledger.runsFor(n).length + 1,
      purpose,
      started: new Date(startedAt).toISOString(),
      budget_s: this.o.config.budget_s,
    };
    this.o.journal.setPhase(n, { name: 'train', since: run.started, run });
    log.onEvaluating = () => this.o.journal.setPhase(n, { name: 'evaluate', since: new Date().toISOString(), run });
  }

  private emitFor<K extends keyof LaneEvents>(lane: Lane, event: K, ...args: LaneEvents[K]): void {
    const full = [...args, ...(this.several ? [lane.k] : [])] as unknown as LoopEvents[K];
    this.o.emit(event, ...full);
  }

  private start(
    n: number,
    lane: Lane,
    parent: string,
    description: string,
    meta: unknown,
    cost: number,
    proposal?: Proposal,
    proposeS = 0,
  ): void {
    const facts = proposal ? { proposal: proposalFacts(proposal, this.o.proposer.name, proposeS) } : {};
    const worker = this.several ? { worker: lane.k } : {};
    this.o.journal.append({
      type: 'experiment_start',
      ts: new Date().toISOString(),
      n,
      parent_commit: parent,
      description,
      ...worker,
      ...facts,
    });
    this.inFlight.set(n, { n, worker: lane.k, description, diff: '', meta, cost });
  }

  /** Drafts the next proposal while this experiment trains (one worker, a pipelined proposer), unless this run is the last. */
  private draft(lane: Lane, job: Job, description: string, diff: string): void {
    const affordable =
      this.o.maxDollars === undefined ||
      this.spent() + (this.o.proposer.estimateNextCost?.(this.context(lane, job.files, this.best)) ?? 0) * 2 <=
        this.o.maxDollars;
    const more = this.o.maxExperiments === undefined || this.proposed < this.o.maxExperiments;
    if (this.source.pipelining && more && affordable && Date.now() < this.o.deadline) {
      const ctx = { ...this.context(lane, job.files, this.best), running: { n: job.n, description, diff } };
      // Against the best as it stands (during the baseline: the code it runs).
      this.source.startDraft(ctx, this.best?.commit ?? job.from);
    }
  }

  /** Runs a job in a lane, records it, and moves the best or resets the lane. */
  private async experiment(lane: Lane, job: Job): Promise<ExperimentRecord | null> {
    const { o } = this;
    const { n } = job;
    const description = job.resume?.start.description ?? job.proposal?.description ?? 'baseline';
    const worker = this.several ? lane.k : undefined;
    let record: ExperimentRecord;
    let runStartedAt: number | null = null;
    try {
      // One worker's folder is already at the best (reset after every result that was not kept).
      if (!job.resume && this.several) await lane.repo.resetHard(job.from);
      this.emitFor(lane, 'phase', n, 'apply', description);
      record = await runExperiment(
        {
          dir: lane.dir,
          repo: lane.repo,
          config: o.config,
          executor: o.executors[lane.k - 1],
          python: o.python,
          proposerName: o.proposer.name,
          readonlyHashes: o.readonlyHashes,
          runLog: i => runPaths(o.dir, o.tag).runLog(n, i),
          logHeadBytes: o.logHeadBytes,
          logTailBytes: o.logTailBytes,
          signal: this.signal,
          runEnv: o.devices[lane.k - 1],
          review: job.proposal ? (this.review ?? undefined) : undefined,
          ledger: this.ledger,
          currentBest: () => this.currentBest(),
          worker,
          onPhase: phase => {
            this.emitFor(lane, 'phase', n, phase, description);
            this.notePhase(n, phase);
          },
          onSpawn: (pgids, cgroups) => setRunningGroup(o.dir, pgids, worker, cgroups),
          onKernel: kernel => setRunningKernel(o.dir, kernel, lane.k),
          onRunStart: (log, startedAt, diff, purpose) => {
            const mine = this.inFlight.get(n);
            if (mine) mine.diff = diff;
            this.noteRunStart(n, log, startedAt, purpose);
            this.emitFor(lane, 'run-start', n, log, startedAt, o.config.budget_s);
            if (runStartedAt === null) this.draft(lane, job, description, diff);
            runStartedAt ??= startedAt;
          },
        },
        {
          n,
          best: job.parent,
          proposal: job.proposal,
          proposeSeconds: job.proposeSeconds,
          resumeCommit: job.resume?.commit,
          baseline: job.resume?.baseline,
        },
      );
    } catch (e) {
      if (e instanceof ReviewPostponed) {
        // Stopped while awaiting review: nothing recorded, so a resume offers it again; the tree goes back to the best.
        this.inFlight.delete(n);
        await lane.repo.resetHard(job.from);
        return null;
      }
      // A failure of git or of the executor itself, not of the experiment: the run cannot go on.
      // One worker: the executor's own message, which names the fix (a kernel that cannot start).
      const message = this.several
        ? `worker ${lane.k} failed during experiment #${n}: ${(e as Error).message}`
        : (e as Error).message;
      const start = {
        type: 'experiment_start' as const,
        ts: '',
        n,
        parent_commit: job.from,
        description,
        ...(worker ? { worker } : {}),
      };
      record = interruptedRecord(start, null, this.best, message);
      this.fail(message);
    }
    if (runStartedAt !== null) {
      record.timings.idle_s = Math.max(0, (runStartedAt - lane.lastRunEnd) / 1000);
      lane.lastRunEnd = Date.now();
    }
    this.warnIfBudgetIgnored(lane, n);
    this.noteSandbox(lane, n);
    // Judged again against the best as it is now: another worker may have moved it. No await
    // from here to the journal, so no other result can land in between.
    if (job.parent && (record.status === 'keep' || record.status === 'discard')) {
      Object.assign(record, rejudge(record, this.currentBest(), this.ledger, noiseRuleOf(o.config)));
    }
    const before = this.best;
    this.record(record);
    this.best = this.currentBest();
    const kept = record.status === 'keep' && record.commit !== null && this.best?.commit === record.commit;
    if (kept && this.several) {
      if (before && job.parent && before.commit !== job.parent.commit) {
        o.emit('note', `#${n} beat the best that landed while it ran; ${o.branch} moves to it`);
      }
      // Queued behind any earlier keep's move, so the branch ends at the latest best.
      await this.main.resetHard(record.commit as string);
    } else if (!kept && !this.several) {
      await lane.repo.resetHard(this.best?.commit ?? record.parent_commit);
    }
    return record;
  }

  /**
   * One line, on the terminal and at the end of the run's log, when experiment n's runs trained
   * for another budget than AUTORESEARCH_BUDGET_S (src/core/rule/budget-check.ts has the rule): the
   * budget counted down was not the one trained. The best's re-measures were checked as its own.
   */
  private warnIfBudgetIgnored(lane: Lane, n: number): void {
    const ignored = budgetWarning(
      this.o.config.budget_s,
      this.ledger.runsFor(n).filter(r => r.purpose !== 'best'),
    );
    if (!ignored) return;
    this.emitFor(lane, 'note', `#${n}: ${ignored.message}`);
    for (const log of ignored.logPaths) {
      try {
        const fd = openAppend(log);
        try {
          fs.writeSync(fd, `autoresearch: ${ignored.message}\n`);
        } finally {
          fs.closeSync(fd);
        }
      } catch {
        // A log that is gone keeps no warning; the terminal has it.
      }
    }
  }

  /** Whether the runs so far were sandboxed, as of the last note: one line when that first shows, or changes. */
  private sandboxNoted: 'on' | 'off' | undefined;

  /** Whether the sandbox's missing part was said already (once a run is enough). */
  private missingNoted = false;

  private noteSandbox(lane: Lane, n: number): void {
    const run = this.ledger.runsFor(n).at(-1);
    if (run?.sandbox === 'on' && run.sandbox_missing?.length && !this.missingNoted) {
      this.missingNoted = true;
      this.emitFor(lane, 'note', `training runs are sandboxed without: ${run.sandbox_missing.join('; ')}`);
    }
    const last = run?.sandbox;
    if (last === undefined || last === this.sandboxNoted) return;
    const before = this.sandboxNoted;
    this.sandboxNoted = last;
    // Sandboxed runs are the rule (status says so); the exception gets its line, once.
    if (last === 'off' && sandboxOf(this.o.config.sandbox).mode !== 'off') {
      this.emitFor(
        lane,
        'note',
        `training runs are not sandboxed${before === 'on' ? ' any more' : ''}: the first line of each run's log says why`,
      );
    }
  }

  /** Journal first (a kill after it loses nothing), then results.tsv, the history and the listeners. */
  private record(record: ExperimentRecord): void {
    this.inFlight.delete(record.n);
    this.ledger.settle(record);
    this.o.results.append(record);
    this.history.push(record);
    this.o.emit('experiment', record);
    this.finished.add();
  }
}
