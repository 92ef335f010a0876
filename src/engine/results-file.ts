/** results.tsv on disk: appended after each journal record, repaired from the journal on resume. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ExperimentRecord } from '../core/journal';
import { belongsInResults, RESULTS_HEADER, resultsRow } from '../core/results';

function resultsFile(dir: string): string {
  return path.join(dir, 'results.tsv');
}

/** Appends an experiment's row (with the header first if the file is new). */
export function appendResult(dir: string, record: ExperimentRecord): void {
  if (!belongsInResults(record.status)) {
    return;
  }
  const file = resultsFile(dir);
  const fresh = !fs.existsSync(file) || fs.statSync(file).size === 0;
  fs.appendFileSync(file, (fresh ? RESULTS_HEADER + '\n' : '') + resultsRow(record) + '\n');
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
  const lines = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  if (!lines.includes(resultsRow(last))) {
    appendResult(dir, last);
  }
}
