/**
 * results.tsv, in the original autoresearch format byte for byte:
 * header `commit	val_bpb	memory_gb	status	description`, 7-character commit,
 * metric with 6 decimals, memory in GB with 1 decimal, 0.000000 and 0.0 for a crash.
 */
import type { ExperimentRecord } from './journal';

export const RESULTS_HEADER = 'commit\tval_bpb\tmemory_gb\tstatus\tdescription';

/** Statuses the original format knows; interrupted and rejected runs live in the journal only. */
export function belongsInResults(status: ExperimentRecord['status']): boolean {
  return status === 'keep' || status === 'discard' || status === 'crash';
}

/** One results.tsv line (without newline) for an experiment. */
export function resultsRow(r: Pick<ExperimentRecord, 'commit' | 'parent_commit' | 'metric' | 'memory_gb' | 'status' | 'description'>): string {
  const crashed = r.status === 'crash' || r.metric === null;
  const commit = (r.commit ?? r.parent_commit).slice(0, 7);
  const metric = crashed ? '0.000000' : (r.metric as number).toFixed(6);
  const memory = crashed ? '0.0' : r.memory_gb.toFixed(1);
  // Tabs and newlines would break the table; the journal keeps the exact text.
  const description = r.description.replace(/[\t\r\n]+/g, ' ').trim();
  return [commit, metric, memory, r.status, description].join('\t');
}

export interface ResultsRow {
  commit: string;
  metric: number;
  memory_gb: number;
  status: string;
  description: string;
}

/** Parses results.tsv text (the header is checked). */
export function parseResults(text: string): ResultsRow[] {
  const lines = text.split('\n').filter(l => l.length > 0);
  if (lines.length === 0) {
    return [];
  }
  if (lines[0] !== RESULTS_HEADER) {
    throw new Error(`results.tsv has an unexpected header; expected "${RESULTS_HEADER.replace(/\t/g, '\\t')}"`);
  }
  return lines.slice(1).map(line => {
    const [commit, metric, memory, status, ...rest] = line.split('\t');
    return { commit, metric: Number(metric), memory_gb: Number(memory), status, description: rest.join('\t') };
  });
}
