/**
 * The experiment MIME data's schema. Loaded on first render, not at JupyterLab's start: every
 * mime extension loads with the page, and the schema brings the journal's and zod's validators.
 */
import * as z from 'zod/mini';
import type { ExperimentBundleData } from '../../core/views/bundle';
import { ExperimentRecord } from '../../core/journal/journal';
import { englishMessages } from '../../core/journal/zod-english';

englishMessages();

/** The MIME data as the engine writes it: a journal record less proposer internals, plus context. */
export const ExperimentBundleSchema = z.extend(z.omit(ExperimentRecord, { type: true, proposal_meta: true }), {
  metric_name: z.string(),
  direction: z.enum(['lower', 'higher']),
  log_tail: z.nullable(z.string()),
  // The proposal's notes the output shows (core/bundle.ts's shownNotes).
  reasoning: z.optional(z.string()),
  expected_delta: z.optional(z.number()),
  lesson: z.optional(z.object({ about: z.int(), text: z.string() })),
  effort: z.optional(z.string()),
});

/** The data as an experiment, or the reasons it is not one, in words. */
export function parseExperimentData(
  data: unknown,
): { ok: true; data: ExperimentBundleData } | { ok: false; error: string } {
  const parsed = ExperimentBundleSchema.safeParse(data);
  return parsed.success
    ? { ok: true, data: parsed.data as ExperimentBundleData }
    : { ok: false, error: z.prettifyError(parsed.error) };
}
