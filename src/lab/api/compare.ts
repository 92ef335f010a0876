/**
 * `GET compare`: two experiments of a run side by side, their records and the diff between the
 * code each ran. The answer is checked with zod, the records with the journal's own schema, so the
 * compare view never draws from a shape it does not know.
 */
import type { ServerConnection } from '@jupyterlab/services';
import * as z from 'zod/mini';
import { ExperimentRecord } from '../../core/journal/journal';
import { englishMessages } from '../../core/journal/zod-english';
import { query, requestAPI } from './server';

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

/** Which experiment to compare: its number, or the run's best keep. */
export type CompareSide = number | 'best';

/**
 * Experiments a and b of run `tag` side by side. Rejects with the server's ResponseError (400
 * naming a bad number, 404 for one the journal lacks) or when the answer is not what it should be.
 */
export async function fetchCompare(
  settings: ServerConnection.ISettings,
  path: string,
  tag: string,
  a: CompareSide,
  b: CompareSide,
): Promise<CompareAnswer> {
  const data = await requestAPI<unknown>(`compare${query({ path, tag, a, b })}`, settings);
  const parsed = CompareAnswer.safeParse(data);
  if (!parsed.success) {
    throw new Error(`autoresearch: GET compare answered something unexpected: ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}
