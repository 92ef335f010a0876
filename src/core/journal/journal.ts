/**
 * The journal: an append-only JSON-lines file, one record per event, in
 * `<workspace>/.autoresearch/<tag>/journal.jsonl`. Together with git it is the
 * source of truth; the terminal, the panel, results.tsv and a resumed engine
 * are all rebuilt from it. Every record is validated on write and on read.
 */
import * as z from 'zod/mini';
import { PriceRow } from '../config/price-row';
import { ReviewAction, ReviewSource } from '../step-mode/review';
import { EFFORT_LEVELS } from '../config/run-options';
import { LimitsSetting } from '../config/limits';
import { SlurmSetting } from '../config/slurm';
import { SandboxSetting } from '../config/sandbox';
import { SEARCH_MODES } from '../config/search';
import { SettingsChanged, SettingsFrom } from '../config/security-settings';
import { ResearchNotes } from './research-notes';
import { englishMessages } from './zod-english';

englishMessages();

export const EXPERIMENT_STATUSES = ['keep', 'discard', 'crash', 'interrupted', 'rejected'] as const;
export const ExperimentStatus = z.enum(EXPERIMENT_STATUSES);
export type ExperimentStatus = z.infer<typeof ExperimentStatus>;

export const Usage = z.object({
  input_tokens: z.int().check(z.nonnegative()),
  output_tokens: z.int().check(z.nonnegative()),
  cache_creation_input_tokens: z.int().check(z.nonnegative()),
  cache_read_input_tokens: z.int().check(z.nonnegative()),
  /**
   * The part of cache_creation_input_tokens written with the 1-hour lifetime, which is priced
   * higher than the 5-minute one; absent in journals from before the claude proposer asked for it.
   */
  cache_creation_1h_input_tokens: z.optional(z.int().check(z.nonnegative())),
});
export type Usage = z.infer<typeof Usage>;
export const ZERO_USAGE: Usage = {
  input_tokens: 0,
  output_tokens: 0,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

const isoTime = z.string().check(z.minLength(1));
const commitHash = z.string().check(z.regex(/^[0-9a-f]{7,64}$/));
/** Which worker (1..N) ran an experiment; present only in runs with several workers. */
const worker = z.optional(z.int().check(z.minimum(1)));

/**
 * How a proposal searched (issue 28): a new idea on the best (`explore`), a fix of a crash, a
 * near-miss re-tested on a best that moved, two changes combined, a keep ablated, or an experiment
 * of a plateau's branch from a near-miss. `of` names the experiments the move is built from.
 */
export const MOVE_KINDS = ['explore', 'fix', 'retest', 'combine', 'ablate', 'branch'] as const;
export const MoveKind = z.enum(MOVE_KINDS);
export type MoveKind = z.infer<typeof MoveKind>;
export const Move = z.object({ kind: MoveKind, of: z.optional(z.array(z.int().check(z.nonnegative()))) });
export type Move = z.infer<typeof Move>;

/** The resolved configuration a run uses (front matter merged over defaults and CLI flags). */
export const RunConfig = z.object({
  metric: z.string(),
  direction: z.enum(['lower', 'higher']),
  budget_s: z.number().check(z.positive()),
  timeout_s: z.number().check(z.positive()),
  run: z.string(),
  editable: z.array(z.string()).check(z.minLength(1)),
  readonly: z.array(z.string()),
  /** claude proposer: the model, a spending cap for the run, and price overrides ($/MTok by model id). */
  model: z.optional(z.string()),
  max_dollars: z.optional(z.number().check(z.positive())),
  prices: z.optional(z.record(z.string(), PriceRow)),
  /** claude proposer: how hard the model thinks (output_config.effort, or a thinking budget on older models). */
  effort: z.optional(z.enum(EFFORT_LEVELS)),
  /** Experiments run at once (--workers); absent in journals from before workers existed, meaning 1. */
  workers: z.optional(z.int().check(z.minimum(1))),
  /**
   * The noise-aware keep rule (src/core/rule/noise.ts). Absent in journals from before it existed,
   * which kept on any strict improvement (the same as noise_runs 1).
   */
  noise_runs: z.optional(z.int().check(z.minimum(1))),
  keep_sigma: z.optional(z.number().check(z.nonnegative())),
  confirm_runs: z.optional(z.int().check(z.nonnegative())),
  /** What a training run may reach (src/core/config/sandbox.ts); absent in older journals, meaning auto without network. */
  sandbox: z.optional(SandboxSetting),
  /** A training run's limits as program.md sets them (src/core/config/limits.ts); absent: the defaults. */
  limits: z.optional(LimitsSetting),
  /** Step mode: each proposal waits for a reviewer before it is committed (src/core/step-mode/review.ts). */
  step: z.optional(z.boolean()),
  /** How the search goes past greedy (src/core/config/search.ts); absent in older journals, meaning greedy. */
  search: z.optional(z.enum(SEARCH_MODES)),
  /** Experiments without a keep before a branch from the best near-miss; 0: never. */
  plateau: z.optional(z.int().check(z.nonnegative())),
  /** How a training line reads (src/core/config/log-pattern.ts); absent: the default formats. */
  log_pattern: z.optional(z.string()),
  /** Where Slurm runs each training run (--executor slurm; src/core/config/slurm.ts); absent: nothing asked. */
  slurm: z.optional(SlurmSetting),
});
export type RunConfig = z.infer<typeof RunConfig>;

export const RunStartRecord = z.object({
  type: z.literal('run_start'),
  ts: isoTime,
  tag: z.string(),
  branch: z.string(),
  resume: z.boolean(),
  base_commit: commitHash,
  proposer: z.string(),
  seed: z.int(),
  config: RunConfig,
  readonly_hashes: z.record(z.string(), z.string()),
  engine_version: z.string(),
  pid: z.int(),
  /** Where each security setting (config's sandbox, readonly, editable) came from; absent in older journals. */
  settings_from: z.optional(SettingsFrom),
  /** Security settings that differ from the run compared with (src/core/config/security-settings.ts); absent when none do. */
  settings_changed: z.optional(SettingsChanged),
  /** --max-experiments (or the journal's count plus --more-experiments): the run's experiments in all (the baseline and interrupted ones not counted). */
  max_experiments: z.optional(z.int().check(z.nonnegative())),
});
export type RunStartRecord = z.infer<typeof RunStartRecord>;

/**
 * What a proposer notes in a proposal's meta that others read (the claude proposer's): the bundle
 * shows the reasoning, the prediction and the lesson; the next prompt shows them to the model.
 * Each field is read on its own, so one malformed field costs only itself.
 */
export const ProposalNotes = z.looseObject({
  model: z.catch(z.optional(z.string()), undefined),
  /** The effort the proposal was made with, and how it was sent ("adaptive", "budget 16000"). */
  effort: z.catch(z.optional(z.string()), undefined),
  thinking: z.catch(z.optional(z.string()), undefined),
  /** The model's summarised thinking over the proposal's turns. */
  reasoning: z.catch(z.optional(z.string()), undefined),
  /** The change of the metric the model expected (its sign as the metric's: negative is lower). */
  expected_delta: z.catch(z.optional(z.number()), undefined),
  /** What the last finished experiment (about) taught, in the model's words. */
  lesson: z.catch(z.optional(z.object({ about: z.int().check(z.nonnegative()), text: z.string() })), undefined),
  /** The idea explored, when no constant names it ("rotary embeddings"). */
  direction: z.catch(z.optional(z.string()), undefined),
  /** The research notes this proposal rewrote (./research-notes.ts), when they were due. */
  notes: z.catch(z.optional(ResearchNotes), undefined),
});
export type ProposalNotes = z.infer<typeof ProposalNotes>;

/** The notes in a record's proposal meta; {} when it has none (the offline proposer's, a baseline). */
export function proposalNotes(meta: unknown): ProposalNotes {
  const parsed = ProposalNotes.safeParse(meta);
  return parsed.success ? parsed.data : {};
}

/** What a proposal was, kept with its start so a resumed engine can finish measuring it. */
export const ProposalFacts = z.object({
  rationale: z.string(),
  proposer: z.string(),
  propose_s: z.number().check(z.nonnegative()),
  usage: Usage,
  cost_usd: z.number().check(z.nonnegative()),
  meta: z.optional(z.unknown()),
  /** How it searched (its record's `move`), so a resumed experiment keeps it. */
  move: z.optional(Move),
});
export type ProposalFacts = z.infer<typeof ProposalFacts>;

/** Written before an experiment starts, so a resumed engine can find one left in flight. */
export const ExperimentStartRecord = z.object({
  type: z.literal('experiment_start'),
  ts: isoTime,
  n: z.int().check(z.nonnegative()),
  parent_commit: commitHash,
  description: z.string(),
  worker,
  proposal: z.optional(ProposalFacts),
});
export type ExperimentStartRecord = z.infer<typeof ExperimentStartRecord>;

/** Why a run was made: the baseline's repeats measure the noise, a candidate's repeats confirm it, a best's re-measure sharpens the bar. */
export const RUN_PURPOSES = ['measure', 'noise', 'confirm', 'best'] as const;
export const RunPurpose = z.enum(RUN_PURPOSES);
export type RunPurpose = z.infer<typeof RunPurpose>;

/**
 * One training run, journaled as soon as it ends: an experiment is measured by one or more
 * runs of its code, and the best's code may be re-measured while judging an experiment.
 * `state` is the content hash of the editable files, so runs of identical code pool together.
 */
export const RunRecord = z.object({
  type: z.literal('run'),
  ts: isoTime,
  /** The experiment this run served (a best's re-measure serves the experiment being judged). */
  n: z.int().check(z.nonnegative()),
  commit: commitHash,
  state: z.string().check(z.minLength(1)),
  purpose: RunPurpose,
  /** This code's k-th run (AUTORESEARCH_RUN), counting every run of the same state. */
  k: z.int().check(z.minimum(1)),
  /** AUTORESEARCH_SEED the run was given. */
  seed: z.int(),
  /** Null when the run crashed. */
  metric: z.nullable(z.number()),
  summary: z.record(z.string(), z.union([z.number(), z.string()])),
  run_s: z.number().check(z.nonnegative()),
  exit_code: z.nullable(z.int()),
  signal: z.nullable(z.string()),
  /** Why a run produced no metric, in words; null when it did. */
  reason: z.nullable(z.string()),
  memory_gb: z.number().check(z.nonnegative()),
  log_path: z.nullable(z.string()),
  /** Whether the middle of a flooded output was left out of the log. */
  log_truncated: z.optional(z.boolean()),
  /** Whether the run was sandboxed (absent: not reported, or a journal from before the run guard). */
  sandbox: z.optional(z.enum(['on', 'off'])),
  /** What the sandbox lacked, where it could not be had whole under `sandbox: auto` (the user namespace). */
  sandbox_missing: z.optional(z.array(z.string())),
  /** Processes the run left behind, killed when it ended. */
  strays: z.optional(z.int().check(z.nonnegative())),
  /** Seconds a scheduler (Slurm) held the run before it started: not in run_s, nor in the busy time or the trust cost. */
  queue_s: z.optional(z.number().check(z.nonnegative())),
  /** The scheduler's job the run was (--executor slurm); requeued: preempted once and run again. */
  job: z.optional(
    z.object({
      scheduler: z.literal('slurm'),
      id: z.string(),
      node: z.optional(z.string()),
      requeued: z.optional(z.boolean()),
    }),
  ),
  worker,
});
export type RunRecord = z.infer<typeof RunRecord>;

/** A run as an experiment record lists it. */
export const RunRef = z.object({
  k: z.int().check(z.minimum(1)),
  seed: z.int(),
  metric: z.nullable(z.number()),
  run_s: z.number().check(z.nonnegative()),
  log_path: z.nullable(z.string()),
  /** False for runs of the same code made by an earlier experiment and reused. */
  own: z.optional(z.boolean()),
});
export type RunRef = z.infer<typeof RunRef>;

/** The statistics a keep decision was made with (src/core/rule/judge.ts). */
export const Verdict = z.object({
  /** Pooled standard deviation of one run; null before any code was measured twice, 0 for a deterministic metric. */
  sigma: z.nullable(z.number().check(z.nonnegative())),
  /** Standard error of the candidate's mean. */
  se: z.nullable(z.number().check(z.nonnegative())),
  /** keep_sigma × the standard error of the difference: what a gain had to exceed. */
  floor: z.nullable(z.number().check(z.nonnegative())),
  keep_sigma: z.number().check(z.nonnegative()),
  /** The best's runs at the decision, and their mean (best_before is the same mean). */
  best_runs: z.int().check(z.nonnegative()),
  /** Strict: noise not measured (noise_runs 1, or a deterministic metric): any gain counts. */
  strict: z.boolean(),
  /** Kept after repeat runs reproduced the gain (or, for the baseline, measured more than once). */
  confirmed: z.boolean(),
  /** Runs spent on this decision by purpose (the re-measures of the best included). */
  spent: z.object({
    measure: z.int(),
    noise: z.int(),
    confirm: z.int(),
    best: z.int(),
  }),
});
export type Verdict = z.infer<typeof Verdict>;

export const ExperimentRecord = z.object({
  type: z.literal('experiment'),
  ts: isoTime,
  n: z.int().check(z.nonnegative()),
  parent_commit: commitHash,
  /** The experiment's own commit; null when it never got one (rejected, interrupted early). */
  commit: z.nullable(commitHash),
  description: z.string(),
  rationale: z.string(),
  diff: z.string(),
  lines_added: z.int().check(z.nonnegative()),
  lines_removed: z.int().check(z.nonnegative()),
  /** Every `key: value` of the summary block; numbers where they parse as numbers. */
  summary: z.record(z.string(), z.union([z.number(), z.string()])),
  metric: z.nullable(z.number()),
  best_before: z.nullable(z.number()),
  delta: z.nullable(z.number()),
  status: ExperimentStatus,
  /** Why a crash, rejection or interruption happened, in words. */
  reason: z.nullable(z.string()),
  memory_gb: z.number().check(z.nonnegative()),
  timings: z.object({
    propose_s: z.number().check(z.nonnegative()),
    run_s: z.number().check(z.nonnegative()),
    total_s: z.number().check(z.nonnegative()),
    /** Seconds the executor sat idle between the previous run's end and this run's start. */
    idle_s: z.optional(z.number().check(z.nonnegative())),
    /** Seconds its runs waited in a scheduler's queue (Slurm), apart from run_s. */
    queue_s: z.optional(z.number().check(z.nonnegative())),
  }),
  exit_code: z.nullable(z.int()),
  signal: z.nullable(z.string()),
  log_path: z.nullable(z.string()),
  log_truncated: z.boolean(),
  proposer: z.string(),
  usage: Usage,
  cost_usd: z.number().check(z.nonnegative()),
  /** Proposer-specific state (the offline proposer stores the constants it set). */
  proposal_meta: z.optional(z.unknown()),
  worker,
  /** Content hash of the editable files this experiment ran. */
  state: z.optional(z.string()),
  /** Its runs; `metric` is their mean. Absent in journals from before repeats (one run). */
  runs: z.optional(z.array(RunRef)),
  verdict: z.optional(Verdict),
  /** How the proposal searched (absent: a plain proposal on the best, or a journal from before moves). */
  move: z.optional(Move),
  /** Same code as this earlier experiment: its result is reported, nothing ran again. */
  same_as: z.optional(z.int().check(z.nonnegative())),
  /** Step mode: how its reviewer decided (the review record of the same n has the note or edit's diff). */
  review: z.optional(
    z.object({ action: ReviewAction, source: ReviewSource, waited_s: z.number().check(z.nonnegative()) }),
  ),
});
export type ExperimentRecord = z.infer<typeof ExperimentRecord>;

export const RunEndRecord = z.object({
  type: z.literal('run_end'),
  ts: isoTime,
  reason: z.enum(['max-experiments', 'hours', 'signal', 'stop', 'exhausted', 'budget', 'error']),
  message: z.nullable(z.string()),
  best_commit: z.nullable(commitHash),
  best_metric: z.nullable(z.number()),
});
export type RunEndRecord = z.infer<typeof RunEndRecord>;

/**
 * Step mode: experiment n's proposal offered to a reviewer (`pending`), or how the reviewer
 * decided (`decision`: where it came from, the seconds waited, a rejection's note, an edit's diff
 * against the proposal, whether step mode ends). A pending without a decision and without an
 * experiment record is still awaiting review, across a stop or a kill -9. `mode`: step mode
 * switched on or off (`step`) while the run goes on, by `source`, from experiment n on (the next
 * proposal offered; one already pending still waits for its decision).
 */
export const ReviewRecord = z.object({
  type: z.literal('review'),
  ts: isoTime,
  n: z.int().check(z.nonnegative()),
  event: z.enum(['pending', 'decision', 'mode']),
  step: z.optional(z.boolean()),
  action: z.optional(ReviewAction),
  source: z.optional(ReviewSource),
  waited_s: z.optional(z.number().check(z.nonnegative())),
  note: z.optional(z.string()),
  edit_diff: z.optional(z.string()),
  all: z.optional(z.boolean()),
});
export type ReviewRecord = z.infer<typeof ReviewRecord>;

export const JournalRecord = z.discriminatedUnion('type', [
  RunStartRecord,
  ExperimentStartRecord,
  RunRecord,
  ExperimentRecord,
  RunEndRecord,
  ReviewRecord,
]);
export type JournalRecord = z.infer<typeof JournalRecord>;

/**
 * A journal line that is neither a record nor a torn last write: its number, what is wrong with
 * it, and the fix, so whoever reads the journal can name the file and stop with one clear line.
 */
export class JournalLineError extends Error {
  constructor(
    readonly line: number,
    /** "is not JSON (…)" or "is invalid: …", to follow "<file> line N ". */
    readonly problem: string,
    readonly fix: string,
  ) {
    super(`journal line ${line} ${problem}; ${fix}`);
  }
}

/** A line quoted in a message: short, one line. */
function quote(line: string): string {
  const one = line.trim().replace(/\s+/g, ' ');
  return JSON.stringify(one.length > 40 ? `${one.slice(0, 40)}…` : one);
}

/** What is wrong with a line that parsed as JSON but is no valid record, in one line. */
function whatIsWrong(raw: unknown, error: z.core.$ZodError): string {
  const type = (raw as { type?: unknown } | null)?.type;
  const known = typeof type === 'string' && JournalRecord.def.options.some(o => o.shape.type.def.values[0] === type);
  const issues = error.issues.slice(0, 3).map(i => `${i.path.join('.') || 'the record'}: ${i.message}`);
  const more = error.issues.length > 3 ? `; ${error.issues.length - 3} more` : '';
  return `${known ? `${type} record, ` : 'not a journal record, '}${issues.join('; ')}${more}`;
}

/** Parses journal text; a bad line is a JournalLineError naming its number (a torn last line is dropped). */
export function parseJournal(text: string): JournalRecord[] {
  const lines = text.split('\n');
  const records: JournalRecord[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') {
      return;
    }
    const isLast = i === lines.length - 1;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      // A line without its newline is a write cut short by a crash: it never counted.
      if (isLast) {
        return;
      }
      throw new JournalLineError(
        i + 1,
        `is not JSON (${quote(line)})`,
        'repair or delete that line (the records around it stay as they are)',
      );
    }
    const parsed = JournalRecord.safeParse(raw);
    if (!parsed.success) {
      throw new JournalLineError(
        i + 1,
        `is invalid: ${whatIsWrong(raw, parsed.error)}`,
        'repair that line, or delete it if it is no record of this run',
      );
    }
    records.push(parsed.data);
  });
  return records;
}

/** The run records of a journal, in order. */
export function runsOf(records: JournalRecord[]): RunRecord[] {
  return records.filter((r): r is RunRecord => r.type === 'run');
}

/** The experiment records of a journal, in order. */
export function experimentsOf(records: JournalRecord[]): ExperimentRecord[] {
  return records.filter((r): r is ExperimentRecord => r.type === 'experiment');
}
