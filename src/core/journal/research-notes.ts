/**
 * The model's research notes (issue 28): findings, dead ends and open hypotheses, which the
 * claude proposer rewrites every few dozen experiments and journals in the meta of the proposal
 * that wrote them (`proposal_meta.notes`). Pure: the engine's prompt, the panel and the export
 * read the latest version, or each, from here.
 */
import * as z from 'zod/mini';
import { englishMessages } from './zod-english';

englishMessages();

/** The most characters one section of the notes may have (the model is told; longer is refused). */
export const NOTES_SECTION_CHARS = 2000;
/** The most characters of a journaled notes text: its three sections and their headings. */
export const NOTES_TEXT_CHARS = 3 * NOTES_SECTION_CHARS + 200;

/**
 * One version of the notes: the text, and the last experiment (its number) it was written after.
 * A text longer than NOTES_TEXT_CHARS was not written by this engine: a reader leaves it out.
 */
export const ResearchNotes = z.object({
  text: z.string().check(z.maxLength(NOTES_TEXT_CHARS)),
  through: z.int().check(z.nonnegative()),
});
export type ResearchNotes = z.infer<typeof ResearchNotes>;

/** A version of the notes and the experiment whose proposal wrote it. */
export interface NotesVersion extends ResearchNotes {
  /** The experiment whose proposal wrote them (its record carries them). */
  n: number;
}

const Carrier = z.looseObject({ notes: ResearchNotes });

/** The notes a proposal's meta carries, or null (none, or not in the journal's form). */
export function notesOf(meta: unknown): ResearchNotes | null {
  const parsed = Carrier.safeParse(meta);
  return parsed.success ? parsed.data.notes : null;
}

/** Every version of the notes, in the order the records list them. */
export function notesVersions(records: ReadonlyArray<{ n: number; proposal_meta?: unknown }>): NotesVersion[] {
  return records.flatMap(r => {
    const notes = notesOf(r.proposal_meta);
    return notes ? [{ ...notes, n: r.n }] : [];
  });
}

/**
 * The latest notes: the version written after the most experiments (with several workers a later
 * record may carry older notes), the later record on a tie; null when none was written.
 */
export function latestNotes(records: ReadonlyArray<{ n: number; proposal_meta?: unknown }>): NotesVersion | null {
  let best: NotesVersion | null = null;
  for (const v of notesVersions(records)) if (!best || v.through >= best.through) best = v;
  return best;
}
