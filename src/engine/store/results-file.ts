/**
 * results.tsv on disk. The journals are the source of truth: the file holds the rows of every
 * run's journal in this workspace (each tag's), in the order they were written, in the
 * original's format (src/core/journal/results.ts). A training run or a hand may delete or reshape it, so
 * before each append the engine checks that the file is still the one it left — one stat: size,
 * mtime and inode — and only when it is not reads it; if it does not match the journals it is
 * rebuilt from them, the old file kept in .autoresearch/, and a note says so.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { experimentsOf, type ExperimentRecord, type JournalRecord } from '../../core/journal/journal';
import { belongsInResults, RESULTS_HEADER, RESULTS_HEADER_WORKERS, resultsRow } from '../../core/journal/results';
import { JournalStore } from './journal-store';
import { runPaths } from '../workspace/workspace';
import { STATE_DIR } from '../../core/journal/layout';
import { NotRegularFile, openNoFollow, readNoFollow, replaceFile } from '../workspace/workspace-files';

function resultsFile(dir: string): string {
  return path.join(dir, 'results.tsv');
}

function readLines(file: string): string[] {
  return fs.existsSync(file) ? readNoFollow(file).toString('utf8').split('\n').filter(Boolean) : [];
}

/** Whether the file has (or, new, will get) the worker column. */
function hasWorkerColumn(file: string, record: ExperimentRecord): boolean {
  const fresh = !fs.existsSync(file) || fs.statSync(file).size === 0;
  if (fresh) {
    return record.worker !== undefined;
  }
  const fd = openNoFollow(file);
  try {
    const head = Buffer.alloc(RESULTS_HEADER_WORKERS.length + 1);
    const got = fs.readSync(fd, head, 0, head.length, 0);
    return head.subarray(0, got).toString('utf8').split('\n')[0] === RESULTS_HEADER_WORKERS;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Appends to the file itself, never through a link a training run may have put in its place
 * (O_NOFOLLOW), nor waiting on a FIFO (O_NONBLOCK: no reader is ENXIO, one is refused below).
 */
function appendNoFollow(file: string, text: string): void {
  const { O_APPEND, O_CREAT, O_NOFOLLOW, O_NONBLOCK, O_WRONLY } = fs.constants;
  const fd = fs.openSync(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o644);
  try {
    if (!fs.fstatSync(fd).isFile())
      throw new NotRegularFile(`${file} is not a regular file; the engine appends only to one`);
    fs.writeSync(fd, text);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A run with several workers writing to a file of the original five columns:
 * the file gains the worker column, blank for the rows already there, so it stays one table.
 */
function addWorkerColumn(file: string): void {
  const lines = readLines(file);
  if (lines[0] !== RESULTS_HEADER) {
    return; // not ours to reshape: appended rows will show the mismatch to whoever reads it
  }
  replaceFile(file, [RESULTS_HEADER_WORKERS, ...lines.slice(1).map(l => `${l}\t`)].join('\n') + '\n');
}

/**
 * Appends an experiment's row to the file as it is (with the header first if the file is new),
 * without checking it against the journals: ResultsFile does that before it calls this.
 */
export function appendResult(dir: string, record: ExperimentRecord): void {
  if (!belongsInResults(record.status)) {
    return;
  }
  const file = resultsFile(dir);
  const fresh = !fs.existsSync(file) || fs.statSync(file).size === 0;
  let withWorker = hasWorkerColumn(file, record);
  if (!withWorker && !fresh && record.worker !== undefined) {
    addWorkerColumn(file);
    withWorker = true;
  }
  const header = withWorker ? RESULTS_HEADER_WORKERS : RESULTS_HEADER;
  appendNoFollow(file, (fresh ? header + '\n' : '') + resultsRow(record, withWorker) + '\n');
}

/** What identifies the file the engine last wrote: any other writer changes one of them. */
interface Stamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

function stampOf(file: string): Stamp | null {
  try {
    // lstat: a link put in the file's place is another file, even one leading back to it.
    const s = fs.lstatSync(file);
    return { size: s.size, mtimeMs: s.mtimeMs, ino: s.ino };
  } catch {
    return null;
  }
}

/** Merges the experiments of several journals by time, each journal's own order kept. */
function byTime(lists: ExperimentRecord[][]): ExperimentRecord[] {
  const heads = lists.map(() => 0);
  const out: ExperimentRecord[] = [];
  for (;;) {
    let pick = -1;
    lists.forEach((list, i) => {
      const r = list[heads[i]];
      if (r && (pick < 0 || r.ts < lists[pick][heads[pick]].ts)) pick = i;
    });
    if (pick < 0) return out;
    out.push(lists[pick][heads[pick]++]);
  }
}

/** results.tsv as the journals have it, kept in step with the file: see the top of this file. */
export class ResultsFile {
  private readonly file: string;
  /** The experiments that have a row, in order. */
  private readonly rows: ExperimentRecord[];
  /** The file as this engine last left it; null before it has looked. */
  private left: Stamp | null = null;

  /**
   * `unreadable`: journals of other runs that could not be read; their rows are unknown, so the
   * file is only appended to, never rebuilt (a rebuild would drop them).
   */
  private constructor(
    private readonly dir: string,
    records: ExperimentRecord[],
    private readonly note: (text: string) => void,
    private readonly unreadable: string[],
  ) {
    this.file = resultsFile(dir);
    this.rows = records.filter(r => belongsInResults(r.status));
  }

  /** The table of a workspace: run `tag`'s records as given, every other run's read from its journal. */
  static open(dir: string, tag: string, records: JournalRecord[], note: (text: string) => void): ResultsFile {
    const lists = [experimentsOf(records)];
    const unreadable: string[] = [];
    const root = path.join(dir, STATE_DIR);
    for (const other of fs.existsSync(root) ? fs.readdirSync(root).sort() : []) {
      const journal = runPaths(dir, other).journal;
      if (other === tag || !fs.existsSync(journal)) continue;
      try {
        lists.push(experimentsOf(new JournalStore(journal).read()));
      } catch (e) {
        unreadable.push(`${other} (${(e as Error).message})`);
      }
    }
    if (unreadable.length) {
      note(`results.tsv is not checked against the journals while one cannot be read: ${unreadable.join('; ')}`);
    }
    return new ResultsFile(dir, byTime(lists), note, unreadable);
  }

  private withWorker(): boolean {
    return this.rows.some(r => r.worker !== undefined);
  }

  /** The file as the journals have it ('' before any row). */
  private expected(): string {
    if (!this.rows.length) return '';
    const w = this.withWorker();
    return [w ? RESULTS_HEADER_WORKERS : RESULTS_HEADER, ...this.rows.map(r => resultsRow(r, w))].join('\n') + '\n';
  }

  /** Checks the file against the journals and repairs it, saying how (at a run's start, and when another writer touched it). */
  sync(): void {
    if (this.unreadable.length) {
      this.left = stampOf(this.file);
      return;
    }
    const expected = this.expected();
    const n = this.rows.length;
    const rows = `${n} row${n === 1 ? '' : 's'}`;
    const { text: actual, odd } = readPlain(this.file);
    if (odd) {
      // Not a file the engine may read or write through (a link could lead anywhere): moved aside whole.
      const aside = this.moveAside();
      if (expected) replaceFile(this.file, expected);
      this.note(`results.tsv was ${odd}; moved to ${aside} and rebuilt from the journal (${rows})`);
    } else if (
      actual === expected ||
      (expected === '' && (actual === null || actual === '' || actual === `${RESULTS_HEADER}\n`))
    ) {
      // Equal, or nothing to write yet (the original's set-up writes the header alone).
    } else if (actual === null || actual === '') {
      replaceFile(this.file, expected);
      this.note(`results.tsv was missing; rebuilt from the journal (${rows})`);
    } else if (actual.endsWith('\n') && expected.startsWith(actual)) {
      // The engine writes the journal first: a kill between the two writes leaves rows missing at the end.
      const missing = expected.slice(actual.length);
      appendNoFollow(this.file, missing);
      const k = missing.split('\n').length - 1;
      this.note(`results.tsv lacked its last ${k === 1 ? 'row' : `${k} rows`}; added from the journal`);
    } else {
      const aside = this.moveAside();
      replaceFile(this.file, expected);
      this.note(
        `results.tsv did not match the journal (${mismatch(actual, expected)}); rebuilt from the journal (${rows}), the old file is ${aside}`,
      );
    }
    this.left = stampOf(this.file);
  }

  /** Moves the file as it is into .autoresearch/ (a link or a folder moves itself, not what it holds); returns where, relative to the workspace. */
  private moveAside(): string {
    const aside = path.join(STATE_DIR, `results-replaced-${new Date().toISOString().replace(/:/g, '-')}.tsv`);
    fs.mkdirSync(path.join(this.dir, STATE_DIR), { recursive: true });
    fs.renameSync(this.file, path.join(this.dir, aside));
    return aside;
  }

  /** Appends an experiment's row, first checking (one stat) that the file is still the one this engine left. */
  append(record: ExperimentRecord): void {
    if (!belongsInResults(record.status)) {
      return;
    }
    const now = stampOf(this.file);
    const same =
      this.left !== null &&
      now !== null &&
      now.size === this.left.size &&
      now.mtimeMs === this.left.mtimeMs &&
      now.ino === this.left.ino;
    if (!same) this.sync();
    const hadWorker = this.withWorker();
    this.rows.push(record);
    if (this.unreadable.length || hadWorker === this.withWorker()) {
      appendResult(this.dir, record);
    } else {
      // The first row from a run with several workers: every row gains the worker column.
      replaceFile(this.file, this.expected());
    }
    this.left = stampOf(this.file);
  }
}

/** The file's text if it is a plain readable file (null when absent), else what it is instead. */
function readPlain(file: string): { text: string | null; odd: string | null } {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch {
    return { text: null, odd: null };
  }
  if (st.isSymbolicLink()) return { text: null, odd: 'a link' };
  if (st.isDirectory()) return { text: null, odd: 'a folder' };
  if (!st.isFile()) return { text: null, odd: 'not a plain file' };
  try {
    return { text: readNoFollow(file).toString('utf8'), odd: null };
  } catch (e) {
    return { text: null, odd: `unreadable (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` };
  }
}

/** How a results.tsv differs from the journal's, in a few words. */
function mismatch(actual: string, expected: string): string {
  const [head, ...rows] = actual.split('\n').filter(Boolean);
  const [wantHead, ...want] = expected.split('\n').filter(Boolean);
  const why: string[] = [];
  if (head !== wantHead) {
    const cols = (head ?? '').split('\t').length;
    const wantCols = (wantHead ?? RESULTS_HEADER).split('\t').length;
    why.push(cols !== wantCols ? `its header has ${cols} columns, not ${wantCols}` : 'its header differs');
  }
  const wanted = new Set(want);
  const have = new Set(rows);
  const extra = rows.filter(r => !wanted.has(r)).length;
  const missing = want.filter(r => !have.has(r)).length;
  if (extra) why.push(`${extra} row${extra === 1 ? '' : 's'} the journal does not have`);
  if (missing) why.push(`${missing} row${missing === 1 ? '' : 's'} missing`);
  if (!why.length) why.push(actual.endsWith('\n') ? 'rows out of order or repeated' : 'its last line is cut short');
  return why.join(', ');
}
