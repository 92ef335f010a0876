/**
 * What the loop knows while it runs, shared by its parts (propose.ts takes the next job, loop.ts
 * runs it through the method's steps): the best, the numbers handed out, the experiments in
 * flight, why it stops; and what every part does with them — start an experiment's record,
 * record its result, say whether the run goes on.
 */
import type { ExperimentRecord, JournalRecord, RunConfig, RunEndRecord } from '../../core/journal/journal';
import { experimentsOf } from '../../core/journal/journal';
import { reviewNotesOf, type ReviewNote } from '../../core/step-mode/knob-notes';
import { readEngineInfo } from './engine-lock';
import type { Executor } from '../executor/types';
import { Ledger } from '../experiment/ledger';
import { Repo } from '../git/git';
import type { JournalStore } from '../store/journal-store';
import type { ResultsFile } from '../store/results-file';
import type { EmitLoopEvent, LaneEvents, LoopEvents } from './loop-events';
import { bestOf, experimentsMade, stopReason, type Best } from './loop-records';
import type { Lane } from './lanes';
import { EventCount, Mutex } from './mutex';
import { ProposalSource } from './pipeline';
import type { InFlight, Proposal, Proposer } from '../proposers/types';
import { proposalFacts, type Continuation } from './resume';
import { StepReview, type Asker } from '../step-mode/step-review';
import { runPaths } from '../workspace/workspace';

/** What the loop is given: the run as set up (setup.ts) and the journal so far. */
export interface LoopInput {
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

/** One experiment for a lane to run: a fresh proposal, the baseline, or one a killed engine left in flight. */
export interface Job {
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

/** The loop's state, built from the journal (a resumed run knows what a killed engine recorded); extended by Proposing, then RunLoop. */
export abstract class LoopState {
  protected best: Best | null;
  protected next: number;
  /** Experiments of the run so far, over every session: --max-experiments is the run's in all. */
  protected proposed: number;
  protected readonly several: boolean;
  /** Experiments finished: a worker whose proposer had nothing waits for the next one. */
  protected readonly finished = new EventCount();
  protected readonly inFlight = new Map<number, InFlight & { cost: number }>();
  protected stopped: { reason: RunEndRecord['reason']; message: string | null } | null = null;
  protected fatal: string | null = null;
  protected readonly proposals = new Mutex();
  protected readonly gitLock = new Mutex();
  protected readonly main: Repo;
  /** Aborted by the user's signal, or by a fatal error in one worker so the others stop too. */
  protected readonly internal = new AbortController();
  protected readonly signal: AbortSignal;
  protected readonly history: ExperimentRecord[];
  protected readonly ledger: Ledger;
  protected readonly source: ProposalSource;
  protected readonly resumed: Continuation[];
  /** Step mode's reviewer: every one-worker run has one, as step mode may be switched on while it goes on; null with several, mostly. */
  protected readonly review: StepReview | null;
  /** The notes of the review decisions journaled before this engine (a resumed run's). */
  protected readonly journalNotes: ReviewNote[];

  constructor(
    protected readonly o: LoopInput,
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

  protected endReason(): RunEndRecord['reason'] {
    return this.fatal ? 'error' : (this.stopped?.reason ?? stopReason(this.o.signal));
  }

  /** The best as it stands: the last keep to land, its metric the mean of all its runs. */
  protected currentBest(): Best | null {
    return bestOf(this.history, this.ledger.measurements);
  }

  /** True once no new experiment may start; records why the first time. */
  protected halted(): boolean {
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

  /** Stops every worker: the first failure is the run's error. */
  protected fail(message: string): void {
    this.fatal ??= message;
    this.internal.abort('error');
  }

  /** Events name the worker only when there are several. */
  protected emitFor<K extends keyof LaneEvents>(lane: Lane, event: K, ...args: LaneEvents[K]): void {
    const full = [...args, ...(this.several ? [lane.k] : [])] as unknown as LoopEvents[K];
    this.o.emit(event, ...full);
  }

  /** Journals experiment n's start and counts it in flight. */
  protected start(
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

  /** Journal first (a kill after it loses nothing), then results.tsv, the history and the listeners. */
  protected record(record: ExperimentRecord): void {
    this.inFlight.delete(record.n);
    this.ledger.settle(record);
    this.o.results.append(record);
    this.history.push(record);
    this.o.emit('experiment', record);
    this.finished.add();
  }
}
