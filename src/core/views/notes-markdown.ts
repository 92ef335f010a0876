/**
 * The model's research notes as a notebook's markdown (`autoresearch export`): the notes are a
 * model's text, and a run can plant anything in a journal, so every line is written literally
 * (./markdown-text.ts: no links, HTML, emphasis or maths from its punctuation). Only the three
 * section headings the engine writes (src/engine/proposers/claude/notes.ts) become markup.
 */
import type { NotesVersion } from '../journal/research-notes';
import { markdownLiteral } from './markdown-text';

/** The headings the engine puts before each section of the notes. */
const HEADINGS = new Set(['## Findings', '## Dead ends', '## Open hypotheses']);

/** One version of the notes as a markdown cell's text: a heading saying when they were written, then each line literally. */
export function notesMarkdown(v: NotesVersion): string {
  const lines = v.text.replace(/\r\n?/g, '\n').split('\n');
  // Each line kept a line (a hard break), a blank one a new paragraph; leading spaces would make code.
  const body = lines.map(l => (HEADINGS.has(l) ? `**${l.slice(3)}**` : markdownLiteral(l.trim()))).join('  \n');
  return `### Research notes\n\n*Written by the proposal of #${v.n}, after #${v.through} had finished.*\n\n${body}\n`;
}
