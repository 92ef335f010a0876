/**
 * Every measured run of a journal, grouped by the code that ran (the content hash of the
 * editable files): what σ is pooled from, what the best's mean is, and how an edit identical
 * to code already measured is recognised. Journals from before repeats (no run records) count
 * each experiment's metric as one run of its commit.
 */
import type { ExperimentRecord, JournalRecord, RunRecord } from './journal';
import { mean, pooledSigma } from './noise';

/** The key runs of an experiment pool under: its state, or its commit in an older journal. */
export function stateKey(r: { state?: string; commit: string | null }): string | null {
  return r.state ?? (r.commit ? `commit:${r.commit}` : null);
}

export class Measurements {
  private readonly byState = new Map<string, number[]>();
  /** How many runs each state has had, crashes included (the next run's AUTORESEARCH_RUN). */
  private readonly counts = new Map<string, number>();
  /** The experiment that first decided each state (keep, discard or crash). */
  private readonly decidedBy = new Map<string, ExperimentRecord>();

  /** From a journal's records, in order. */
  static of(records: JournalRecord[]): Measurements {
    const m = new Measurements();
    const withRuns = new Set(records.filter(r => r.type === 'run').map(r => r.n));
    for (const r of records) {
      if (r.type === 'run') {
        m.addRun(r);
      } else if (r.type === 'experiment') {
        const key = stateKey(r);
        if (
          !withRuns.has(r.n) &&
          r.same_as === undefined &&
          key &&
          r.metric !== null &&
          (r.status === 'keep' || r.status === 'discard')
        ) {
          m.add(key, r.metric);
        }
        m.decided(r);
      }
    }
    return m;
  }

  /** Counts a run record (a crashed run counts towards AUTORESEARCH_RUN, not towards the metric). */
  addRun(r: RunRecord): void {
    this.counts.set(r.state, Math.max(this.counts.get(r.state) ?? 0, r.k));
    if (r.metric !== null) {
      this.byState.set(r.state, [...(this.byState.get(r.state) ?? []), r.metric]);
    }
  }

  /** Notes an experiment's decision, so later identical code can report it. */
  decided(r: ExperimentRecord): void {
    const key = stateKey(r);
    if (
      key &&
      r.same_as === undefined &&
      (r.status === 'keep' || r.status === 'discard' || r.status === 'crash') &&
      !this.decidedBy.has(key)
    ) {
      this.decidedBy.set(key, r);
    }
  }

  private add(state: string, value: number): void {
    this.byState.set(state, [...(this.byState.get(state) ?? []), value]);
    this.counts.set(state, (this.counts.get(state) ?? 0) + 1);
  }

  /** The metrics measured for a state, in order. */
  values(state: string): number[] {
    return this.byState.get(state) ?? [];
  }

  /** Runs a state has had, crashes included. */
  runCount(state: string): number {
    return this.counts.get(state) ?? 0;
  }

  /** The experiment that decided this code first, if any. */
  decision(state: string): ExperimentRecord | undefined {
    return this.decidedBy.get(state);
  }

  /** Pooled σ of one run, over every state measured more than once. */
  sigma(): { sigma: number | null; df: number } {
    return pooledSigma([...this.byState.values()]);
  }

  /** The mean of a state's runs, or `fallback` when it has none. */
  meanOf(state: string, fallback: number): number {
    const v = this.values(state);
    return v.length ? mean(v) : fallback;
  }
}

export interface BestEstimate {
  commit: string;
  state: string;
  /** The mean of all its runs. */
  metric: number;
  runs: number;
  n: number;
}

/** The best: the last kept experiment, estimated by the mean of every run of its code. */
export function bestEstimate(history: ExperimentRecord[], m: Measurements): BestEstimate | null {
  for (let i = history.length - 1; i >= 0; i--) {
    const r = history[i];
    const key = stateKey(r);
    if (r.status === 'keep' && r.commit && r.metric !== null && key) {
      const values = m.values(key);
      return {
        commit: r.commit,
        state: key,
        metric: values.length ? mean(values) : r.metric,
        runs: Math.max(1, values.length),
        n: r.n,
      };
    }
  }
  return null;
}
