/**
 * The transfer study's files under `.autoresearch/<tag>/transfer/` (names in src/core/journal/layout.ts):
 * the journal, appended one fsync'd record at a time like the run's, and summary.json, the
 * derived result (src/core/study/transfer.ts) rewritten atomically after every append for the readers
 * that come later (the panel, the notebook export, load()).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { JournalRecord } from '../../core/journal/journal';
import {
  JOURNAL_FILE,
  LOGS_DIR,
  studyLogName,
  TRANSFER_DIR,
  TRANSFER_SUMMARY,
  TRANSFER_WORKTREE,
} from '../../core/journal/layout';
import { summarizeTransfer, type TransferSummary } from '../../core/study/transfer';
import { parseStudyJournal, StudyRecord, type StudyKind } from '../../core/study/transfer-journal';
import { runPaths } from '../workspace/workspace';
import { UserError } from '../user-error';
import { openAppend, readNoFollow, replaceFile } from '../workspace/workspace-files';

/** Where a run's transfer study keeps its files. */
export function studyPaths(dir: string, tag: string) {
  const root = path.join(runPaths(dir, tag).root, TRANSFER_DIR);
  return {
    root,
    journal: path.join(root, JOURNAL_FILE),
    summary: path.join(root, TRANSFER_SUMMARY),
    worktree: path.join(root, TRANSFER_WORKTREE),
    log: (kind: StudyKind, commit: string, k: number) => path.join(root, LOGS_DIR, studyLogName(kind, commit, k)),
  };
}

export class StudyStore {
  readonly records: StudyRecord[];

  constructor(
    private readonly paths: ReturnType<typeof studyPaths>,
    /** The run's journal, read once: the summary is of it and of the study. */
    private readonly run: readonly JournalRecord[],
  ) {
    this.records = this.read();
  }

  private read(): StudyRecord[] {
    let text: string;
    try {
      text = readNoFollow(this.paths.journal).toString('utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new UserError(`cannot read ${this.paths.journal}: ${(e as Error).message}`);
    }
    try {
      return parseStudyJournal(text);
    } catch (e) {
      throw new UserError(`${this.paths.journal} ${(e as Error).message}`);
    }
  }

  /** Validates and durably appends a record, then rewrites summary.json. */
  append(record: StudyRecord): void {
    const valid = StudyRecord.parse(record);
    fs.mkdirSync(this.paths.root, { recursive: true });
    dropTornTail(this.paths.journal);
    const fd = openAppend(this.paths.journal);
    try {
      fs.writeSync(fd, JSON.stringify(valid) + '\n');
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    this.records.push(valid);
    this.writeSummary();
  }

  /** The result so far. */
  summary(): TransferSummary {
    return summarizeTransfer(this.run, this.records);
  }

  /** summary.json, atomically: a reader sees the old file or the new one. */
  writeSummary(): void {
    fs.mkdirSync(this.paths.root, { recursive: true });
    replaceFile(this.paths.summary, JSON.stringify(this.summary(), null, 1) + '\n');
  }
}

/** A record a kill cut short has no newline: drop it, so the next one starts on its own line. */
function dropTornTail(file: string): void {
  if (!fs.lstatSync(file, { throwIfNoEntry: false })?.isFile()) return;
  const text = readNoFollow(file).toString('utf8');
  if (text === '' || text.endsWith('\n')) return;
  fs.truncateSync(file, Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1)));
}
