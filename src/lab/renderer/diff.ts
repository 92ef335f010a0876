/**
 * Splits a unified diff into lines with a kind each, so the renderer can colour them.
 * Pure: no DOM.
 */

/** What a diff line is: a file header, a hunk header, an added, removed or unchanged line. */
export type DiffLineKind = 'file' | 'hunk' | 'add' | 'del' | 'context';

export interface IDiffLine {
  kind: DiffLineKind;
  /** The whole line as it appears in the diff, prefix included. */
  text: string;
}

/** The lines of a unified diff, each with its kind (a trailing newline adds no line). */
export function parseDiff(diff: string): IDiffLine[] {
  if (diff === '') {
    return [];
  }
  const lines = diff.replace(/\r\n/g, '\n').replace(/\n$/, '').split('\n');
  return lines.map((text, i) => ({ kind: kindOf(text, lines[i - 1], lines[i + 1]), text }));
}

function kindOf(line: string, prev: string | undefined, next: string | undefined): DiffLineKind {
  // A "--- a/x" / "+++ b/x" pair is a file header, not a removal and an addition; a removed
  // line that happens to start with "-- " is not followed by "+++ ".
  if ((line.startsWith('--- ') && next?.startsWith('+++ ')) || (line.startsWith('+++ ') && prev?.startsWith('--- '))) {
    return 'file';
  }
  if (line.startsWith('diff ') || line.startsWith('index ')) {
    return 'file';
  }
  if (line.startsWith('@@')) {
    return 'hunk';
  }
  if (line.startsWith('+')) {
    return 'add';
  }
  if (line.startsWith('-')) {
    return 'del';
  }
  return 'context';
}
