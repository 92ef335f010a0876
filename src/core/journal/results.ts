/**
 * results.tsv, in the original autoresearch format byte for byte:
 * header `commit	val_bpb	memory_gb	status	description`, 7-character commit,
 * metric with 6 decimals, memory in GB with 1 decimal, 0.000000 and 0.0 for a crash.
 *
 * A run with several workers adds one column, `worker`, last: the original five
 * keep their places, so a reader that takes columns by position or by name
 * still works, and the description (tabs replaced) stays one cell.
 */
import type { ExperimentRecord } from './journal';

export const RESULTS_HEADER = 'commit\tval_bpb\tmemory_gb\tstatus\tdescription';
/** The header once a run with several workers has written to the file. */
export const RESULTS_HEADER_WORKERS = `${RESULTS_HEADER}\tworker`;

/** Statuses the original format knows; interrupted and rejected runs live in the journal only. */
export const RESULTS_STATUSES = ['keep', 'discard', 'crash'] as const satisfies readonly ExperimentRecord['status'][];

/** Whether an experiment of this status has a row in results.tsv. */
export function belongsInResults(status: ExperimentRecord['status']): boolean {
  return (RESULTS_STATUSES as readonly string[]).includes(status);
}

type RowSource = Pick<
  ExperimentRecord,
  'commit' | 'parent_commit' | 'metric' | 'memory_gb' | 'status' | 'description' | 'worker'
>;

/**
 * One results.tsv line (without newline) for an experiment. `withWorker`: the
 * file has the worker column (blank for an experiment without a worker).
 */
export function resultsRow(r: RowSource, withWorker = false): string {
  const crashed = r.status === 'crash' || r.metric === null;
  const commit = (r.commit ?? r.parent_commit).slice(0, 7);
  const metric = crashed ? '0.000000' : (r.metric as number).toFixed(6);
  const memory = crashed ? '0.0' : r.memory_gb.toFixed(1);
  // Tabs and newlines would break the table; the journal keeps the exact text.
  const description = r.description.replace(/[\t\r\n]+/g, ' ').trim();
  const cells = [commit, metric, memory, r.status, description];
  if (withWorker) {
    cells.push(r.worker === undefined ? '' : String(r.worker));
  }
  return cells.join('\t');
}

export interface ResultsRow {
  commit: string;
  metric: number;
  memory_gb: number;
  status: string;
  description: string;
  /** Only in files written by runs with several workers; null where the cell is blank. */
  worker?: number | null;
}

/** Parses results.tsv text (the header is checked; the worker column is optional). */
export function parseResults(text: string): ResultsRow[] {
  const lines = text.split('\n').filter(l => l.length > 0);
  if (lines.length === 0) {
    return [];
  }
  const withWorker = lines[0] === RESULTS_HEADER_WORKERS;
  if (lines[0] !== RESULTS_HEADER && !withWorker) {
    throw new Error(`results.tsv has an unexpected header; expected "${RESULTS_HEADER.replace(/\t/g, '\\t')}"`);
  }
  return lines.slice(1).map(line => {
    const cells = line.split('\t');
    const [commit, metric, memory, status] = cells;
    if (withWorker) {
      const worker = cells[cells.length - 1];
      const description = cells.slice(4, -1).join('\t');
      return {
        commit,
        metric: Number(metric),
        memory_gb: Number(memory),
        status,
        description,
        worker: worker === '' ? null : Number(worker),
      };
    }
    return {
      commit,
      metric: Number(metric),
      memory_gb: Number(memory),
      status,
      description: cells.slice(4).join('\t'),
    };
  });
}
