/** Text helpers of the edit session: where a string occurs, line numbers, `cat -n` views, read-only files. */
import * as fs from 'node:fs';
import { openRegular } from '../../workspace/workspace-files';

/** The most of a read-only file one view shows (a data file may be large). */
export const READONLY_READ_BYTES = 256 * 1024;

/** A read-only file's text, from the workspace (the engine hash-checks it around every run); null when unreadable. */
export function readonlyText(workdir: string, file: string): string | null {
  try {
    // Not through a link nor waiting on a FIFO a run put in the file's place.
    const fd = openRegular(workdir, file);
    try {
      const buf = Buffer.alloc(Math.min(READONLY_READ_BYTES, fs.fstatSync(fd).size));
      fs.readSync(fd, buf, 0, buf.length, 0);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** Start offsets of the non-overlapping occurrences of needle. */
export function occurrences(text: string, needle: string): number[] {
  const found: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) found.push(i);
  return found;
}

export function lineOf(text: string, offset: number): number {
  return text.slice(0, offset).split('\n').length;
}

/** Lines from..to (1-based, inclusive) with their numbers, like `cat -n`. */
export function numbered(lines: string[], from: number, to: number): string {
  return lines
    .slice(from - 1, to)
    .map((l, i) => `${String(from + i).padStart(6)}\t${l}`)
    .join('\n');
}
