/** `autoresearch export`: a run as `<tag>.ipynb` in the workspace, readable on GitHub and nbviewer. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { experimentsOf } from '../../core/journal/journal';
import { buildNotebook, type Notebook } from '../../core/views/notebook';
import type { TransferSummary } from '../../core/study/transfer';
import { TransferSummaryFile } from '../../core/views/transfer-view';
import { JournalStore } from '../store/journal-store';
import { pickTag } from './report';
import { studyPaths } from '../study/transfer-store';
import { runPaths } from '../workspace/workspace';
import { UserError } from '../user-error';
import { STATE_DIR } from '../../core/journal/layout';
import { readNoFollow, readRegularIfAny, replaceFile, writeWorkspaceFile } from '../workspace/workspace-files';

/** Bytes read from the end of a log for its tail: LOG_TAIL_LINES lines fit with room to spare. */
const LOG_TAIL_BYTES = 64 * 1024;

/** The end of a log file, or null when it is gone (logs live in git-ignored state and may be cleaned). */
function readLogTail(dir: string, logPath: string | null): string | null {
  if (!logPath) {
    return null;
  }
  const file = path.resolve(dir, logPath);
  try {
    // A journal may be damaged or forged, and a training run may have swapped its log for a link:
    // only a regular file that really lies in the workspace's .autoresearch folder is embedded.
    const state = fs.realpathSync(path.join(dir, STATE_DIR));
    const real = fs.realpathSync(file);
    if (!real.startsWith(state + path.sep)) {
      return `[autoresearch: the log is not embedded: ${logPath} resolves outside ${STATE_DIR}/]`;
    }
    const fd = fs.openSync(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    try {
      const stat = fs.fstatSync(fd);
      if (!stat.isFile()) return null;
      const size = stat.size;
      const length = Math.min(size, LOG_TAIL_BYTES);
      const buf = Buffer.alloc(length);
      fs.readSync(fd, buf, 0, length, size - length);
      return buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** The run's transfer study, null when it has none, or what is wrong with its summary file and how to mend it. */
function readTransfer(dir: string, tag: string): TransferSummary | string | null {
  const file = studyPaths(dir, tag).summary;
  let text: string;
  try {
    text = readNoFollow(file).toString('utf8');
  } catch {
    return null;
  }
  const redo = `rewrite it with: autoresearch transfer ${dir} --tag ${tag}`;
  try {
    const parsed = TransferSummaryFile.safeParse(JSON.parse(text));
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    return `The study's summary \`${path.relative(dir, file)}\` is not one the engine wrote (${issue.path.join('.')}: ${issue.message}); ${redo}`;
  } catch {
    return `The study's summary \`${path.relative(dir, file)}\` is not JSON; ${redo}`;
  }
}

/** The notebook of a run (the latest when no tag is given). */
export function notebookOf(dir: string, tag?: string): { tag: string; notebook: Notebook } {
  const t = pickTag(dir, tag);
  const records = new JournalStore(runPaths(dir, t).journal).read();
  // Never through a link a run put at program.md (its target would be embedded), nor waiting on a FIFO.
  const program = readRegularIfAny(dir, 'program.md')?.toString('utf8') ?? '';
  const logs: Record<number, string> = {};
  for (const e of experimentsOf(records)) {
    const log = e.status === 'crash' ? readLogTail(dir, e.log_path) : null;
    if (log !== null) {
      logs[e.n] = log;
    }
  }
  const transfer = readTransfer(dir, t);
  return { tag: t, notebook: buildNotebook({ program, records, tag: t, logs, transfer }) };
}

/**
 * Writes a file so a reader never sees it half-written and nothing a run planted is written
 * through: in the workspace, a temp file made exclusively in .autoresearch/ (which a sandboxed run
 * cannot write); elsewhere, one made exclusively beside it, under an unpredictable name; then a rename.
 */
export function writeAtomic(file: string, text: string, dir?: string): void {
  const rel = dir === undefined ? null : path.relative(dir, file);
  if (dir !== undefined && rel && !rel.startsWith('..') && !path.isAbsolute(rel)) {
    writeWorkspaceFile(dir, rel, text);
  } else {
    replaceFile(file, text);
  }
}

/**
 * Exports a run as a notebook: to `out` (relative to the current folder), else `<dir>/<tag>.ipynb`;
 * `out` "-" means the JSON goes to `write` (stdout) instead of a file.
 */
export function exportNotebook(
  dir: string,
  opts: { tag?: string; out?: string; write?: (text: string) => void } = {},
): { tag: string; file: string | null; experiments: number } {
  const { tag, notebook } = notebookOf(dir, opts.tag);
  const text = JSON.stringify(notebook, null, 1) + '\n';
  const experiments = notebook.cells.filter(c => c.id.startsWith('experiment-')).length;
  if (opts.out === '-') {
    (opts.write ?? (t => process.stdout.write(t)))(text);
    return { tag, file: null, experiments };
  }
  const file = path.resolve(opts.out ?? path.join(dir, `${tag}.ipynb`));
  if (!fs.existsSync(path.dirname(file))) {
    throw new UserError(`cannot write ${file}: the folder ${path.dirname(file)} does not exist`);
  }
  writeAtomic(file, text, dir);
  return { tag, file, experiments };
}
