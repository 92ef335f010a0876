/** Synthetic journal records, for tests of what proposers make of a history. */
import type { ExperimentRecord, RunConfig, RunStartRecord } from '../../src/core/journal/journal';

/** An experiment record with plausible fields; override any of them. */
export function record(n: number, over: Partial<ExperimentRecord> = {}): ExperimentRecord {
  const status = over.status ?? (n === 0 ? 'keep' : 'discard');
  const metric = status === 'crash' || status === 'rejected' ? null : 1 - n * 0.0001;
  return {
    type: 'experiment',
    ts: new Date(0).toISOString(),
    n,
    parent_commit: 'a'.repeat(40),
    commit: status === 'rejected' ? null : n.toString(16).padStart(40, 'b'),
    description: `experiment ${n}: change LEARNING_RATE to ${(0.001 * (1 + (n % 7))).toFixed(4)} and N_LAYER`,
    rationale: `because experiment ${n - 1} suggested it`,
    diff: `--- a/train.py\n+++ b/train.py\n@@ -1,3 +1,3 @@\n-LEARNING_RATE = 0.001\n+LEARNING_RATE = ${(0.001 * (1 + (n % 7))).toFixed(4)}\n N_LAYER = 4\n`,
    lines_added: 1,
    lines_removed: 1,
    summary: {},
    metric,
    best_before: n === 0 ? null : 1,
    delta: metric === null || n === 0 ? null : metric - 1,
    status,
    reason: status === 'crash' ? 'exited with code 1: RuntimeError: boom' : null,
    memory_gb: 2,
    timings: { propose_s: 1, run_s: 300, total_s: 301 },
    exit_code: status === 'crash' ? 1 : 0,
    signal: null,
    log_path: null,
    log_truncated: false,
    proposer: n === 0 ? 'baseline' : 'claude',
    usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    cost_usd: 0,
    ...over,
  };
}

/** n records, #0 the baseline, every tenth one kept. */
export function history(count: number): ExperimentRecord[] {
  return Array.from({ length: count }, (_, n) =>
    record(n, { status: n === 0 || n % 10 === 0 ? 'keep' : n % 13 === 0 ? 'crash' : 'discard' }),
  );
}

/** A run_start record of run t1 (offline proposer, a 30 s budget); override any of its config. */
export function runStartRecord(config: Partial<RunConfig> = {}): RunStartRecord {
  return {
    type: 'run_start',
    ts: '2026-11-30T00:00:00Z',
    tag: 't1',
    branch: 'autoresearch/t1',
    resume: false,
    base_commit: 'a'.repeat(40),
    proposer: 'offline',
    seed: 0,
    readonly_hashes: {},
    engine_version: '0.1.0',
    pid: 1,
    config: {
      metric: 'val_bpb',
      direction: 'lower',
      budget_s: 30,
      timeout_s: 90,
      run: 'python train.py',
      editable: ['train.py'],
      readonly: [],
      ...config,
    },
  };
}
