/**
 * The transfer study's journal, `.autoresearch/<tag>/transfer/journal.jsonl`: append-only JSON
 * lines like the run's journal, validated on write and read. A study replays the run's kept
 * commits at a larger scale (and, with --ablate, the final best with one change reverted), each
 * run journaled the moment it ends, so a rerun after kill -9 counts what is there and runs the rest.
 */
import * as z from 'zod/mini';
import { MAX_TIMER_S } from '../config/run-options';
import { englishMessages } from '../journal/zod-english';

englishMessages();

const isoTime = z.string().check(z.minLength(1));
const commitHash = z.string().check(z.regex(/^[0-9a-f]{7,64}$/));

/**
 * A name a shell and Python's os.environ both take, matched whole; the same syntax to Python's re,
 * so the server checks POST transfer's env with it (engine/rules.json).
 */
export const ENV_NAME_PATTERN = '[A-Za-z_][A-Za-z0-9_]*';
export const ENV_NAME = new RegExp(`^(?:${ENV_NAME_PATTERN})$`);

/** Front matter `transfer:` — what the larger scale is, the study's defaults (flags win). */
export const TransferSetting = z.strictObject({
  // YAML reads `AUTORESEARCH_SCALE: 2` as a number; the environment only holds text.
  env: z.optional(
    z.record(
      z.string().check(z.regex(ENV_NAME, 'must be an environment variable name')),
      z.pipe(z.union([z.string(), z.number()]), z.transform(String)),
    ),
  ),
  budget_s: z.optional(z.number().check(z.positive(), z.maximum(MAX_TIMER_S))),
});
export type TransferSetting = z.infer<typeof TransferSetting>;

/** Written at every start of the study (the first one fixes what the study is). */
export const StudyStartRecord = z.object({
  type: z.literal('study_start'),
  ts: isoTime,
  /** The run whose commits are replayed. */
  tag: z.string(),
  /** The larger scale: passed to every transfer run. */
  env: z.record(z.string(), z.string()),
  /** Training budget of a transfer run; ablation runs use the run's own. */
  budget_s: z.number().check(z.positive()),
  timeout_s: z.number().check(z.positive()),
  /** Runs of each commit (K). */
  runs: z.int().check(z.minimum(2)),
  ablate: z.boolean(),
  executor: z.string(),
  resume: z.boolean(),
  engine_version: z.string(),
  pid: z.int(),
});
export type StudyStartRecord = z.infer<typeof StudyStartRecord>;

/** `transfer`: a kept commit (or the baseline) at the larger scale; `ablate`: the final best without one change, at the search scale. */
export const STUDY_KINDS = ['transfer', 'ablate'] as const;
export type StudyKind = (typeof STUDY_KINDS)[number];

/** One training run of the study. */
export const StudyRunRecord = z.object({
  type: z.literal('study_run'),
  ts: isoTime,
  kind: z.enum(STUDY_KINDS),
  /** The commit checked out: the one replayed, or (ablate) the final best the revert was applied to. */
  commit: commitHash,
  /** Ablate: the kept change reverted; null for a transfer run. */
  reverted: z.nullable(commitHash),
  /** Content hash of the editable files that ran. */
  state: z.string().check(z.minLength(1)),
  /** This target's k-th run (1..K). */
  k: z.int().check(z.minimum(1)),
  seed: z.int(),
  /** Null when the run crashed. */
  metric: z.nullable(z.number()),
  reason: z.nullable(z.string()),
  summary: z.record(z.string(), z.union([z.number(), z.string()])),
  run_s: z.number().check(z.nonnegative()),
  exit_code: z.nullable(z.int()),
  signal: z.nullable(z.string()),
  memory_gb: z.number().check(z.nonnegative()),
  log_path: z.nullable(z.string()),
  sandbox: z.optional(z.enum(['on', 'off'])),
  /** Seconds a scheduler (Slurm) held the run before it started; its job. */
  queue_s: z.optional(z.number().check(z.nonnegative())),
  job: z.optional(z.object({ scheduler: z.literal('slurm'), id: z.string(), node: z.optional(z.string()) })),
});
export type StudyRunRecord = z.infer<typeof StudyRunRecord>;

/** Ablate: reverting a change from the final best conflicted, so it cannot be removed alone. */
export const RevertConflictRecord = z.object({
  type: z.literal('revert_conflict'),
  ts: isoTime,
  commit: commitHash,
  reverted: commitHash,
  /** git's words, shortened. */
  message: z.string(),
});
export type RevertConflictRecord = z.infer<typeof RevertConflictRecord>;

export const StudyEndRecord = z.object({
  type: z.literal('study_end'),
  ts: isoTime,
  reason: z.enum(['done', 'signal', 'error']),
  message: z.nullable(z.string()),
});
export type StudyEndRecord = z.infer<typeof StudyEndRecord>;

export const StudyRecord = z.discriminatedUnion('type', [
  StudyStartRecord,
  StudyRunRecord,
  RevertConflictRecord,
  StudyEndRecord,
]);
export type StudyRecord = z.infer<typeof StudyRecord>;

/** Parses the study journal; a torn last line (a kill mid-write) is dropped, any other bad line throws naming its number. */
export function parseStudyJournal(text: string): StudyRecord[] {
  const lines = text.split('\n');
  const out: StudyRecord[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      if (i === lines.length - 1) return;
      throw new Error(`line ${i + 1} is not JSON; repair or delete it`);
    }
    const parsed = StudyRecord.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(`line ${i + 1} is invalid: ${issue.path.join('.') || 'the record'}: ${issue.message}`);
    }
    out.push(parsed.data);
  });
  return out;
}

/** Runs of one target so far: a transfer of `commit`, or the ablation reverting `reverted`. */
export function studyRunsOf(records: readonly StudyRecord[], kind: StudyKind, key: string): StudyRunRecord[] {
  return records.filter(
    (r): r is StudyRunRecord =>
      r.type === 'study_run' && r.kind === kind && (kind === 'transfer' ? r.commit : r.reverted) === key,
  );
}
