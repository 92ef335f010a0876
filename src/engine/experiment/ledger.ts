/**
 * The runs measured so far, as the engine keeps them while it works: every run record goes
 * to the journal first (fsync'd), then into the measurements the keep rule reads. Built from
 * the journal on start, so a resumed engine knows every run a dead one recorded and repeats none.
 */
import { createHash } from 'node:crypto';
import type { ExperimentRecord, JournalRecord, RunConfig, RunRecord, RunRef } from '../../core/journal/journal';
import { Measurements } from '../../core/rule/measurements';
import { noiseRuleOf } from '../../core/rule/noise';
import type { NoiseFacts } from '../proposers/types';
import type { JournalStore } from '../store/journal-store';
import { NotRegularFile, readRegularIfAny } from '../workspace/workspace-files';

export class Ledger {
  readonly measurements: Measurements;
  private readonly byState = new Map<string, RunRecord[]>();
  private readonly perExperiment = new Map<number, RunRecord[]>();

  constructor(
    private readonly journal: JournalStore,
    records: JournalRecord[],
  ) {
    this.measurements = Measurements.of(records);
    for (const r of records) {
      if (r.type === 'run') this.index(r);
    }
  }

  /** Journals a run (durably), then counts it. */
  record(run: RunRecord): void {
    this.journal.append(run);
    this.measurements.addRun(run);
    this.index(run);
  }

  /** Journals an experiment's record (durably), and notes its decision so identical code is not run again. */
  settle(record: ExperimentRecord): void {
    this.journal.append(record);
    this.measurements.decided(record);
  }

  private index(r: RunRecord): void {
    this.byState.set(r.state, [...(this.byState.get(r.state) ?? []), r]);
    this.perExperiment.set(r.n, [...(this.perExperiment.get(r.n) ?? []), r]);
  }

  /** The runs made for experiment n (its own and the best's re-measures), in order. */
  runsFor(n: number): RunRecord[] {
    return this.perExperiment.get(n) ?? [];
  }

  /** A state's runs as an experiment record lists them (crashes included); `own` marks those of experiment n. */
  refs(state: string, n: number): RunRef[] {
    return (this.byState.get(state) ?? []).map(r => ({
      k: r.k,
      seed: r.seed,
      metric: r.metric,
      run_s: r.run_s,
      log_path: r.log_path,
      own: r.n === n,
    }));
  }
}

/** The content hash of the editable files as they are in `dir`: identical code, identical state. */
export function stateOf(dir: string, editable: string[]): string {
  return stateHash(editable, f => stateBytes(dir, f));
}

/** What an absent editable file hashes as. */
export const ABSENT_BYTES = Buffer.from('\0absent\0');

/** The hash of the editable files' bytes, in name order: the one state function, for files on disk or in memory. */
export function stateHash(editable: string[], bytesOf: (file: string) => Buffer): string {
  const h = createHash('sha256');
  for (const f of [...editable].sort()) {
    h.update(f).update('\0');
    h.update(bytesOf(f)).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

/** AUTORESEARCH_SEED of experiment n's i-th run: distinct per run, and readable (12003 = #12, run 3). */
export function seedFor(n: number, i: number): number {
  return n * 1000 + i;
}

/** The keep rule and the noise measured so far, for a proposal's context. */
export function noiseFacts(config: RunConfig, m: Measurements, best: { state: string } | null): NoiseFacts {
  const rule = noiseRuleOf(config);
  const { sigma, df } = m.sigma();
  return {
    noiseRuns: rule.noiseRuns,
    keepSigma: rule.keepSigma,
    confirmRuns: rule.confirmRuns,
    sigma,
    df,
    bestRuns: best ? Math.max(1, m.values(best.state).length) : 0,
  };
}

/** A file's bytes for stateOf: a marker when absent, or when a run put a link or FIFO there (never followed). */
function stateBytes(dir: string, f: string): Buffer {
  try {
    return readRegularIfAny(dir, f) ?? ABSENT_BYTES;
  } catch (e) {
    if (e instanceof NotRegularFile) return Buffer.from('\0not a regular file\0');
    throw e;
  }
}
