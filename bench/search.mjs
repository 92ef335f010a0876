#!/usr/bin/env node
// bench/search: does searching past greedy (issue 28: prepared re-tests, combinations and
// ablations, a plateau's branch from the best near-miss) reach further than greedy on the same
// budget of training runs?
//
// Synthetic landscapes with interacting knobs and noise: a train.py whose metric is a known
// function of six UPPER_CASE constants plus Gaussian noise (σ 0.01). The optimum of each knob is
// drawn per bench seed, so every seed is another landscape; N_EMBD's optimum moves with the
// learning rate (the interaction: after the rate changes, width steps that failed may now help),
// WEIGHT_DECAY's with DROPOUT; WARMUP_STEPS does nothing. The noise is drawn from the run's
// AUTORESEARCH_SEED, the bench seed and the constants, so a repeat of the same code is a fresh draw.
//
// Each method runs the real loop (src/engine/run/setup.ts's Loop: the real git repository, the
// subprocess executor, the keep rule with its defaults, the journal) in process, bundled from the
// sources with esbuild, so what is measured is the code the engine runs:
//   greedy — the offline proposer with `search: greedy` (nothing prepared, never a branch);
//   tree   — the offline proposer with `search: tree` (the default: moves and plateau branches);
//   random — random search: each proposal draws every knob log-uniformly within ×/÷4 of where it
//            started (a proposer written here; the engine judges and keeps as for the others).
// Each stops proposing once its run has spent BENCH_RUNS training runs (default 100; the last
// experiment may finish a run or two past it), for BENCH_SEEDS seeds (default 10), BENCH_JOBS
// loops at once (default 3). About 5 minutes on 2 cores.
// Printed: per method and seed the true (noise-free) gain reached — the true metric of the
// baseline minus that of the final best — then each method's mean ± standard error, tree − greedy
// paired by landscape, and last `search_gain_ratio: X` (tree's mean true gain ÷ greedy's).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { benchWorkspace, readJournal, realPython } from './common.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SEEDS = Number(process.env.BENCH_SEEDS ?? 10);
const RUNS = Number(process.env.BENCH_RUNS ?? 100);
const METHODS = (process.env.BENCH_METHODS ?? 'greedy,tree,random').split(',');
const VERBOSE = Boolean(process.env.BENCH_VERBOSE);
// Loops run at once (in this one process).
const JOBS = Number(process.env.BENCH_JOBS ?? 3);
const TAG = 'bench';
const SIGMA = 0.01;

/** Where each constant starts. */
const START = { LEARNING_RATE: 0.002, N_EMBD: 128, N_LAYER: 4, WEIGHT_DECAY: 0.1, DROPOUT: 0.2, WARMUP_STEPS: 30 };

/** A small seeded PRNG (mulberry32), for the landscapes and the random proposer. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The landscape of a bench seed: each knob's optimum (drawn), the same for every method. */
function landscape(seed) {
  const r = prng(seed * 7919 + 1);
  return {
    lr: 0.002 * 2 ** (1 + 2 * r()), // 2× to 8× the start
    coupling: 0.5 + 0.5 * r(), // N_EMBD's optimum moves with log2 of the rate by this much
    embd: 128 * 2 ** (r() * 2 - 1),
    layers: 4 + Math.floor(r() * 5),
    wd: 0.1 * 2 ** (r() * 4 - 2),
    drop: 0.05 + 0.1 * r(),
  };
}

/** The noiseless metric (train.py computes the same in Python). */
function trueBpb(L, c) {
  const u = Math.log2(c.LEARNING_RATE / L.lr);
  const w = Math.log2(c.N_EMBD / L.embd) - L.coupling * u;
  const d = Math.log2(c.WEIGHT_DECAY / L.wd) + 4 * (c.DROPOUT - L.drop);
  return (
    1 +
    0.02 * u * u +
    0.03 * w * w +
    0.004 * (c.N_LAYER - L.layers) ** 2 +
    0.01 * d * d +
    0.2 * (c.DROPOUT - L.drop) ** 2
  );
}

function trainPy(seed) {
  const L = landscape(seed);
  const consts = Object.entries(START)
    .map(([k, v]) => `${k} = ${v}`)
    .join('\n');
  return `"""Synthetic training: a known function of the constants plus seeded noise (bench/search.mjs)."""
import math
import os
import random

${consts}

u = math.log2(LEARNING_RATE / ${L.lr})
w = math.log2(N_EMBD / ${L.embd}) - ${L.coupling} * u
d = math.log2(WEIGHT_DECAY / ${L.wd}) + 4 * (DROPOUT - ${L.drop})
true_bpb = 1 + 0.02 * u * u + 0.03 * w * w + 0.004 * (N_LAYER - ${L.layers}) ** 2 + 0.01 * d * d + 0.2 * (DROPOUT - ${L.drop}) ** 2
run_seed = os.environ.get("AUTORESEARCH_SEED", "0")
rng = random.Random(f"${seed}:{run_seed}:{LEARNING_RATE!r}:{N_EMBD!r}:{N_LAYER!r}:{WEIGHT_DECAY!r}:{DROPOUT!r}:{WARMUP_STEPS!r}")
print("---")
print(f"val_bpb:          {true_bpb + rng.gauss(0.0, ${SIGMA}):.6f}")
print("training_seconds: 0.0")
print("peak_vram_mb:     0.0")
`;
}

/** The module-level UPPER_CASE numeric constants of a train.py. */
function constantsOf(source) {
  const out = {};
  for (const m of source.matchAll(/^([A-Z][A-Z0-9_]*) = ([-+0-9.eE]+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/** The engine's own modules, bundled from the sources (what lib/engine/autoresearch.cjs is built from). */
async function engineModules() {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bench-search-')), 'engine.cjs');
  await build({
    stdin: {
      contents: [
        "export { Loop } from './src/engine/run/setup';",
        "export { OfflineProposer } from './src/engine/proposers/offline/proposer';",
        "export { SubprocessExecutor } from './src/engine/executor/subprocess';",
      ].join('\n'),
      resolveDir: ROOT,
      loader: 'ts',
    },
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    packages: 'bundle',
    logLevel: 'warning',
    loader: { '.md': 'text', '.py': 'text', '.txt': 'text', '.sh': 'text' },
  });
  return createRequire(import.meta.url)(out);
}

/** Random search: every knob drawn log-uniformly within ×/÷4 of its start (ints rounded, at least 1). */
class RandomProposer {
  name = 'random';
  constructor(seed) {
    this.rng = prng(seed * 104729 + 3);
  }
  async propose(ctx) {
    let text = ctx.files['train.py'];
    const parts = [];
    for (const [k, v] of Object.entries(START)) {
      const x = v * 4 ** (2 * this.rng() - 1);
      const value = Number.isInteger(v) ? Math.max(1, Math.round(x)) : Number(x.toPrecision(3));
      text = text.replace(new RegExp(`^${k} = .*$`, 'm'), `${k} = ${value}`);
      parts.push(`${k}=${value}`);
    }
    return { description: `random: ${parts.join(' ')}`, rationale: 'random search', files: { 'train.py': text } };
  }
}

/** Stops proposing once the run's journal holds `limit` training runs (the proposer says it has nothing left). */
class RunBudget {
  constructor(inner, journalFile, limit) {
    Object.assign(this, { inner, journalFile, limit, name: inner.name });
  }
  async propose(ctx) {
    const text = fs.existsSync(this.journalFile) ? fs.readFileSync(this.journalFile, 'utf8') : '';
    const runs = text.split('\n').filter(l => l.startsWith('{"type":"run"')).length;
    return runs >= this.limit ? null : this.inner.propose(ctx);
  }
}

async function runOne(engine, python, method, seed) {
  const dir = benchWorkspace(`search-${method}-${seed}`, { train: trainPy(seed), budgetS: 1, timeoutS: 30 });
  const inner = method === 'random' ? new RandomProposer(seed) : new engine.OfflineProposer();
  const proposer = new RunBudget(inner, path.join(dir, '.autoresearch', TAG, 'journal.jsonl'), RUNS);
  const t = process.hrtime.bigint();
  const loop = new engine.Loop({
    dir,
    tag: TAG,
    proposer,
    executor: new engine.SubprocessExecutor(1),
    python,
    seed,
    signal: new AbortController().signal,
    overrides: { search: method === 'tree' ? 'tree' : 'greedy' },
    warn: () => undefined,
  });
  await loop.run();
  const wallS = Number(process.hrtime.bigint() - t) / 1e9;
  const records = readJournal(dir, TAG);
  const exps = records.filter(r => r.type === 'experiment');
  const runs = records.filter(r => r.type === 'run').length;
  const L = landscape(seed);
  const best = exps.filter(e => e.status === 'keep').at(-1);
  const at = commit => constantsOf(execFileSync('git', ['show', `${commit}:train.py`], { cwd: dir, encoding: 'utf8' }));
  const gain = trueBpb(L, START) - trueBpb(L, at(best.commit));
  const moves = {};
  for (const e of exps) if (e.move) moves[e.move.kind] = (moves[e.move.kind] ?? 0) + 1;
  if (VERBOSE) {
    for (const e of exps) {
      const tv = e.commit ? trueBpb(L, at(e.commit)).toFixed(4) : '—';
      console.log(
        `  #${e.n} ${e.status} ${e.metric?.toFixed(4) ?? '—'} true ${tv} ${e.move?.kind ?? ''} ${e.description}`,
      );
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
  return {
    gain,
    runs,
    experiments: exps.length - 1,
    keeps: exps.filter(e => e.status === 'keep').length - 1,
    moves,
    wallS,
  };
}

const mean = xs => xs.reduce((a, b) => a + b, 0) / xs.length;
const se = xs =>
  xs.length > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1) / xs.length) : 0;

const engine = await engineModules();
const python = realPython();
const results = Object.fromEntries(METHODS.map(m => [m, []]));
console.log(`bench/search: ${SEEDS} landscapes, ${RUNS} training runs per method and seed, noise σ ${SIGMA}`);
// The runs mostly wait on processes (Python starts, git): a few loops at once keep 2 cores busy.
const jobs = [];
for (let seed = 1; seed <= SEEDS; seed++) for (const method of METHODS) jobs.push({ seed, method });
const done = new Map();
let nextJob = 0;
await Promise.all(
  Array.from({ length: JOBS }, async () => {
    while (nextJob < jobs.length) {
      const job = jobs[nextJob++];
      done.set(`${job.method}:${job.seed}`, await runOne(engine, python, job.method, job.seed));
    }
  }),
);
for (let seed = 1; seed <= SEEDS; seed++) {
  const L = landscape(seed);
  const reachable = trueBpb(L, START) - 1;
  for (const method of METHODS) {
    const r = done.get(`${method}:${seed}`);
    results[method].push(r.gain);
    const moves = Object.entries(r.moves)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    console.log(
      `seed ${String(seed).padStart(2)} ${method.padEnd(6)} true gain ${r.gain.toFixed(4)} of ${reachable.toFixed(4)}` +
        `  ${r.runs} runs, ${r.experiments} experiments, ${r.keeps} keeps${moves ? ` (${moves})` : ''}  ${r.wallS.toFixed(0)} s`,
    );
  }
}
for (const m of METHODS) {
  console.log(`${m}: mean true gain per ${RUNS} runs ${mean(results[m]).toFixed(4)} ± ${se(results[m]).toFixed(4)}`);
}
if (results.tree && results.greedy) {
  // Paired by landscape: the same seed is the same landscape for both.
  const diff = results.tree.map((g, i) => g - results.greedy[i]);
  const [won, lost] = [diff.filter(d => d > 1e-9).length, diff.filter(d => d < -1e-9).length];
  console.log(
    `tree − greedy, paired by landscape: ${mean(diff).toFixed(4)} ± ${se(diff).toFixed(4)} (tree ahead on ${won}, behind on ${lost}, level on ${diff.length - won - lost})`,
  );
  console.log(`search_gain_ratio: ${(mean(results.tree) / mean(results.greedy)).toFixed(3)}`);
}
