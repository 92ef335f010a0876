/**
 * Step mode: a proposal waits for a human before it is committed. Two files carry it, both in
 * `.autoresearch/<tag>/` (names in ./layout): the engine writes the pending proposal (what a
 * reviewer needs to judge it, and its full files so a resumed engine offers the same one again),
 * and a reviewer — `autoresearch approve/reject`, the TTY prompt, later the panel through the
 * server — writes a decision naming the proposal's number, which the waiting engine takes. A third,
 * the mode file, turns step mode on or off while the run goes on.
 * Plain JSON all ways, so the server can read and write them without TypeScript. Browser-safe.
 */
import * as z from 'zod/mini';
import { englishMessages } from '../journal/zod-english';

englishMessages();

/** Where a decision came from. */
export const REVIEW_SOURCES = ['cli', 'tty', 'panel'] as const;
export const ReviewSource = z.enum(REVIEW_SOURCES);
export type ReviewSource = z.infer<typeof ReviewSource>;

/** What was decided: an edit is an approval of the reviewer's version of the files. */
export const REVIEW_ACTIONS = ['approve', 'edit', 'reject'] as const;
export const ReviewAction = z.enum(REVIEW_ACTIONS);
export type ReviewAction = z.infer<typeof ReviewAction>;

/** The proposal awaiting review (REVIEW_PENDING_FILE), rewritten atomically by the engine. */
export const PendingReview = z.object({
  n: z.int().check(z.nonnegative()),
  /** When the engine first offered it (kept across a resume). */
  since: z.string().check(z.minLength(1)),
  description: z.string(),
  rationale: z.string(),
  /** The proposal against the best, unified. */
  diff: z.string(),
  /** The proposed editable files, whole: what an editor opens, and what a resumed engine applies again. */
  files: z.record(z.string(), z.string()),
  /** The files a decision may replace. */
  editable: z.array(z.string()),
  proposer: z.string(),
  /** Why the proposer chose it (the offline proposer: the rule that picked the move), or null. */
  why: z.nullable(z.string()),
  meta: z.optional(z.unknown()),
  /** The last decision the engine could not use (an edit that fails the checks), so the reviewer sees why. */
  refused: z.optional(z.object({ ts: z.string(), message: z.string() })),
});
export type PendingReview = z.infer<typeof PendingReview>;

/** A reviewer's answer (REVIEW_DECISION_FILE); the engine deletes it once read. */
export const ReviewDecision = z.object({
  /** The proposal it answers: a decision for any other number is refused, never applied. */
  n: z.int().check(z.nonnegative()),
  decision: z.enum(['approve', 'reject']),
  source: ReviewSource,
  ts: z.string().check(z.minLength(1)),
  /** A rejection's reason, passed to the next proposal. */
  note: z.optional(z.string()),
  /** Approve, and review nothing more in this run. */
  all: z.optional(z.boolean()),
  /** The reviewer's version of editable files (path → whole content): what runs instead of the proposal's. */
  files: z.optional(z.record(z.string(), z.string())),
});
export type ReviewDecision = z.infer<typeof ReviewDecision>;

/**
 * Step mode switched while a run goes on (REVIEW_MODE_FILE), by `autoresearch step` or the panel
 * through the server: before each proposal is offered the engine takes a file newer than what it
 * knew, and journals the change.
 */
export const ReviewMode = z.object({
  step: z.boolean(),
  source: ReviewSource,
  ts: z.string().check(z.minLength(1)),
});
export type ReviewMode = z.infer<typeof ReviewMode>;

/** The reason a rejected experiment records. */
export function reviewerReason(note: string | undefined): string {
  const text = note?.trim();
  return text ? `rejected by reviewer: ${text}` : 'rejected by reviewer';
}
