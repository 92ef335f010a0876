/**
 * A journal written by the noise-aware engine, made by hand: run records, experiments with
 * their runs and verdicts, a re-measure of the best, a crash and a reused result. Display
 * tests use it instead of the engine, so they say what a reader sees for known numbers.
 */
import {
  JournalRecord,
  type ExperimentRecord,
  type RunPurpose,
  type RunRecord,
  type Verdict,
} from '../../src/core/journal/journal';
import { record } from './records';

const STATE = (n: number) => `state${n}`;
const COMMIT = (n: number) => n.toString(16).padStart(40, 'b');

interface Run {
  metric: number | null;
  purpose: RunPurpose;
  /** Whose code ran: the experiment's own unless a best re-measure. */
  of?: number;
  k: number;
}

function runRecord(n: number, i: number, r: Run): RunRecord {
  const of = r.of ?? n;
  return {
    type: 'run',
    ts: new Date(0).toISOString(),
    n,
    commit: COMMIT(of),
    state: STATE(of),
    purpose: r.purpose,
    k: r.k,
    seed: 1000 * n + i,
    metric: r.metric,
    summary: r.metric === null ? {} : { val_bpb: r.metric },
    run_s: 60,
    exit_code: r.metric === null ? 1 : 0,
    signal: null,
    reason: r.metric === null ? 'exited with code 1: RuntimeError: boom' : null,
    memory_gb: 2,
    log_path: `.autoresearch/t/logs/${String(n).padStart(4, '0')}${i > 1 ? `-${i}` : ''}.log`,
  };
}

function verdict(over: Partial<Verdict>): Verdict {
  return {
    sigma: 0.004,
    se: null,
    floor: null,
    keep_sigma: 2,
    best_runs: 3,
    strict: false,
    confirmed: false,
    spent: { measure: 1, noise: 0, confirm: 0, best: 0 },
    ...over,
  };
}

/** One experiment, its runs journaled before it; `runs` on the record are its own code's runs. */
function experiment(n: number, runs: Run[], over: Partial<ExperimentRecord>): JournalRecord[] {
  const records = runs.map((r, i) => runRecord(n, i + 1, r));
  const own = records.filter(r => r.state === STATE(n));
  const values = own.map(r => r.metric).filter((m): m is number => m !== null);
  const metric = values.length ? values.reduce((s, v) => s + v, 0) / values.length : null;
  const exp = record(n, {
    commit: COMMIT(n),
    state: STATE(n),
    metric,
    runs: own.map(r => ({ k: r.k, seed: r.seed, metric: r.metric, run_s: r.run_s, log_path: r.log_path })),
    timings: { propose_s: 1, run_s: 60 * records.length, total_s: 60 * records.length + 1 },
    ...over,
  });
  return [...records, exp];
}

export const RUN_START: JournalRecord = {
  type: 'run_start',
  ts: new Date(0).toISOString(),
  tag: 't',
  branch: 'autoresearch/t',
  resume: false,
  base_commit: 'a'.repeat(40),
  proposer: 'claude',
  seed: 0,
  readonly_hashes: {},
  engine_version: '0.2.0',
  pid: 1,
  config: {
    metric: 'val_bpb',
    direction: 'lower',
    budget_s: 60,
    timeout_s: 120,
    run: 'python train.py',
    editable: ['train.py'],
    readonly: [],
    noise_runs: 3,
    keep_sigma: 2,
    confirm_runs: 2,
  },
};

/**
 * #0 baseline 1.000 over 3 runs (σ 0.004); #1 discarded at once (1.010); #2 kept at 0.982 on
 * 2 runs, confirmed; #3 within noise (0.981 on 3 runs) after one re-measure of #2 (0.983);
 * #4 a crash; #5 the same code as #2, its result reported.
 */
export function noisyJournal(): JournalRecord[] {
  const records: JournalRecord[] = [
    RUN_START,
    ...experiment(
      0,
      [
        { metric: 1.0, purpose: 'measure', k: 1 },
        { metric: 1.004, purpose: 'noise', k: 2 },
        { metric: 0.996, purpose: 'noise', k: 3 },
      ],
      {
        status: 'keep',
        best_before: null,
        delta: null,
        proposer: 'baseline',
        reason: 'the reference: mean of 3 runs, σ 0.0040',
        verdict: verdict({
          se: 0.004 / Math.sqrt(3),
          best_runs: 0,
          confirmed: true,
          spent: { measure: 1, noise: 2, confirm: 0, best: 0 },
        }),
      },
    ),
    ...experiment(1, [{ metric: 1.01, purpose: 'measure', k: 1 }], {
      parent_commit: COMMIT(0),
      status: 'discard',
      best_before: 1,
      delta: 0.01,
      cost_usd: 0.01,
      reason: 'not better (+0.0100; floor 0.0092 at 2σ)',
      verdict: verdict({ se: 0.004, floor: 0.0092 }),
    }),
    ...experiment(
      2,
      [
        { metric: 0.98, purpose: 'measure', k: 1 },
        { metric: 0.984, purpose: 'confirm', k: 2 },
      ],
      {
        parent_commit: COMMIT(0),
        status: 'keep',
        best_before: 1,
        delta: -0.018,
        cost_usd: 0.01,
        reason: 'beats the noise (−0.0180; floor 0.0073 at 2σ, 2 runs)',
        verdict: verdict({
          se: 0.004 / Math.sqrt(2),
          floor: 0.0073,
          confirmed: true,
          spent: { measure: 1, noise: 0, confirm: 1, best: 0 },
        }),
      },
    ),
    ...experiment(
      3,
      [
        { metric: 0.978, purpose: 'measure', k: 1 },
        { metric: 0.983, purpose: 'best', of: 2, k: 3 },
        { metric: 0.984, purpose: 'confirm', k: 2 },
        { metric: 0.981, purpose: 'confirm', k: 3 },
      ],
      {
        parent_commit: COMMIT(2),
        status: 'discard',
        best_before: 0.98233,
        delta: -0.00133,
        cost_usd: 0.01,
        reason: 'within noise (−0.0013; floor 0.0065 at 2σ)',
        verdict: verdict({
          se: 0.004 / Math.sqrt(3),
          floor: 0.0065,
          spent: { measure: 1, noise: 0, confirm: 2, best: 1 },
        }),
      },
    ),
    ...experiment(4, [{ metric: null, purpose: 'measure', k: 1 }], {
      parent_commit: COMMIT(2),
      status: 'crash',
      best_before: 0.98233,
      delta: null,
      cost_usd: 0.01,
      metric: null,
    }),
    record(5, {
      parent_commit: COMMIT(2),
      status: 'discard',
      commit: COMMIT(2),
      state: STATE(2),
      metric: 0.98233,
      best_before: 0.98233,
      delta: 0,
      same_as: 2,
      cost_usd: 0.01,
      runs: [
        { k: 1, seed: 2001, metric: 0.98, run_s: 60, log_path: null, own: false },
        { k: 2, seed: 2002, metric: 0.984, run_s: 60, log_path: null, own: false },
      ],
      timings: { propose_s: 1, run_s: 0, total_s: 1 },
      reason: 'same code as #2',
    }),
  ];
  // The fixture must be a journal the engine could have written.
  return records.map(r => JournalRecord.parse(r));
}

/** The experiment records of the noisy journal. */
export function noisyExperiments(): ExperimentRecord[] {
  return noisyJournal().filter((r): r is ExperimentRecord => r.type === 'experiment');
}
