/**
 * The experiment MIME data's schema. Loaded on first render, not at JupyterLab's start: zod
 * is ~380 KiB minified and every mime extension loads with the page.
 */
import { z } from 'zod';
import type { ExperimentBundleData } from '../../core/bundle';
import { ExperimentRecord } from '../../core/journal';

/** The MIME data as the engine writes it: a journal record less proposer internals, plus context. */
export const ExperimentBundleSchema = ExperimentRecord.omit({ type: true, proposal_meta: true }).extend({
  metric_name: z.string(),
  direction: z.enum(['lower', 'higher']),
  log_tail: z.string().nullable(),
  // The proposal's notes the output shows (core/bundle.ts's shownNotes).
  reasoning: z.string().optional(),
  expected_delta: z.number().optional(),
  lesson: z.object({ about: z.number().int(), text: z.string() }).optional(),
  effort: z.string().optional(),
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
