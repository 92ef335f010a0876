/**
 * The view_run_log tool: a past run's training output, for the model to read what its summary
 * does not say (a warning, the loss going flat, a traceback). Only a log the journal names, only
 * inside the workspace's `.autoresearch/`, never through a link: a run could plant
 * `.autoresearch/…/0007.log -> ~/.ssh/id_rsa`, and what this returns goes to the API. Bounded:
 * at most MAX_LINES lines and MAX_BYTES bytes a call, read from a bounded part of the file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod/mini';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { STATE_DIR } from '../../../core/journal/layout';
import { englishMessages } from '../../../core/journal/zod-english';
import { openStateFile } from '../../workspace/workspace-files';

englishMessages();

/** Lines one call returns at most, and bytes. */
export const MAX_LINES = 200;
export const MAX_BYTES = 16 * 1024;
/** Lines shown when the call names no part. */
export const DEFAULT_TAIL = 60;
/** A line longer than this is cut (a progress bar without newlines). */
const MAX_LINE_CHARS = 1000;
/** How far into a log a line range may reach: past it, the tail is the way in. */
const MAX_SCAN_BYTES = 16 * 1024 * 1024;
const CHUNK = 64 * 1024;

export const ViewRunLogInput = z.object({
  n: z.int().check(z.nonnegative()),
  run: z.optional(z.int().check(z.minimum(1))),
  tail_lines: z.optional(z.int().check(z.minimum(1))),
  range: z.optional(z.array(z.int().check(z.minimum(1))).check(z.length(2))),
});

/** What the tool answers: the text, and whether it is an error for the model to correct. */
export interface LogView {
  content: string;
  isError: boolean;
}

const refuse = (content: string): LogView => ({ content, isError: true });

/** The `.autoresearch` folder a working directory belongs to: its own, or the one a worker's worktree lies in. */
export function stateDirOf(workdir: string): string {
  const abs = path.resolve(workdir);
  const parts = abs.split(path.sep);
  const at = parts.indexOf(STATE_DIR);
  return at > 0 ? parts.slice(0, at + 1).join(path.sep) : path.join(abs, STATE_DIR);
}

/** Answers one view_run_log call from the journal's records (their log paths), reading nothing else. */
export function viewRunLog(workdir: string, history: readonly ExperimentRecord[], input: unknown): LogView {
  const parsed = ViewRunLogInput.safeParse(input);
  if (!parsed.success)
    return refuse(
      `view_run_log needs n (an experiment's number), optionally run (1 for its first run), and tail_lines or range [first, last]: ${z.prettifyError(parsed.error)}`,
    );
  const { n, run = 1, tail_lines: tail, range } = parsed.data;
  if (tail !== undefined && range) return refuse('give tail_lines or range, not both');
  const record = history.find(r => r.n === n);
  if (!record)
    return refuse(
      `there is no experiment #${n} in the history; experiments are numbered 0 to ${history.at(-1)?.n ?? 0}`,
    );
  const runs = record.runs?.length ? record.runs.map(r => r.log_path) : [record.log_path];
  if (run > runs.length) return refuse(`#${n} has ${runs.length} run(s); run is 1 to ${runs.length}`);
  const logPath = runs[run - 1];
  if (!logPath) return refuse(`#${n}${runs.length > 1 ? ` run ${run}` : ''} has no log (it never ran)`);
  const where = confined(workdir, logPath);
  if ('error' in where) return refuse(where.error);
  let fd: number;
  try {
    fd = openStateFile(where.file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return refuse(
      code === 'ENOENT'
        ? `the log of #${n} is gone (${where.shown})`
        : `the log of #${n} is not a regular file (${where.shown}); the tool reads only regular files under ${STATE_DIR}/`,
    );
  }
  try {
    // A folder on the way swapped for a link between the check and the open: the file opened is not the one checked.
    const again = confined(workdir, logPath);
    const opened = fs.fstatSync(fd);
    const checked = 'file' in again ? fs.lstatSync(again.file) : null;
    if (!checked || checked.ino !== opened.ino || checked.dev !== opened.dev)
      return refuse(
        `the log of #${n} changed while it was opened; the tool reads only regular files under ${STATE_DIR}/`,
      );
    const size = opened.size;
    const label = `#${n}${runs.length > 1 ? ` run ${run} of ${runs.length}` : ''}, ${where.shown} (${size} bytes)`;
    if (range) return lineRange(fd, size, range[0], range[1], label);
    return lastLines(fd, size, Math.min(tail ?? DEFAULT_TAIL, MAX_LINES), label);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The log path as a file under the state folder, with no link on the way from that folder down,
 * or why not. The path is the journal's; a damaged or forged journal may name anything.
 */
function confined(workdir: string, logPath: string): { file: string; shown: string } | { error: string } {
  const state = stateDirOf(workdir);
  const file = path.resolve(workdir, logPath);
  const outside = {
    error: `the log of that run (${logPath}) is not under the workspace's ${STATE_DIR}/; the tool reads only logs there`,
  };
  let base = state;
  let rel = path.relative(base, file);
  if (rel.startsWith('..') || path.isAbsolute(rel) || rel === '') {
    // The same folder spelled through a link of the user's above the workspace (/tmp → /private/tmp).
    try {
      base = path.join(fs.realpathSync(path.dirname(state)), STATE_DIR);
    } catch {
      return outside;
    }
    rel = path.relative(base, file);
    if (rel.startsWith('..') || path.isAbsolute(rel) || rel === '') return outside;
  }
  let at = base;
  for (const part of ['', ...rel.split(path.sep)]) {
    at = part ? path.join(at, part) : at;
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(at);
    } catch {
      return { error: `the log of that run is gone (${path.join(STATE_DIR, rel)})` };
    }
    if (stat.isSymbolicLink())
      return {
        error: `${path.relative(path.dirname(base), at)} is a symbolic link (a run may have planted it); the tool reads only regular files under ${STATE_DIR}/ and follows no link`,
      };
  }
  return { file, shown: path.join(STATE_DIR, rel) };
}

const cutLine = (l: string) =>
  l.length > MAX_LINE_CHARS ? `${l.slice(0, MAX_LINE_CHARS)}… (line cut at ${MAX_LINE_CHARS} characters)` : l;

/** Keeps lines (already numbered or not) within MAX_BYTES, from the end or the start. */
function withinBytes(lines: string[], fromEnd: boolean): { lines: string[]; dropped: number } {
  const kept: string[] = [];
  let bytes = 0;
  const order = fromEnd ? [...lines].reverse() : lines;
  for (const l of order) {
    bytes += Buffer.byteLength(l) + 1;
    if (bytes > MAX_BYTES) break;
    kept.push(l);
  }
  return { lines: fromEnd ? kept.reverse() : kept, dropped: lines.length - kept.length };
}

function lastLines(fd: number, size: number, count: number, label: string): LogView {
  const n = Math.min(size, MAX_BYTES * 4);
  const buf = Buffer.alloc(n);
  fs.readSync(fd, buf, 0, n, size - n);
  let lines = buf.toString('utf8').split(/\r\n|\r|\n/);
  if (lines.at(-1) === '') lines.pop();
  // The first line of a window that starts mid-file is cut: left out.
  if (n < size) lines = lines.slice(1);
  const { lines: shown, dropped } = withinBytes(lines.slice(-count).map(cutLine), true);
  const asked = Math.min(count, lines.length);
  const note = dropped ? ` (${dropped} more of the ${asked} asked were left out: ${MAX_BYTES} bytes a call)` : '';
  if (!shown.length) return { content: `${label}: the log is empty.`, isError: false };
  return { content: `${label}: its last ${shown.length} line(s)${note}:\n${shown.join('\n')}`, isError: false };
}

function lineRange(fd: number, size: number, first: number, last: number, label: string): LogView {
  if (last < first) return refuse(`range [${first}, ${last}] is empty; give [first, last] with first ≤ last`);
  const end = Math.min(last, first + MAX_LINES - 1);
  const found: string[] = [];
  let line = 1;
  let partial = '';
  let at = 0;
  const buf = Buffer.alloc(CHUNK);
  // Counts lines chunk by chunk; keeps only those asked for (a line may span chunks, cut at MAX_LINE_CHARS).
  while (at < size && at < MAX_SCAN_BYTES && line <= end) {
    const got = fs.readSync(fd, buf, 0, Math.min(CHUNK, size - at), at);
    if (got <= 0) break;
    at += got;
    const pieces = buf.subarray(0, got).toString('latin1').split('\n');
    for (let i = 0; i < pieces.length; i++) {
      const open = i === pieces.length - 1;
      if (line >= first && line <= end && partial.length <= MAX_LINE_CHARS * 4) partial += pieces[i];
      if (open) break;
      if (line >= first && line <= end)
        found.push(
          `${String(line).padStart(6)}\t${cutLine(Buffer.from(partial, 'latin1').toString('utf8').replace(/\r$/, ''))}`,
        );
      partial = '';
      line++;
      if (line > end) break;
    }
  }
  if (partial && line >= first && line <= end && at >= size)
    found.push(`${String(line).padStart(6)}\t${cutLine(Buffer.from(partial, 'latin1').toString('utf8'))}`);
  if (!found.length) {
    return at >= MAX_SCAN_BYTES && at < size
      ? refuse(`line ${first} lies past the first ${MAX_SCAN_BYTES} bytes of the log; use tail_lines to read its end`)
      : refuse(`range [${first}, ${last}] starts past the end of the log, which has ${line - 1} whole line(s)`);
  }
  const { lines: shown, dropped } = withinBytes(found, false);
  const more = end < last ? ` (at most ${MAX_LINES} lines a call: ask for the rest next)` : '';
  const cut = dropped ? ` (the last ${dropped} were left out: ${MAX_BYTES} bytes a call)` : '';
  return {
    content: `${label}: lines ${first}–${first + shown.length - 1}${more}${cut}:\n${shown.join('\n')}`,
    isError: false,
  };
}
