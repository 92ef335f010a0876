/**
 * The model's research notes (issue 28): findings, dead ends and open hypotheses, rewritten by
 * the model every NOTES_EVERY experiments. Stub until the notes work lands.
 */
import type { ExperimentRecord } from '../../../core/journal/journal';

/** The notes block of the prompt (cached just before the history's moving part), or null when there are none. */
export function notesBlock(_history: readonly ExperimentRecord[]): string | null {
  return null;
}
