/**
 * The journal: an append-only JSON-lines file, one record per event, in
 * `<workspace>/.autoresearch/<tag>/journal.jsonl`. Together with git it is the
 * source of truth; the terminal, the panel, results.tsv and a resumed engine
 * are all rebuilt from it. Every record is validated on write and on read.
 */
import { z } from 'zod';
import { PriceRow } from './pricing';
import { ReviewAction, ReviewSource } from './review';
import { EFFORT_LEVELS } from './run-options';
import { SandboxSetting } from './sandbox';

export const EXPERIMENT_STATUSES = ['keep', 'discard', 'crash', 'interrupted', 'rejected'] as const;
export const ExperimentStatus = z.enum(EXPERIMENT_STATUSES);
export type ExperimentStatus = z.infer<typeof ExperimentStatus>;

export const Usage = z.object({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  cache_creation_input_tokens: z.number().int().nonnegative(),
  cache_read_input_tokens: z.number().int().nonnegative(),
  /**
   * The part of cache_creation_input_tokens written with the 1-hour lifetime, which is priced
   * higher than the 5-minute one; absent in journals from before the claude proposer asked for it.
   */
  cache_creation_1h_input_tokens: z.number().int().nonnegative().optional(),
});
export type Usage = z.infer<typeof Usage>;
export const ZERO_USAGE: Usage = {
  input_tokens: 0,
  output_tokens: 0,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

const isoTime = z.string().min(1);
const commitHash = z.string().regex(/^[0-9a-f]{7,64}$/);
/** Which worker (1..N) ran an experiment; present only in runs with several workers. */
const worker = z.number().int().min(1).optional();

/** The resolved configuration a run uses (front matter merged over defaults and CLI flags). */
export const RunConfig = z.object({
  metric: z.string(),
  direction: z.enum(['lower', 'higher']),
  budget_s: z.number().positive(),
  timeout_s: z.number().positive(),
  run: z.string(),
  editable: z.array(z.string()).min(1),
  readonly: z.array(z.string()),
  /** claude proposer: the model, a spending cap for the run, and price overrides ($/MTok by model id). */
  model: z.string().optional(),
  max_dollars: z.number().positive().optional(),
  prices: z.record(z.string(), PriceRow).optional(),
  /** claude proposer: how hard the model thinks (output_config.effort, or a thinking budget on older models). */
  effort: z.enum(EFFORT_LEVELS).optional(),
  /** Experiments run at once (--workers); absent in journals from before workers existed, meaning 1. */
  workers: z.number().int().min(1).optional(),
  /**
   * The noise-aware keep rule (src/core/noise.ts). Absent in journals from before it existed,
   * which kept on any strict improvement (the same as noise_runs 1).
   */
  noise_runs: z.number().int().min(1).optional(),
  keep_sigma: z.number().nonnegative().optional(),
  confirm_runs: z.number().int().nonnegative().optional(),
  /** What a training run may reach (src/core/sandbox.ts); absent in older journals, meaning auto without network. */
  sandbox: SandboxSetting.optional(),
  /** Step mode: each proposal waits for a reviewer before it is committed (src/core/review.ts). */
  step: z.boolean().optional(),
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
  seed: z.number().int(),
  config: RunConfig,
  readonly_hashes: z.record(z.string(), z.string()),
  engine_version: z.string(),
  pid: z.number().int(),
});
export type RunStartRecord = z.infer<typeof RunStartRecord>;

/**
 * What a proposer notes in a proposal's meta that others read (the claude proposer's): the bundle
 * shows the reasoning, the prediction and the lesson; the next prompt shows them to the model.
 * Each field is read on its own, so one malformed field costs only itself.
 */
export const ProposalNotes = z
  .object({
    model: z.string().optional().catch(undefined),
    /** The effort the proposal was made with, and how it was sent ("adaptive", "budget 16000"). */
    effort: z.string().optional().catch(undefined),
    thinking: z.string().optional().catch(undefined),
    /** The model's summarised thinking over the proposal's turns. */
    reasoning: z.string().optional().catch(undefined),
    /** The change of the metric the model expected (its sign as the metric's: negative is lower). */
    expected_delta: z.number().optional().catch(undefined),
    /** What the last finished experiment (about) taught, in the model's words. */
    lesson: z.object({ about: z.number().int().nonnegative(), text: z.string() }).optional().catch(undefined),
    /** The idea explored, when no constant names it ("rotary embeddings"). */
    direction: z.string().optional().catch(undefined),
  })
  .loose();
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
  propose_s: z.number().nonnegative(),
  usage: Usage,
  cost_usd: z.number().nonnegative(),
  meta: z.unknown().optional(),
});
export type ProposalFacts = z.infer<typeof ProposalFacts>;

/** Written before an experiment starts, so a resumed engine can find one left in flight. */
export const ExperimentStartRecord = z.object({
  type: z.literal('experiment_start'),
  ts: isoTime,
  n: z.number().int().nonnegative(),
  parent_commit: commitHash,
  description: z.string(),
  worker,
  proposal: ProposalFacts.optional(),
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
  n: z.number().int().nonnegative(),
  commit: commitHash,
  state: z.string().min(1),
  purpose: RunPurpose,
  /** This code's k-th run (AUTORESEARCH_RUN), counting every run of the same state. */
  k: z.number().int().min(1),
  /** AUTORESEARCH_SEED the run was given. */
  seed: z.number().int(),
  /** Null when the run crashed. */
  metric: z.number().nullable(),
  summary: z.record(z.string(), z.union([z.number(), z.string()])),
  run_s: z.number().nonnegative(),
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  /** Why a run produced no metric, in words; null when it did. */
  reason: z.string().nullable(),
  memory_gb: z.number().nonnegative(),
  log_path: z.string().nullable(),
  /** Whether the middle of a flooded output was left out of the log. */
  log_truncated: z.boolean().optional(),
  /** Whether the run was sandboxed (absent: not reported, or a journal from before the run guard). */
  sandbox: z.enum(['on', 'off']).optional(),
  /** Processes the run left behind, killed when it ended. */
  strays: z.number().int().nonnegative().optional(),
  worker,
});
export type RunRecord = z.infer<typeof RunRecord>;

/** A run as an experiment record lists it. */
export const RunRef = z.object({
  k: z.number().int().min(1),
  seed: z.number().int(),
  metric: z.number().nullable(),
  run_s: z.number().nonnegative(),
  log_path: z.string().nullable(),
  /** False for runs of the same code made by an earlier experiment and reused. */
  own: z.boolean().optional(),
});
export type RunRef = z.infer<typeof RunRef>;

/** The statistics a keep decision was made with (src/core/noise.ts). */
export const Verdict = z.object({
  /** Pooled standard deviation of one run; null before any code was measured twice, 0 for a deterministic metric. */
  sigma: z.number().nonnegative().nullable(),
  /** Standard error of the candidate's mean. */
  se: z.number().nonnegative().nullable(),
  /** keep_sigma × the standard error of the difference: what a gain had to exceed. */
  floor: z.number().nonnegative().nullable(),
  keep_sigma: z.number().nonnegative(),
  /** The best's runs at the decision, and their mean (best_before is the same mean). */
  best_runs: z.number().int().nonnegative(),
  /** Strict: noise not measured (noise_runs 1, or a deterministic metric): any gain counts. */
  strict: z.boolean(),
  /** Kept after repeat runs reproduced the gain (or, for the baseline, measured more than once). */
  confirmed: z.boolean(),
  /** Runs spent on this decision by purpose (the re-measures of the best included). */
  spent: z.object({
    measure: z.number().int(),
    noise: z.number().int(),
    confirm: z.number().int(),
    best: z.number().int(),
  }),
});
export type Verdict = z.infer<typeof Verdict>;

export const ExperimentRecord = z.object({
  type: z.literal('experiment'),
  ts: isoTime,
  n: z.number().int().nonnegative(),
  parent_commit: commitHash,
  /** The experiment's own commit; null when it never got one (rejected, interrupted early). */
  commit: commitHash.nullable(),
  description: z.string(),
  rationale: z.string(),
  diff: z.string(),
  lines_added: z.number().int().nonnegative(),
  lines_removed: z.number().int().nonnegative(),
  /** Every `key: value` of the summary block; numbers where they parse as numbers. */
  summary: z.record(z.string(), z.union([z.number(), z.string()])),
  metric: z.number().nullable(),
  best_before: z.number().nullable(),
  delta: z.number().nullable(),
  status: ExperimentStatus,
  /** Why a crash, rejection or interruption happened, in words. */
  reason: z.string().nullable(),
  memory_gb: z.number().nonnegative(),
  timings: z.object({
    propose_s: z.number().nonnegative(),
    run_s: z.number().nonnegative(),
    total_s: z.number().nonnegative(),
    /** Seconds the executor sat idle between the previous run's end and this run's start. */
    idle_s: z.number().nonnegative().optional(),
  }),
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable(),
  log_path: z.string().nullable(),
  log_truncated: z.boolean(),
  proposer: z.string(),
  usage: Usage,
  cost_usd: z.number().nonnegative(),
  /** Proposer-specific state (the offline proposer stores the constants it set). */
  proposal_meta: z.unknown().optional(),
  worker,
  /** Content hash of the editable files this experiment ran. */
  state: z.string().optional(),
  /** Its runs; `metric` is their mean. Absent in journals from before repeats (one run). */
  runs: z.array(RunRef).optional(),
  verdict: Verdict.optional(),
  /** Same code as this earlier experiment: its result is reported, nothing ran again. */
  same_as: z.number().int().nonnegative().optional(),
  /** Step mode: how its reviewer decided (the review record of the same n has the note or edit's diff). */
  review: z.object({ action: ReviewAction, source: ReviewSource, waited_s: z.number().nonnegative() }).optional(),
});
export type ExperimentRecord = z.infer<typeof ExperimentRecord>;

export const RunEndRecord = z.object({
  type: z.literal('run_end'),
  ts: isoTime,
  reason: z.enum(['max-experiments', 'hours', 'signal', 'stop', 'exhausted', 'budget', 'error']),
  message: z.string().nullable(),
  best_commit: commitHash.nullable(),
  best_metric: z.number().nullable(),
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
  n: z.number().int().nonnegative(),
  event: z.enum(['pending', 'decision', 'mode']),
  step: z.boolean().optional(),
  action: ReviewAction.optional(),
  source: ReviewSource.optional(),
  waited_s: z.number().nonnegative().optional(),
  note: z.string().optional(),
  edit_diff: z.string().optional(),
  all: z.boolean().optional(),
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
function whatIsWrong(raw: unknown, error: z.ZodError): string {
  const type = (raw as { type?: unknown } | null)?.type;
  const known = typeof type === 'string' && JournalRecord.options.some(o => o.shape.type.value === type);
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
