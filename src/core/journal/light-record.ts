/**
 * The light form of a finished experiment's journal record, in which the event stream replays a
 * run to the panel (the server's follower.py lightens, from this list, which the build writes
 * into engine/layout.json): what the panel's list, chart, filter and notices read of every
 * experiment, and nothing only its rendered output shows (the diff, the summary, the usage and
 * timings, the proposal's reasoning). Of the proposal's meta it keeps LIGHT_META_FIELDS: the
 * research notes, which the panel's notes section shows (one record in 25 carries them). A long run's replay is then a fraction of the journal's
 * bytes; the panel fetches an experiment whole when it renders it.
 *
 * Who reads which: src/core/views/chart-rows.ts (n, status, metric, description, verdict, runs) and its
 * best line, src/core/rule/measurements.ts's bestTimeline (commit, state, parent_commit, best_before,
 * same_as, verdict, runs); the filter (status, description, rationale, reason); the list (n,
 * status, worker) and its search tree (src/core/views/search-tree.ts: parent_commit, commit,
 * move). test/light-record.test.ts holds the chart and the filter to the same result on light
 * records as on whole ones.
 */
import type { ExperimentRecord, JournalRecord } from './journal';

export const LIGHT_EXPERIMENT_FIELDS = [
  'type',
  'n',
  'status',
  'metric',
  'description',
  'rationale',
  'reason',
  'commit',
  'state',
  'parent_commit',
  'best_before',
  'delta',
  'verdict',
  'runs',
  'worker',
  'same_as',
  'move',
] as const;

/** What a light record keeps of its proposal's meta (`proposal_meta`), when it has them. */
export const LIGHT_META_FIELDS = ['notes'] as const;

/** An experiment as a light replay sends it: its LIGHT_EXPERIMENT_FIELDS, its meta's LIGHT_META_FIELDS and `light: true`. */
export function lightExperiment(record: ExperimentRecord): ExperimentRecord {
  const light: Record<string, unknown> = { light: true };
  for (const key of LIGHT_EXPERIMENT_FIELDS) {
    if (key in record) {
      light[key] = record[key as keyof ExperimentRecord];
    }
  }
  const meta = record.proposal_meta;
  if (meta !== null && typeof meta === 'object' && !Array.isArray(meta)) {
    const kept = LIGHT_META_FIELDS.filter(k => Object.hasOwn(meta, k));
    if (kept.length) {
      light.proposal_meta = Object.fromEntries(kept.map(k => [k, (meta as Record<string, unknown>)[k]]));
    }
  }
  return light as unknown as ExperimentRecord;
}

/** Whether an experiment came light (lightExperiment): the list fetches it whole to render it. */
export function isLight(record: ExperimentRecord): boolean {
  return (record as { light?: unknown }).light === true;
}

/**
 * A light replay's `records` message as the server sends it (follower.py's Row): each record a
 * row of values under a shape named once in `shapes` (its type, then its other keys in order),
 * the row's first element being that shape's index. Ten thousand experiments as objects would
 * repeat their keys ten thousand times.
 */
export interface IRecordRows {
  shapes: string[][];
  rows: unknown[][];
}

/** The records a message of rows carries; an error names a row that matches no shape. */
export function recordsFromRows({ shapes, rows }: IRecordRows): JournalRecord[] {
  return rows.map((row, i) => {
    const shape = shapes[row[0] as number];
    if (shape === undefined || row.length !== shape.length) {
      throw new Error(`row ${i} of a records message matches none of its ${shapes.length} shapes`);
    }
    const record: Record<string, unknown> = { type: shape[0] };
    for (let k = 1; k < shape.length; k++) {
      record[shape[k]] = row[k];
    }
    return record as unknown as JournalRecord;
  });
}
