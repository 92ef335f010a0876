/**
 * What the routes of the panel's tools answer: GET compare, GET and POST review, POST runs/step,
 * GET and POST transfer. The panel checks every answer with these schemas as it arrives
 * (src/lab/api/compare.ts, review.ts, transfer.ts); the build writes them into
 * engine/rest.schema.json too, against which the Python tests check the server's real answers.
 * Plain objects, not strict: the panel reads the fields it knows and tolerates more.
 */
import * as z from 'zod/mini';
import { ExperimentRecord } from '../journal/journal';
import { englishMessages } from '../journal/zod-english';
import { PendingReview } from '../step-mode/review';
import { TransferSummaryFile } from '../views/transfer-view';

englishMessages();

/** Where a side's code came from: its commit, or recomposed from its parent and its journaled diff. */
const Source = z.nullable(z.enum(['commit', 'journal']));

export const CompareAnswer = z.object({
  tag: z.string(),
  metric: z.nullable(z.string()),
  direction: z.nullable(z.enum(['lower', 'higher'])),
  editable: z.array(z.string()),
  /** The run's best experiment (state.json's), null before any keep. */
  best: z.nullable(z.int()),
  a: ExperimentRecord,
  b: ExperimentRecord,
  /** `git diff <a> <b> -- <editable>`; null when one side's code cannot be had (`reason` says why). */
  diff: z.nullable(z.string()),
  /** The diff was cut at the server's cap (at a line's end). */
  truncated: z.boolean(),
  sources: z.object({ a: Source, b: Source }),
  /** Why diff is null, or that a side was recomposed from the journal; null when both had commits. */
  reason: z.nullable(z.string()),
});
export type CompareAnswer = z.infer<typeof CompareAnswer>;

/** `pending` null: nothing awaits review (a normal state, answered 200). */
export const ReviewAnswer = z.object({ tag: z.string(), pending: z.nullable(PendingReview) });
export const DecisionAnswer = z.object({ tag: z.string(), n: z.int(), decision: z.enum(['approve', 'reject']) });
export const StepAnswer = z.object({ tag: z.string(), step: z.boolean() });

/** program.md's `transfer:` values come as YAML wrote them: `AUTORESEARCH_SCALE: 2` is a number. */
const EnvValue = z.pipe(
  z.union([z.string(), z.number(), z.boolean()]),
  z.transform(v => String(v)),
);

/**
 * A summary.json the panel cannot read (from another version of the engine, say) is left out
 * with a warning, as a run_state is: the study's state still shows.
 */
const Summary = z.pipe(
  z.unknown(),
  z.transform(value => {
    if (value === null || value === undefined) {
      return null;
    }
    const parsed = TransferSummaryFile.safeParse(value);
    if (!parsed.success) {
      console.warn(`autoresearch: a transfer summary the panel cannot read was left out: ${parsed.error.message}`);
      return null;
    }
    return parsed.data;
  }),
);

export const TransferState = z.object({
  tag: z.string(),
  running: z.boolean(),
  summary: Summary,
  defaults: z.pipe(
    z.optional(
      z.nullable(
        z.object({
          env: z.optional(z.nullable(z.record(z.string(), EnvValue))),
          budget_s: z.optional(z.nullable(z.number())),
        }),
      ),
    ),
    z.transform(d => ({ env: d?.env ?? {}, budget_s: d?.budget_s ?? null })),
  ),
  /** Why program.md's `transfer:` block could not be read, or null. */
  defaults_problem: z.optional(z.nullable(z.string())),
  failure: z.optional(z.nullable(z.object({ message: z.string(), exit_code: z.optional(z.nullable(z.number())) }))),
  log: z.optional(z.nullable(z.string())),
});
export type TransferState = z.infer<typeof TransferState>;

export const TransferStarted = z.object({ tag: z.string(), pid: z.int(), log: z.string() });
