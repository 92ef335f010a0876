/**
 * The journal: an append-only JSON-lines file, one record per event, in
 * `<workspace>/.autoresearch/<tag>/journal.jsonl`. Together with git it is the
 * source of truth; the terminal, the panel, results.tsv and a resumed engine
 * are all rebuilt from it. Every record is validated on write and on read.
 */
import { z } from 'zod';
import { PriceRow } from './pricing';

export const EXPERIMENT_STATUSES = ['keep', 'discard', 'crash', 'interrupted', 'rejected'] as const;
export const ExperimentStatus = z.enum(EXPERIMENT_STATUSES);
export type ExperimentStatus = z.infer<typeof ExperimentStatus>;

export const Usage = z.object({
  input_tokens: z.number().int().nonnegative(),
  output_tokens: z.number().int().nonnegative(),
  cache_creation_input_tokens: z.number().int().nonnegative(),
  cache_read_input_tokens: z.number().int().nonnegative()
});
export type Usage = z.infer<typeof Usage>;
export const ZERO_USAGE: Usage = {
  input_tokens: 0,
  output_tokens: 0,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0
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
  /** Experiments run at once (--workers); absent in journals from before workers existed, meaning 1. */
  workers: z.number().int().min(1).optional()
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
  pid: z.number().int()
});
export type RunStartRecord = z.infer<typeof RunStartRecord>;

/** Written before an experiment starts, so a resumed engine can find one left in flight. */
export const ExperimentStartRecord = z.object({
  type: z.literal('experiment_start'),
  ts: isoTime,
  n: z.number().int().nonnegative(),
  parent_commit: commitHash,
  description: z.string(),
  worker
});
export type ExperimentStartRecord = z.infer<typeof ExperimentStartRecord>;

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
    idle_s: z.number().nonnegative().optional()
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
  worker
});
export type ExperimentRecord = z.infer<typeof ExperimentRecord>;

export const RunEndRecord = z.object({
  type: z.literal('run_end'),
  ts: isoTime,
  reason: z.enum(['max-experiments', 'hours', 'signal', 'stop', 'exhausted', 'budget', 'error']),
  message: z.string().nullable(),
  best_commit: commitHash.nullable(),
  best_metric: z.number().nullable()
});
export type RunEndRecord = z.infer<typeof RunEndRecord>;

export const JournalRecord = z.discriminatedUnion('type', [
  RunStartRecord,
  ExperimentStartRecord,
  ExperimentRecord,
  RunEndRecord
]);
export type JournalRecord = z.infer<typeof JournalRecord>;

/** Parses journal text; a bad line is an error naming its line number (a torn last line is dropped). */
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
      throw new Error(`journal line ${i + 1} is not JSON; move the file aside or repair that line`);
    }
    const parsed = JournalRecord.safeParse(raw);
    if (!parsed.success) {
      throw new Error(`journal line ${i + 1} is invalid: ${z.prettifyError(parsed.error)}`);
    }
    records.push(parsed.data);
  });
  return records;
}

/** The experiment records of a journal, in order. */
export function experimentsOf(records: JournalRecord[]): ExperimentRecord[] {
  return records.filter((r): r is ExperimentRecord => r.type === 'experiment');
}
