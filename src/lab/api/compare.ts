/**
 * `GET compare`: two experiments of a run side by side, their records and the diff between the
 * code each ran. The answer is checked with zod (src/core/api/tool-answers.ts), the records with the
 * journal's own schema, so the compare view never draws from a shape it does not know.
 */
import type { ServerConnection } from '@jupyterlab/services';
import * as z from 'zod/mini';
import { CompareAnswer } from '../../core/api/tool-answers';
import { query, requestAPI } from './server';
import { englishMessages } from '../../core/journal/zod-english';

englishMessages();

export { CompareAnswer };

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
