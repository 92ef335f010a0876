/**
 * `.autoresearch/<tag>/state.json`: what a run's journal says, derived once by the engine (after
 * every append) so the server, `load()` and the panel read it instead of re-interpreting the
 * journal each in their own way. deriveRunState is the one interpreter: the best (bestEstimate's
 * rule and its estimate), the best line (bestTimeline), experiments in flight, counts, cost, σ,
 * the noise line `autoresearch status` prints and what trust cost (trustReport). Beside what the
 * journal says, a live engine puts each experiment in flight's phase in (LivePhase, never
 * journaled). Browser-safe: the panel parses it and shows its figures as they are.
 */
import * as z from 'zod/mini';
import {
  RUN_PURPOSES,
  RunPurpose,
  type ExperimentRecord,
  type ExperimentStartRecord,
  type JournalRecord,
  type RunEndRecord,
  type RunStartRecord,
} from './journal';
import { bestTimeline, Measurements } from '../rule/measurements';
import { hasRepeats, noiseLineWords } from '../rule/noise-words';
import { standardError } from '../rule/noise';
import { trustReport, type TrustReport } from '../rule/trust-cost';
import { englishMessages } from './zod-english';

englishMessages();

export const RUN_STATE_VERSION = 1;

export const RunStatus = z.enum(['running', 'stopped']);
export type RunStatus = z.infer<typeof RunStatus>;

const metric = z.number();
const count = z.int().check(z.nonnegative());

/** TrustCost of src/core/rule/trust-cost.ts: what trust cost a group of experiments. */
const TrustCost = z.object({
  experiments: count,
  keeps: count,
  acceleratorS: z.number(),
  dollars: z.number(),
  gain: z.number(),
  perMilli: z.nullable(z.object({ acceleratorMin: z.number(), dollars: z.number() })),
});

/** TrustReport of src/core/rule/trust-cost.ts (deriveRunState assigns one to it, the panel reads one off it). */
const TrustReportSchema = z.extend(TrustCost, {
  runs: count,
  // Every purpose present (a record keyed by an enum would let some be missing).
  byPurpose: z.object(Object.fromEntries(RUN_PURPOSES.map(p => [p, count])) as Record<RunPurpose, typeof count>),
  extraRuns: count,
  byProposer: z.array(z.extend(TrustCost, { proposer: z.string() })),
});

/**
 * What an experiment in flight is doing, as its engine says while it works (written into
 * state.json beside the journal's figures, never journaled): `train` from the moment a training
 * run starts (its purpose, its number among the experiment's runs, when it started and the
 * budget it trains for, so a reader can count the budget down), `evaluate` once the run printed
 * a line starting `evaluating` (the run itself says its training is over), then `judge` and
 * `check`; `apply`, `review` and `commit` before its first run; `queue` while a scheduler (Slurm)
 * holds a run, with its job.
 */
export const LivePhase = z.object({
  name: z.enum(['apply', 'review', 'commit', 'queue', 'train', 'evaluate', 'judge', 'check']),
  /** When this phase began. */
  since: z.string(),
  /** The training run of `train` and `evaluate`. */
  run: z.optional(
    z.object({
      i: z.int().check(z.minimum(1)),
      purpose: RunPurpose,
      started: z.string(),
      budget_s: z.number(),
    }),
  ),
  /** `queue`: the scheduler's job that holds the run (Slurm). */
  job: z.optional(z.object({ scheduler: z.literal('slurm'), id: z.string() })),
});
export type LivePhase = z.infer<typeof LivePhase>;

export const RunStateFile = z.object({
  version: z.literal(RUN_STATE_VERSION),
  tag: z.string(),
  /** The journal's size in bytes this state reflects: a reader compares it with the file. */
  journal_bytes: z.int().check(z.nonnegative()),
  /** Journal records it reflects. */
  records: z.int().check(z.nonnegative()),
  /** "running" while an engine writes it; "stopped" once the journal ends in run_end. */
  status: RunStatus,
  /** The last record's ts; null for an empty journal. */
  updated: z.nullable(z.string()),
  /** From the last run_start; null before one. */
  run: z.nullable(
    z.object({
      branch: z.string(),
      proposer: z.string(),
      metric: z.string(),
      direction: z.enum(['lower', 'higher']),
      budget_s: z.number(),
      workers: z.int().check(z.minimum(1)),
      /** The first run_start's ts. */
      started: z.string(),
    }),
  ),
  experiments: z.int().check(z.nonnegative()),
  /** Experiments by status, in the order each status first occurred. */
  counts: z.record(z.string(), z.int().check(z.nonnegative())),
  /** metric: the mean over every run of the best's code; stderr: σ/√runs when σ is known. */
  best: z.nullable(
    z.object({
      n: z.int(),
      commit: z.string(),
      metric,
      runs: z.int().check(z.minimum(1)),
      stderr: z.nullable(z.number()),
    }),
  ),
  /** The first keep. */
  baseline: z.nullable(z.object({ n: z.int(), metric: z.nullable(metric) })),
  /** experiment_start records without an experiment record, by n; worker null with one worker. */
  in_flight: z.array(
    z.object({
      n: z.int(),
      worker: z.nullable(z.int()),
      description: z.string(),
      ts: z.string(),
      parent_commit: z.string(),
      /** Run records journaled for it so far. */
      runs: z.int().check(z.nonnegative()),
      /**
       * What it is doing now, as its engine says (LivePhase); absent in a state rewritten from the
       * journal alone, which does not hold it, and in files from before it.
       */
      phase: z.optional(LivePhase),
    }),
  ),
  cost_usd: z.nullable(z.number()),
  tokens: z.int().check(z.nonnegative()),
  /** Pooled σ of one run, or null before any code ran twice. */
  sigma: z.nullable(z.number()),
  /** σ's degrees of freedom (0 before it is measured): the panel's `σ 0.0040 (4 df)`. */
  sigma_df: z.int().check(z.nonnegative()),
  /** The words `autoresearch status` prints on its noise: line. */
  noise: z.string(),
  /** The last training run's sandbox, or null. */
  sandbox: z.nullable(z.enum(['on', 'off'])),
  /** The run_end the journal ends with, or null. */
  end: z.nullable(z.object({ reason: z.string(), message: z.nullable(z.string()), ts: z.string() })),
  /** What trust cost (trustReport), or null for a run from before repeats (no runs nor verdicts to show). */
  trust: z.nullable(TrustReportSchema),
  /**
   * Step mode: the proposal awaiting review (status running: the run is awaiting-review; stopped:
   * it is offered again on --resume), or null. Absent in files from before step mode.
   */
  pending: z.optional(z.nullable(z.object({ n: z.int(), description: z.string(), since: z.string() }))),
  /**
   * Step mode as it stands: the last run_start's config.step, then each mode switch, then off
   * after an "approve all". Absent in files from before switching.
   */
  step: z.optional(z.boolean()),
});
export type RunStateFile = z.infer<typeof RunStateFile>;

/**
 * The experiment_start records with no experiment record of the same number, by n: those in
 * flight (one with a single worker, up to one per worker with several), or left in flight by a
 * dead engine.
 */
export function inFlightStarts(records: readonly JournalRecord[]): ExperimentStartRecord[] {
  const done = new Set<number>();
  for (const r of records) if (r.type === 'experiment') done.add(r.n);
  const open = new Map<number, ExperimentStartRecord>();
  for (const r of records) {
    if (r.type === 'experiment_start' && !done.has(r.n)) open.set(r.n, r);
  }
  return [...open.values()].sort((a, b) => a.n - b.n);
}

/** Whether every number in a value is finite: JSON has no Infinity nor NaN. */
function allFinite(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value);
  if (value === null || typeof value !== 'object') return true;
  return Object.values(value).every(allFinite);
}

/**
 * The trust report of a run measured with repeats, null for one from before them; null too for
 * absurd figures (a sum of costs past Number.MAX_VALUE) JSON cannot hold, rather than a file
 * the schema refuses.
 */
function trustOf(records: readonly JournalRecord[], config: RunStartRecord['config'] | undefined): TrustReport | null {
  // trustReport and hasRepeats take a mutable array and only read it.
  const all = records as JournalRecord[];
  if (!hasRepeats(all)) return null;
  const report = trustReport(all, config?.direction ?? 'lower');
  return allFinite(report) ? report : null;
}

/** Tokens an experiment's proposal used, every kind counted. */
function tokensOf(e: ExperimentRecord): number {
  const u = e.usage;
  return u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens + u.output_tokens;
}

/**
 * The state a journal's records describe; `journalBytes` is the size of the journal they were
 * read from, `tag` the run's folder (by default the tag its run_start records). The status
 * follows from the records alone: "stopped" when the journal ends in run_end, else "running"
 * (a reader that finds no live engine on the tag says "died").
 */
export function deriveRunState(records: readonly JournalRecord[], journalBytes: number, tag?: string): RunStateFile {
  const last = records.length ? records[records.length - 1] : undefined;
  const end: RunEndRecord | null = last?.type === 'run_end' ? last : null;
  let firstStart: RunStartRecord | undefined;
  let lastStart: RunStartRecord | undefined;
  const exps: ExperimentRecord[] = [];
  const runsPer = new Map<number, number>();
  let sandbox: 'on' | 'off' | null = null;
  for (const r of records) {
    if (r.type === 'run_start') {
      firstStart ??= r;
      lastStart = r;
    } else if (r.type === 'experiment') {
      exps.push(r);
    } else if (r.type === 'run') {
      runsPer.set(r.n, (runsPer.get(r.n) ?? 0) + 1);
      if (r.sandbox !== undefined) sandbox = r.sandbox;
    }
  }
  const counts: Record<string, number> = {};
  let cost = 0;
  let tokens = 0;
  for (const e of exps) {
    counts[e.status] = (counts[e.status] ?? 0) + 1;
    cost += e.cost_usd;
    tokens += tokensOf(e);
  }
  const { sigma, df } = Measurements.of(records).sigma();
  const timeline = bestTimeline(records);
  const best = timeline.length ? timeline[timeline.length - 1].best : null;
  const baseline = exps.find(e => e.status === 'keep');
  const config = lastStart?.config;
  return {
    version: RUN_STATE_VERSION,
    tag: tag ?? lastStart?.tag ?? '',
    journal_bytes: journalBytes,
    records: records.length,
    status: end ? 'stopped' : 'running',
    updated: last?.ts ?? null,
    run:
      lastStart && firstStart && config
        ? {
            branch: lastStart.branch,
            proposer: lastStart.proposer,
            metric: config.metric,
            direction: config.direction,
            budget_s: config.budget_s,
            workers: config.workers ?? 1,
            started: firstStart.ts,
          }
        : null,
    experiments: exps.length,
    counts,
    best: best && {
      n: best.n,
      commit: best.commit,
      metric: best.metric,
      runs: best.runs,
      stderr: standardError(sigma, best.runs),
    },
    baseline: baseline ? { n: baseline.n, metric: baseline.metric } : null,
    in_flight: inFlightStarts(records).map(s => ({
      n: s.n,
      worker: s.worker ?? null,
      description: s.description,
      ts: s.ts,
      parent_commit: s.parent_commit,
      runs: runsPer.get(s.n) ?? 0,
    })),
    // Each cost is finite; a sum of absurd ones may not be, and JSON has no Infinity.
    cost_usd: Number.isFinite(cost) ? Math.round(cost * 1e6) / 1e6 : null,
    tokens,
    sigma,
    sigma_df: df,
    noise: noiseLineWords(sigma, df, config),
    sandbox,
    end: end && { reason: end.reason, message: end.message, ts: end.ts },
    trust: trustOf(records, config),
    pending: pendingReviewOf(records),
    step: stepModeOf(records),
  };
}

/** What a run is doing, as every reader says it: state.json's status, the live engine's say on top. */
export type RunActivity = 'running' | 'awaiting-review' | 'stopped' | 'died';

/**
 * The one place (in TypeScript; read/run_state.py's run_status in Python) where state.json meets
 * what the file cannot hold: whether an engine is alive on the run. Its engine writes the file, so
 * one killed mid-run leaves "running" behind: without a live engine that is "died" (resumable). A
 * live engine works on the run, even before it journals its start over a stopped state; it awaits
 * review while the running state has a pending proposal.
 */
export function runActivity(
  state: { status: RunStatus | 'died'; pending?: RunStateFile['pending'] },
  live: boolean,
): RunActivity {
  if (!live) return state.status === 'stopped' ? 'stopped' : 'died';
  return state.status === 'running' && state.pending ? 'awaiting-review' : 'running';
}

/** The proposal a reviewer has not decided yet: offered (a review pending record), neither decided nor recorded. */
export function pendingReviewOf(records: readonly JournalRecord[]): RunStateFile['pending'] {
  let pending: { n: number; since: string } | null = null;
  for (const r of records) {
    if (r.type === 'review' && r.event === 'pending') pending ??= { n: r.n, since: r.ts };
    // A mode switch while it waits leaves it waiting: only its decision or its record ends it.
    else if (
      pending &&
      (r.type === 'experiment' || (r.type === 'review' && r.event === 'decision')) &&
      r.n === pending.n
    )
      pending = null;
  }
  if (!pending) return null;
  const n = pending.n;
  const start = inFlightStarts(records).find(s => s.n === n);
  return start ? { n, description: start.description, since: pending.since } : null;
}

/** Whether step mode is on now: as the last run started, then switched (a mode record), or ended by "approve all". */
export function stepModeOf(records: readonly JournalRecord[]): boolean {
  let step = false;
  for (const r of records) {
    if (r.type === 'run_start') step = r.config.step === true;
    else if (r.type === 'review' && r.event === 'mode') step = r.step === true;
    else if (r.type === 'review' && r.event === 'decision' && r.all) step = false;
  }
  return step;
}
