/**
 * What the loop asks of a proposer: given the editable files at the best
 * commit and the history so far, return exactly one experiment to try.
 */
import type { ExperimentRecord, Move, Usage } from '../../core/journal/journal';
import type { ReviewNote } from '../../core/step-mode/knob-notes';

export interface ProposalContext {
  /** Absolute path of the workspace (the git work tree, checked out at the best commit). */
  workdir: string;
  /** Editable files, relative to workdir, and their current contents. */
  files: Record<string, string>;
  /** Every experiment of this run so far (experiment 0 is the baseline). */
  history: ExperimentRecord[];
  /** The text of program.md (without front matter). */
  program: string;
  /** Name of the metric and which way is better. */
  metric: string;
  direction: 'lower' | 'higher';
  /** Seed for deterministic proposers. */
  seed: number;
  signal?: AbortSignal;
  /**
   * The experiment training while this proposal is drafted (pipelining), so it proposes something
   * else; `meta` is its proposal's meta: what that proposal was shown and taught
   * (claude/unseen.ts), and the notes it wrote, which count as written (claude/notes.ts).
   */
  running?: { n: number; description: string; diff: string; meta?: unknown };
  /**
   * With several workers: the experiments proposed and not finished yet (each
   * worker's), so a proposal does not repeat one of them. `meta` is their proposal's meta.
   */
  inFlight?: InFlight[];
  /** With several workers: the best commit the files come from (it may have moved since an experiment started). */
  bestCommit?: string;
  /** The keep rule and the noise measured so far, so a proposer knows what counts as a gain. */
  noise?: NoiseFacts;
  /** What the run is and what it has left (budget, machine, limits), for a proposer that tells its model. */
  run?: RunFacts;
  /**
   * Step mode: the notes reviewers gave with their decisions so far (the journal's review records,
   * so a resumed run has them too). The offline proposer leaves a knob a note names alone.
   */
  reviewNotes?: ReviewNote[];
  /**
   * Where this proposal starts when it is not the best (a plateau's branch from a near-miss): the
   * files are that experiment's. Absent: from the best. (src/engine/search/)
   */
  start?: StartPoint;
  /** Moves the engine built for this proposal (re-test, combine, ablate), files ready; the proposer may take one. */
  moves?: MoveCandidate[];
}

/** A proposal's starting point other than the best. */
export interface StartPoint {
  /** The experiment whose commit the files are from. */
  n: number;
  kind: 'branch';
  /** Experiments of the branch left after this one. */
  left: number;
  /** Why the engine branched, in words (for the prompt and the terminal). */
  why: string;
}

/** A move the engine prepared: the files it would run, built by git merges from the experiments it names. */
export interface MoveCandidate {
  kind: 'retest' | 'combine' | 'ablate';
  of: number[];
  /** One line: what it would run (`re-test #41 on the new best`). */
  description: string;
  /** Why it is worth a run, in numbers (the near-miss's gain in σ, the keep's delta). */
  why: string;
  /** The editable files it would run (full contents). */
  files: Record<string, string>;
}

/** The run's facts as the loop knows them when proposing (src/engine/proposers/run-facts.ts builds them). */
export interface RunFacts {
  budgetS: number;
  timeoutS: number;
  editable: string[];
  readonly: string[];
  /** Where training runs: 'subprocess' (this machine) or 'kernel' (a Jupyter kernel's, perhaps remote). */
  executor: string;
  /** What the engine knows of the machine a subprocess trains on (cores, memory, GPUs); null for a kernel's. */
  machine: string | null;
  workers: number;
  /** Experiments the run may still start (--max-experiments, counted over every session); null: no limit. */
  experimentsLeft: number | null;
  /** Epoch ms after which no experiment starts (--hours); null: none. */
  deadline: number | null;
  maxDollars: number | null;
  /** Dollars the proposer has cost so far, the experiments in flight included. */
  spentUsd: number;
  /** program.md's log_pattern: how a training line of the log reads (absent: the default formats). */
  logPattern?: string;
}

/** What the noise-aware keep rule needs a gain to clear, as the loop knows it when proposing. */
export interface NoiseFacts {
  /** Runs of the baseline; 1 = the strict rule (no noise measured). */
  noiseRuns: number;
  keepSigma: number;
  confirmRuns: number;
  /** σ of one run; null before anything was measured twice. */
  sigma: number | null;
  df: number;
  /** Runs behind the best's mean. */
  bestRuns: number;
}

/** An experiment another worker is running (or about to run). */
export interface InFlight {
  n: number;
  worker: number;
  description: string;
  /** Unified diff against the commit it started from; empty before it was applied. */
  diff: string;
  meta?: unknown;
}

export interface Proposal {
  /** One line; becomes the commit message and the results.tsv description. */
  description: string;
  rationale: string;
  /** New full contents of the files the proposal changes (paths relative to workdir). */
  files: Record<string, string>;
  usage?: Usage;
  cost_usd?: number;
  /** Stored in the journal record; lets a proposer rebuild its state from history. */
  meta?: unknown;
  /** How it searched; journaled as the record's `move` (absent: explore on the best). */
  move?: Move;
}

export interface Proposer {
  readonly name: string;
  /** The next experiment, or null when the proposer has nothing left to try. */
  propose(ctx: ProposalContext): Promise<Proposal | null>;
  /** Dollars the next proposal will likely cost, for --max-dollars; absent for free proposers. */
  estimateNextCost?(ctx: ProposalContext): number;
  /** True when proposing takes long enough to be worth drafting while the previous experiment trains. */
  readonly pipelined?: boolean;
  /**
   * Checks, before the run starts, that proposing can work (a key the API accepts, a model it
   * knows), so a refusal stops the run now rather than after the baseline trained; throws a
   * UserError that says what to fix. Absent for proposers that need nothing outside the engine.
   */
  check?(signal?: AbortSignal): Promise<void>;
}

/**
 * Thrown by propose() when a proposal was tried and given up (too many turns or
 * failed edits): the loop records it as a rejected experiment, with what it cost, and goes on.
 */
export class ProposalAbandoned extends Error {
  constructor(
    message: string,
    readonly usage: Usage,
    readonly cost_usd: number,
    readonly meta?: unknown,
  ) {
    super(message);
    this.name = 'ProposalAbandoned';
  }
}
