// bench/panel-journal: a synthetic autoresearch workspace with a journal of N finished
// experiments, for bench/panel. The records follow src/core/journal/journal.ts (which the server checks
// them against, as the JSON Schema the build writes from it): one run_start, then per
// experiment an experiment_start and an experiment record, and a run_end (a stopped run).
// Deterministic: the same N gives the same journal.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The last sentence of the workspace's program.md: bench/panel waits for it in the rendered cell. */
export const PROGRAM_SENTENCE = 'One change at a time.';

/** A small seeded PRNG (mulberry32), so every journal of N is the same. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sha1 = text => createHash('sha1').update(text).digest('hex');

/** train.py's tunable constants, in file order, with a way to propose a new value. */
const CONSTANTS = [
  ['LEARNING_RATE', 0.0002, (v, r) => Number((v * (0.5 + r() * 1.5)).toPrecision(2)), 'peak AdamW learning rate'],
  ['N_LAYER', 6, (v, r) => Math.max(1, v + (r() < 0.5 ? -1 : 1)), 'transformer blocks'],
  ['N_EMBD', 128, (v, r) => Math.max(32, v + (r() < 0.5 ? -32 : 32)), 'residual stream width'],
  ['BATCH_SIZE', 16, (v, r) => Math.max(4, r() < 0.5 ? v / 2 : v * 2), 'sequences per step'],
  ['SEQ_LEN', 128, (v, r) => Math.max(32, r() < 0.5 ? v / 2 : v * 2), 'training context'],
  ['HEAD_DIM', 32, (v, r) => (r() < 0.5 ? 16 : 64), 'width of each attention head'],
  ['MLP_RATIO', 4, (v, r) => Math.max(1, v + (r() < 0.5 ? -1 : 1)), 'MLP hidden width as a multiple of N_EMBD'],
  ['WEIGHT_DECAY', 0.1, (v, r) => Number((v * (0.5 + r())).toPrecision(2)), 'AdamW decay on matrices only'],
  ['WARMUP_STEPS', 30, (v, r) => Math.max(0, v + Math.round((r() - 0.5) * 40)), 'linear warm-up'],
  ['DROPOUT', 0.1, (v, r) => Number(Math.max(0, v + (r() - 0.5) * 0.1).toFixed(2)), 'dropout in blocks'],
];

const HEADER = `"""A small byte-level GPT trained for a fixed wall-clock budget; the agent edits this file."""

import time

T_START = time.time()

import math
import torch

# Hyperparameters: each a plain literal on its own line.
`;
const FOOTER = `
def main():
    # (the model and training loop would follow; the benchmark never runs it)
    print("---")
    print("val_bpb:          1.000000")


if __name__ == "__main__":
    main()
`;

function trainPy(values) {
  return (
    HEADER + CONSTANTS.map(([name, , , note]) => `${name} = ${values[name]}  # ${note}`).join('\n') + '\n' + FOOTER
  );
}

const HEADER_LINES = HEADER.split('\n').length - 1; // lines before the first constant

/** A unified diff of train.py setting `changes` (name → value) over `values`: one hunk, 3 lines of context. */
function diffOf(values, changes) {
  const idx = Object.keys(changes)
    .map(k => CONSTANTS.findIndex(c => c[0] === k))
    .sort((a, b) => a - b);
  const lo = Math.max(0, idx[0] - 3);
  const hi = Math.min(CONSTANTS.length - 1, idx[idx.length - 1] + 3);
  const body = [];
  for (let i = lo; i <= hi; i++) {
    const [name, , , note] = CONSTANTS[i];
    if (name in changes) {
      body.push(`-${name} = ${values[name]}  # ${note}`, `+${name} = ${changes[name]}  # ${note}`);
    } else {
      body.push(` ${name} = ${values[name]}  # ${note}`);
    }
  }
  const len = hi - lo + 1;
  const start = HEADER_LINES + lo + 1;
  return `diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -${start},${len} +${start},${len} @@\n${body.join('\n')}\n`;
}

function summaryOf(metric, r, values) {
  const steps = Math.round(400 + r() * 200);
  return {
    val_bpb: metric,
    training_seconds: 60.0,
    total_seconds: Number((64 + r() * 4).toFixed(1)),
    peak_vram_mb: Number((900 + r() * 300).toFixed(1)),
    mfu_percent: Number((1 + r() * 2).toFixed(2)),
    total_tokens_M: Number(((steps * values.BATCH_SIZE * values.SEQ_LEN) / 1e6).toFixed(1)),
    num_steps: steps,
    num_params_M: Number(((values.N_LAYER * 12 * values.N_EMBD * values.N_EMBD) / 1e6 + 0.05).toFixed(2)),
    depth: values.N_LAYER,
  };
}

const CRASHES = [
  'exited with code 1: RuntimeError: CUDA error: out of memory',
  'exited with code 1: AssertionError: n_embd must be divisible by head_dim',
  'exited with code 1: ValueError: loss is NaN at step 112',
  'timed out after 120 s',
];
const REJECTS = ['the proposal edited prepare.py, which is read-only', 'the proposal changed nothing in train.py'];

/**
 * Writes `<dir>` as a workspace (program.md, prepare.py, train.py, a git repository) with a
 * stopped run `tag` of `count` finished experiments; crashes get a log file.
 * Returns { tag, experiments, records }.
 */
export function makeWorkspace(dir, count, { tag = 'bench', seed = 1 } = {}) {
  const r = rng(seed * 7919 + count);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'program.md'),
    `---\nbudget_s: 60\n---\n# bench\n\nLower \`val_bpb\` by editing the constants of train.py. ${PROGRAM_SENTENCE}\n`,
  );
  fs.writeFileSync(path.join(dir, 'prepare.py'), '# data preparation and evaluation; read-only\nEVAL_SEQ_LEN = 256\n');
  const values = Object.fromEntries(CONSTANTS.map(([name, v]) => [name, v]));
  fs.writeFileSync(path.join(dir, 'train.py'), trainPy(values));
  fs.writeFileSync(path.join(dir, '.gitignore'), 'results.tsv\n.autoresearch/\nrun.log\n');
  const git = (...a) => execFileSync('git', a, { cwd: dir, encoding: 'utf8' }).trim();
  git('init', '-q', '-b', 'main');
  git('config', 'user.name', 'bench');
  git('config', 'user.email', 'bench@localhost');
  git('add', '-A');
  git('commit', '-qm', 'initial');
  const base = git('rev-parse', 'HEAD');

  const state = path.join(dir, '.autoresearch', tag);
  fs.mkdirSync(path.join(state, 'logs'), { recursive: true });
  const t0 = Date.parse('2026-11-01T00:00:00Z');
  let clock = t0;
  const iso = () => new Date(clock).toISOString();
  const records = [];
  records.push({
    type: 'run_start',
    ts: iso(),
    tag,
    branch: `autoresearch/${tag}`,
    resume: false,
    base_commit: base,
    proposer: 'offline',
    seed: 0,
    config: {
      metric: 'val_bpb',
      direction: 'lower',
      budget_s: 60,
      timeout_s: 120,
      run: 'python train.py',
      editable: ['train.py'],
      readonly: ['prepare.py'],
    },
    readonly_hashes: {
      'prepare.py': createHash('sha256')
        .update(fs.readFileSync(path.join(dir, 'prepare.py')))
        .digest('hex'),
    },
    engine_version: '0.1.0',
    pid: 4242,
  });

  let best = null;
  let bestCommit = null;
  let head = base;
  for (let n = 0; n < count; n++) {
    const roll = r();
    const status =
      n === 0 ? 'keep' : roll < 0.15 ? 'keep' : roll < 0.9 ? 'discard' : roll < 0.98 ? 'crash' : 'rejected';
    // 1–3 constants (the baseline changes nothing).
    const changes = {};
    if (n > 0) {
      const k = 1 + Math.floor(r() * 3);
      while (Object.keys(changes).length < k) {
        const [name, , next] = CONSTANTS[Math.floor(r() * CONSTANTS.length)];
        changes[name] = next(values[name], r);
      }
    }
    const names = Object.keys(changes);
    const description = n === 0 ? 'baseline' : names.map(k => `${k} ${values[k]} → ${changes[k]}`).join(', ');
    clock += 1000 + Math.round(r() * 3000);
    records.push({ type: 'experiment_start', ts: iso(), n, parent_commit: head, description });
    const proposeS = Number((0.01 + r() * 0.05).toFixed(3));
    const runS =
      status === 'rejected'
        ? 0
        : status === 'crash'
          ? Number((3 + r() * 20).toFixed(2))
          : Number((64 + r() * 5).toFixed(2));
    clock += Math.round((proposeS + runS) * 1000);
    const commit = status === 'rejected' ? null : sha1(`${tag}:${n}`);
    let metric = null;
    if (status === 'keep') {
      metric = best === null ? 1.1 + r() * 0.02 : best - (0.0005 + r() * 0.004);
    } else if (status === 'discard') {
      metric = best + r() * 0.02;
    }
    metric = metric === null ? null : Number(metric.toFixed(6));
    const diff = n === 0 || (status === 'rejected' && roll > 0.99) ? '' : diffOf(values, changes);
    const crash = status === 'crash';
    let logPath = null;
    if (crash) {
      const log = path.join(state, 'logs', `${String(n).padStart(4, '0')}.log`);
      const lines = Array.from({ length: 40 }, (_, i) => `step ${i * 10} loss ${(3 - i * 0.02).toFixed(4)}`);
      lines.push(
        'Traceback (most recent call last):',
        '  File "train.py", line 212, in <module>',
        `${CRASHES[n % CRASHES.length].replace(/^exited with code 1: /, '')}`,
      );
      fs.writeFileSync(log, lines.join('\n') + '\n');
      logPath = path.relative(dir, log);
    }
    const record = {
      type: 'experiment',
      ts: iso(),
      n,
      parent_commit: head,
      commit,
      description,
      rationale:
        n === 0
          ? 'the unchanged program, to rank the proposals against'
          : `offline search: ${names.join(' and ')} looked promising after #${n - 1}`,
      diff,
      lines_added: diff ? names.length : 0,
      lines_removed: diff ? names.length : 0,
      summary: metric === null ? {} : summaryOf(metric, r, { ...values, ...changes }),
      metric,
      best_before: best,
      delta: metric !== null && best !== null ? Number((metric - best).toFixed(6)) : null,
      status,
      reason: crash ? CRASHES[n % CRASHES.length] : status === 'rejected' ? REJECTS[n % REJECTS.length] : null,
      memory_gb: metric === null ? 0 : Number((0.9 + r() * 0.3).toFixed(3)),
      timings: { propose_s: proposeS, run_s: runS, total_s: Number((proposeS + runS + 0.2).toFixed(3)) },
      exit_code: crash ? 1 : status === 'rejected' ? null : 0,
      signal: null,
      log_path: logPath,
      log_truncated: false,
      proposer: n === 0 ? 'baseline' : 'offline',
      usage: { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      cost_usd: 0,
      proposal_meta: n === 0 ? undefined : { set: changes },
    };
    if (record.proposal_meta === undefined) {
      delete record.proposal_meta;
    }
    records.push(record);
    if (status === 'keep') {
      Object.assign(values, changes);
      best = metric;
      bestCommit = commit;
      head = commit;
    }
  }
  clock += 500;
  records.push({
    type: 'run_end',
    ts: iso(),
    reason: 'max-experiments',
    message: null,
    best_commit: bestCommit,
    best_metric: best,
  });
  fs.writeFileSync(path.join(state, 'journal.jsonl'), records.map(rec => JSON.stringify(rec)).join('\n') + '\n');
  return { tag, experiments: count, records: records.length };
}
