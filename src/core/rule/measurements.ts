/**
 * Every measured run of a journal, grouped by the code that ran (the content hash of the
 * editable files): what σ is pooled from, what the best's mean is, and how an edit identical
 * to code already measured is recognised. Journals from before repeats (no run records) count
 * each experiment's metric as one run of its commit.
 */
import type { ExperimentRecord, JournalRecord, RunRecord, Verdict } from '../journal/journal';
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

  /** Experiments whose runs are journaled as run records (their metric is not counted again). */
  private readonly withRuns = new Set<number>();

  /** From a journal's records, in order. */
  static of(records: readonly JournalRecord[]): Measurements {
    const m = new Measurements();
    for (const r of records) {
      if (r.type === 'run') m.withRuns.add(r.n);
    }
    for (const r of records) m.feed(r);
    return m;
  }

  /**
   * Counts one record, in journal order: a run, or an experiment's decision (and, for a journal
   * from before run records, its metric as one run). An experiment's runs come before it.
   */
  feed(r: JournalRecord): void {
    if (r.type === 'run') {
      this.withRuns.add(r.n);
      this.addRun(r);
    } else if (r.type === 'experiment') {
      const key = stateKey(r);
      if (
        !this.withRuns.has(r.n) &&
        r.same_as === undefined &&
        key &&
        r.metric !== null &&
        (r.status === 'keep' || r.status === 'discard')
      ) {
        this.add(key, r.metric);
      }
      this.decided(r);
    }
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

/** Whether an experiment can be the best: kept, with its commit, a metric and code its runs pool under. */
function couldBeBest(r: ExperimentRecord): boolean {
  return r.status === 'keep' && r.commit !== null && r.metric !== null && stateKey(r) !== null;
}

/** A best candidate estimated by the mean of every run of its code so far. */
function estimateOf(r: ExperimentRecord, m: Measurements): BestEstimate {
  const key = stateKey(r) as string;
  const values = m.values(key);
  return {
    commit: r.commit as string,
    state: key,
    metric: values.length ? mean(values) : (r.metric as number),
    runs: Math.max(1, values.length),
    n: r.n,
  };
}

/**
 * The best: the last kept experiment, estimated by the mean of every run of its code. The one
 * rule for what "best" means; bestTimeline below applies it after each experiment.
 */
export function bestEstimate(history: readonly ExperimentRecord[], m: Measurements): BestEstimate | null {
  for (let i = history.length - 1; i >= 0; i--) {
    if (couldBeBest(history[i])) return estimateOf(history[i], m);
  }
  return null;
}

/** The best after one experiment record: `n` is the experiment that landed, `best` what stood then. */
export interface BestAfter {
  n: number;
  best: BestEstimate | null;
}

/**
 * The best (bestEstimate's rule) after each experiment record, in the order given (journal order).
 * With run records the estimate is the mean of every run of the best's code measured so far, so a
 * re-measure of the best moves it. Experiment records alone (a panel's or an export's list, an
 * old journal) say the same through what each records: a keep's metric is the mean of its runs,
 * and a decision that re-measured the best it was built on carries the new mean in best_before.
 */
export function bestTimeline(records: readonly JournalRecord[]): BestAfter[] {
  const out: BestAfter[] = [];
  const withRuns = records.some(r => r.type === 'run');
  const m = new Measurements();
  let last = null as ExperimentRecord | null;
  let best = null as BestEstimate | null;
  for (const r of records) {
    if (withRuns) m.feed(r);
    if (r.type !== 'experiment') continue;
    if (couldBeBest(r)) last = r;
    if (withRuns) {
      best = last && estimateOf(last, m);
    } else if (last === r) {
      const runs = r.runs?.filter(run => run.metric !== null).length ?? 0;
      best = { ...estimateOf(r, m), metric: r.metric as number, runs: Math.max(1, runs) };
    } else if (best !== null && remeasured(r, best)) {
      best = { ...best, metric: r.best_before as number, runs: (r.verdict as Verdict).best_runs };
    }
    out.push({ n: r.n, best });
  }
  return out;
}

/**
 * Whether judging an experiment re-measured the best (its record then carries the best's new mean
 * and runs). Only against the best it was built on: with workers, a decision may predate a later keep.
 */
function remeasured(r: ExperimentRecord, best: BestEstimate): boolean {
  return (
    r.verdict !== undefined && r.best_before !== null && r.verdict.best_runs > 0 && r.parent_commit === best.commit
  );
}
