/**
 * The journal on disk: append-only JSON lines, each record validated and
 * fsync'd before the engine moves on, so a kill -9 loses at most a record
 * being written (and a torn last line is ignored on read).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { JournalLineError, JournalRecord, parseJournal } from '../core/journal';
import { UserError } from './workspace';

export class JournalStore {
  constructor(readonly file: string) {}

  /**
   * Reads and validates every record; an absent journal is empty. A journal that cannot be read
   * is the user's to repair: a UserError naming the file, the line and the fix (every command
   * that reads a journal, run --resume, status, results and export, says it the same way).
   */
  read(): JournalRecord[] {
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new UserError(`cannot read the journal ${this.file}: ${(e as Error).message}`);
    }
    try {
      return parseJournal(text);
    } catch (e) {
      if (e instanceof JournalLineError) throw new UserError(`${this.file} line ${e.line} ${e.problem}; ${e.fix}`);
      throw e;
    }
  }

  /** Validates and durably appends one record. */
  append(record: JournalRecord): void {
    const valid = JournalRecord.parse(record);
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    this.repairTornTail();
    const fd = fs.openSync(this.file, 'a');
    try {
      fs.writeSync(fd, JSON.stringify(valid) + '\n');
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** A record cut short by a kill has no newline; drop it so the next one starts on its own line. */
  private repairTornTail(): void {
    if (!fs.existsSync(this.file)) {
      return;
    }
    const size = fs.statSync(this.file).size;
    if (size === 0) {
      return;
    }
    const fd = fs.openSync(this.file, 'r+');
    try {
      const last = Buffer.alloc(1);
      fs.readSync(fd, last, 0, 1, size - 1);
      if (last[0] === 0x0a) {
        return;
      }
      const text = fs.readFileSync(this.file, 'utf8');
      fs.ftruncateSync(fd, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1)));
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }
}
