/**
 * The journal on disk: append-only JSON lines, each record validated and
 * fsync'd before the engine moves on, so a kill -9 loses at most a record
 * being written (and a torn last line is ignored on read).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { JournalLineError, JournalRecord, parseJournal } from '../../core/journal/journal';
import { deriveRunState, type LivePhase, type RunStateFile } from '../../core/journal/run-state';
import { fileError } from '../user-error';
import { UserError } from '../user-error';
import { openAppend, readNoFollow, replaceFile } from '../workspace/workspace-files';

/** Where the run's state.json goes (runPaths(dir, tag).state) and the tag it names. */
export interface StateTarget {
  file: string;
  tag: string;
}

export class JournalStore {
  /** The records appended so far (read once, on the first append), for state.json without re-reading. */
  private kept: JournalRecord[] | null = null;
  /** state.json as last derived from the journal, before the live phases are put in. */
  private derived: RunStateFile | null = null;
  /** What each experiment in flight is doing now (setPhase), by number. */
  private readonly phases = new Map<number, LivePhase>();

  /** With `state`, every append rewrites state.json from the journal's records (src/core/journal/run-state.ts). */
  constructor(
    readonly file: string,
    private readonly state?: StateTarget,
  ) {}

  /**
   * Reads and validates every record; an absent journal is empty. A journal that cannot be read
   * is the user's to repair: a UserError naming the file, the line and the fix (every command
   * that reads a journal, run --resume, status, results and export, says it the same way).
   */
  read(): JournalRecord[] {
    let text: string;
    try {
      // Never through a link nor blocked on a FIFO a run without the sandbox put in its place.
      text = readJournal(this.file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw fileError('read', 'the journal', this.file, e, 'then run this again');
    }
    return this.parse(text);
  }

  private parse(text: string): JournalRecord[] {
    try {
      return parseJournal(text);
    } catch (e) {
      if (e instanceof JournalLineError) throw new UserError(`${this.file} line ${e.line} ${e.problem}; ${e.fix}`);
      throw e;
    }
  }

  /**
   * Validates and durably appends one record, then brings state.json up to date with it. A journal
   * that cannot be written (read-only, a folder, a full disk) is a UserError naming it and the fix,
   * with the journal as it was: a record is all there or not at all.
   */
  append(record: JournalRecord): void {
    const valid = JournalRecord.parse(record);
    const then = `then continue the run with --resume${this.state ? ` --tag ${this.state.tag}` : ''}`;
    const writing = <T>(what: string, file: string, work: () => T): T => {
      try {
        return work();
      } catch (e) {
        throw fileError('write', what, file, e, then);
      }
    };
    writing('the journal', this.file, () => {
      fs.mkdirSync(path.dirname(this.file), { recursive: true });
      this.repairTornTail();
    });
    // Read before the write: what is on disk now, without the record (a torn tail just dropped).
    if (this.state && this.kept === null) this.kept = this.read();
    const bytes = writing('the journal', this.file, () => this.write(JSON.stringify(valid) + '\n'));
    if (this.state && this.kept) {
      const state = this.state;
      this.kept.push(valid);
      if (valid.type === 'experiment') this.phases.delete(valid.n);
      this.derived = deriveRunState(this.kept, bytes, state.tag);
      writing("the run's state", state.file, () => this.writeLive(state));
    }
  }

  /**
   * What experiment n is doing now (null: nothing to say), put into its in-flight entry of
   * state.json at once and at every append until its record is journaled. Only shown, never
   * journaled: a state.json that cannot be written now is written whole at the next append.
   */
  setPhase(n: number, phase: LivePhase | null): void {
    if (phase) this.phases.set(n, phase);
    else this.phases.delete(n);
    if (!this.state || !this.derived) return;
    try {
      this.writeLive(this.state);
    } catch {
      // The next append rewrites it, and says so if it still cannot.
    }
  }

  /** state.json: the journal's state with each experiment in flight's phase. */
  private writeLive(target: StateTarget): void {
    const derived = this.derived as RunStateFile;
    const state = this.phases.size
      ? {
          ...derived,
          in_flight: derived.in_flight.map(f => {
            const phase = this.phases.get(f.n);
            return phase ? { ...f, phase } : f;
          }),
        }
      : derived;
    replaceFile(target.file, JSON.stringify(state) + '\n');
  }

  /** Appends `line` and fsyncs it; the journal's size after. A write cut short is taken back. */
  private write(line: string): number {
    const buf = Buffer.from(line);
    const fd = openAppend(this.file);
    try {
      const before = fs.fstatSync(fd).size;
      try {
        for (let done = 0; done < buf.length;) done += fs.writeSync(fd, buf, done);
        fs.fsyncSync(fd);
      } catch (e) {
        try {
          fs.ftruncateSync(fd, before);
        } catch {
          // Not a file that can be cut (a device): a torn tail is dropped on read and on the next append.
        }
        throw e;
      }
      return before + buf.length;
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Rewrites state.json from the journal as it is on disk (for `autoresearch state`). */
  rewriteState(target: StateTarget): void {
    let buf: Buffer;
    try {
      buf = Buffer.from(readJournal(this.file), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      buf = Buffer.alloc(0);
    }
    writeState(target, this.parse(buf.toString('utf8')), buf.length);
  }

  /** A record cut short by a kill has no newline; drop it so the next one starts on its own line. */
  private repairTornTail(): void {
    // What is not a regular file (a link, a FIFO) is left to openAppend, which refuses it.
    const stat = fs.lstatSync(this.file, { throwIfNoEntry: false });
    if (!stat?.isFile()) {
      return;
    }
    const size = stat.size;
    if (size === 0) {
      return;
    }
    const { O_RDWR, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
    const fd = fs.openSync(this.file, O_RDWR | O_NOFOLLOW | O_NONBLOCK);
    try {
      const last = Buffer.alloc(1);
      fs.readSync(fd, last, 0, 1, size - 1);
      if (last[0] === 0x0a) {
        return;
      }
      const text = fs.readFileSync(fd, 'utf8');
      fs.ftruncateSync(fd, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1)));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }
}

/**
 * state.json, atomically: a reader sees the old file or the new one, never half of one. No fsync:
 * the journal is the durable record, and `autoresearch state` rebuilds this from it.
 */
function writeState(target: StateTarget, records: JournalRecord[], bytes: number): void {
  replaceFile(target.file, JSON.stringify(deriveRunState(records, bytes, target.tag)) + '\n');
}

/**
 * A journal's text, opened without following a link or waiting on a FIFO. A folder in its place
 * is EISDIR, as a plain read says it (fileError words it); anything else not a file is refused.
 */
function readJournal(file: string): string {
  if (fs.lstatSync(file, { throwIfNoEntry: false })?.isDirectory()) {
    throw Object.assign(new Error(`EISDIR: ${file}`), { code: 'EISDIR' });
  }
  return readNoFollow(file).toString('utf8');
}
