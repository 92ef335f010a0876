/**
 * The model's research notes (issue 28): findings, dead ends and open hypotheses, rewritten by
 * the model every NOTES_EVERY experiments. When they are due is derived from the history (and
 * the proposals in flight), so a resumed run knows; the notes are journaled in the meta of the
 * proposal that wrote them, and the latest version is a prompt block of its own, which changes
 * only when they are rewritten and so stays in the cache between rewrites.
 */
import type { ExperimentRecord } from '../../../core/journal/journal';
import { latestNotes, notesOf, NOTES_SECTION_CHARS } from '../../../core/journal/research-notes';
import { FINISH, NOTES } from './tool-defs';

/** Experiments that ran (the baseline not counted) after which the notes are due again. */
export const NOTES_EVERY = 25;

/** The notes are due: how many experiments ran since the last ones, and what the new ones will cover. */
export interface NotesDue {
  /** Experiments that ran since the last notes (or since the start). */
  ran: number;
  /** The experiment the last notes were written after; null when none were written. */
  last: number | null;
  /** The newest experiment in the history: what notes written now are written after. */
  through: number;
}

/** Whether a record is an experiment that ran (a rejected proposal or an interrupted one taught nothing new). */
const ran = (r: ExperimentRecord) => r.n > 0 && (r.status === 'keep' || r.status === 'discard' || r.status === 'crash');

/**
 * Whether the notes are due for the next proposal: `every` experiments or more ran since the last
 * notes (the baseline not counted), or as many with none written yet. `pending` are the metas of
 * the proposals in flight (the experiment training while this one is drafted, other workers'):
 * notes one of them wrote count as written, so a pipelined draft does not write them again.
 */
export function notesDue(
  history: readonly ExperimentRecord[],
  pending: readonly unknown[] = [],
  every = NOTES_EVERY,
): NotesDue | null {
  const throughs = [latestNotes(history)?.through, ...pending.map(m => notesOf(m)?.through)];
  const written = throughs.filter((t): t is number => t !== undefined);
  const last = written.length ? Math.max(...written) : null;
  const count = history.filter(r => ran(r) && (last === null || r.n > last)).length;
  if (count < every) return null;
  return { ran: count, last, through: Math.max(...history.map(r => r.n)) };
}

/** The notes block of the prompt (cached just before the editable files), or null when there are none. */
export function notesBlock(history: readonly ExperimentRecord[]): string | null {
  const notes = latestNotes(history);
  if (!notes) return null;
  // A pure function of one journaled record: the block reads the same until the notes are rewritten.
  return [
    `# Your research notes, as you wrote them with #${notes.n} after #${notes.through} had finished`,
    '',
    notes.text,
  ].join('\n');
}

/** The moving part's request for the notes, when they are due. */
export function notesAsk(due: NotesDue): string {
  const since =
    due.last === null
      ? `${due.ran} experiments have run and you have written no notes yet`
      : `${due.ran} experiments have run since your notes written after #${due.last}`;
  return [
    '## Your research notes are due',
    `${since}. Before ${FINISH}, call ${NOTES} with your notes rewritten from the whole history: findings (what is established,`,
    'with the experiment numbers and gains in σ), dead ends (what did not help and should not be tried again, and why), and open',
    `hypotheses (what to test next, and why). They replace your previous notes, so carry over what still holds. At most ${NOTES_SECTION_CHARS}`,
    'characters per section; terse lines are best.',
  ].join('\n');
}

/** The journaled text of the notes: the three sections under their headings. */
export function notesText(sections: { findings: string; dead_ends: string; open_hypotheses: string }): string {
  return [
    `## Findings\n${sections.findings.trim()}`,
    `## Dead ends\n${sections.dead_ends.trim()}`,
    `## Open hypotheses\n${sections.open_hypotheses.trim()}`,
  ].join('\n\n');
}
