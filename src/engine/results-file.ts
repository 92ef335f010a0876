/** results.tsv on disk: appended after each journal record, repaired from the journal on resume. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExperimentRecord } from '../core/journal';
import { belongsInResults, RESULTS_HEADER, RESULTS_HEADER_WORKERS, resultsRow } from '../core/results';

function resultsFile(dir: string): string {
  return path.join(dir, 'results.tsv');
}

function readLines(file: string): string[] {
  return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Whether the file has (or, new, will get) the worker column. */
function hasWorkerColumn(file: string, record: ExperimentRecord): boolean {
  const fresh = !fs.existsSync(file) || fs.statSync(file).size === 0;
  if (fresh) {
    return record.worker !== undefined;
  }
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(RESULTS_HEADER_WORKERS.length + 1);
    const got = fs.readSync(fd, head, 0, head.length, 0);
    return head.subarray(0, got).toString('utf8').split('\n')[0] === RESULTS_HEADER_WORKERS;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A run with several workers writing to a file of the original five columns:
 * the file gains the worker column, blank for the rows already there, so it
 * stays one table. Rewritten through a temporary file, so a kill leaves either version.
 */
function addWorkerColumn(file: string): void {
  const lines = readLines(file);
  if (lines[0] !== RESULTS_HEADER) {
    return; // not ours to reshape: appended rows will show the mismatch to whoever reads it
  }
  const text = [RESULTS_HEADER_WORKERS, ...lines.slice(1).map(l => `${l}\t`)].join('\n') + '\n';
  fs.writeFileSync(file + '.tmp', text);
  fs.renameSync(file + '.tmp', file);
}

/** Appends an experiment's row (with the header first if the file is new). */
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
  fs.appendFileSync(file, (fresh ? header + '\n' : '') + resultsRow(record, withWorker) + '\n');
}

/**
 * The engine appends to the journal first, then to results.tsv; a kill between
 * the two leaves the last row missing. Adds it back, never twice.
 */
export function reconcileResults(dir: string, history: ExperimentRecord[]): void {
  const last = [...history].reverse().find(r => belongsInResults(r.status));
  if (!last) {
    return;
  }
  const file = resultsFile(dir);
  const lines = readLines(file);
  const withWorker = lines[0] === RESULTS_HEADER_WORKERS;
  if (!lines.includes(resultsRow(last, withWorker))) {
    appendResult(dir, last);
  }
}
