#!/usr/bin/env node
// bench/noise: does the keep rule ratchet noise as progress?
//
// A synthetic train.py whose metric is a known function of four constants plus Gaussian noise:
//   val_bpb = 1 + 0.01 · log2(LEARNING_RATE / 0.016)² + 0.015 · (N_LAYER − 6)² + N(0, 0.01²)
// LEARNING_RATE starts at 0.002 (8× too low: ×2 steps gain 0.05, 0.03, 0.01, then 0.016 → 0.032
// is truly worse by 0.01 — the trap the strict rule fell into), N_LAYER at 3 (+1 steps gain 0.075,
// 0.045, 0.015; 6 → 7 is worse by 0.015); DROPOUT and WARMUP_STEPS do nothing. The noise comes
// from a generator seeded by the run's AUTORESEARCH_SEED, the bench seed and the constants, so a
// repeat of the same code is a fresh draw, as a retrain with another seed is (an engine that
// sets no AUTORESEARCH_SEED gets a run counter in the workspace instead). The script does no
// work: a run takes one Python start (~50 ms).
//
// For each seed (BENCH_SEEDS, default 5: seeds 1..5) and each rule, a fresh workspace gets
// `autoresearch run --proposer offline --seed S --max-experiments 30` (BENCH_PROPOSALS):
//   strict — --noise-runs 1: keep any improvement on one run (the original's rule);
//   noise  — the defaults (noise_runs 3, keep_sigma 2, confirm_runs 2).
// From the journal and the true function of each kept commit's constants (read with
// `git show <commit>:train.py`) it prints per rule and seed: keeps, false keeps (kept while
// truly no better than the best before it; "worse" counts those truly worse), the true gain
// reached (true value of the baseline − true value of the final best, of the 0.225 there is)
// and the training runs spent (the journal's `run` records; its experiments when there are
// none); then each rule's averages, `gain_ratio: x` (the noise rule's mean true gain ÷ the
// strict rule's; target ≥ 0.8) and, last, `false_keeps: N` for the noise rule over all
// seeds (target 0).
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchWorkspace, readJournal, realPython } from './common.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// BENCH_ENGINE: another build of the engine (e.g. one made with scripts/build-engine.mjs --outfile).
const ENGINE = process.env.BENCH_ENGINE ?? path.join(ROOT, 'lib', 'engine', 'autoresearch.cjs');
const SEEDS = Number(process.env.BENCH_SEEDS ?? 5);
const PROPOSALS = Number(process.env.BENCH_PROPOSALS ?? 30);
const PYTHON = realPython();
const TAG = 'bench';
const EPS = 1e-9;
// BENCH_VERBOSE=1: every experiment, with its measured and true metric.
const VERBOSE = Boolean(process.env.BENCH_VERBOSE);

/** Where each constant starts; the proposer moves them. */
const START = { LEARNING_RATE: 0.002, N_LAYER: 3, DROPOUT: 0.1, WARMUP_STEPS: 100 };
const LR_OPT = 0.016;
const LR_COST = 0.01;
const LAYER_OPT = 6;
const LAYER_COST = 0.015;
const SIGMA = 0.01;

/** The noiseless metric of a set of constants (train.py computes the same). */
function trueBpb(c) {
  return 1 + LR_COST * Math.log2(c.LEARNING_RATE / LR_OPT) ** 2 + LAYER_COST * (c.N_LAYER - LAYER_OPT) ** 2;
}

const RULES = [
  { name: 'strict', args: ['--noise-runs', '1'] },
  { name: 'noise', args: [] },
];

function trainPy(benchSeed) {
  return `"""Synthetic training: the metric is a known function of the constants plus seeded noise."""
import math
import os
import random

LEARNING_RATE = ${START.LEARNING_RATE}  # matters: best at ${LR_OPT}
N_LAYER = ${START.N_LAYER}  # matters: best at ${LAYER_OPT}
DROPOUT = ${START.DROPOUT}  # does nothing
WARMUP_STEPS = ${START.WARMUP_STEPS}  # does nothing

bench_seed = ${benchSeed}
run_seed = os.environ.get("AUTORESEARCH_SEED")
if run_seed is None:
    # An engine that gives no seed: count the runs, so each one still draws afresh.
    try:
        with open(".bench-runs") as f:
            count = int(f.read() or 0) + 1
    except FileNotFoundError:
        count = 1
    with open(".bench-runs", "w") as f:
        f.write(str(count))
    run_seed = f"count{count}"
true_bpb = 1 + ${LR_COST} * math.log2(LEARNING_RATE / ${LR_OPT}) ** 2 + ${LAYER_COST} * (N_LAYER - ${LAYER_OPT}) ** 2
rng = random.Random(f"{bench_seed}:{run_seed}:{LEARNING_RATE!r}:{N_LAYER!r}:{DROPOUT!r}:{WARMUP_STEPS!r}")
print("---")
print(f"val_bpb:          {true_bpb + rng.gauss(0.0, ${SIGMA}):.6f}")
print("training_seconds: 0.0")
print("peak_vram_mb:     0.0")
`;
}

/** The module-level UPPER_CASE numeric constants of a train.py. */
function constantsOf(source) {
  const out = {};
  for (const m of source.matchAll(/^([A-Z][A-Z0-9_]*)\s*=\s*([-+0-9.eE_]+)/gm)) {
    out[m[1]] = Number(m[2].replace(/_/g, ''));
  }
  return out;
}

function runRule(rule, seed) {
  const dir = benchWorkspace(`noise-${rule.name}-${seed}`, {
    train: trainPy(seed),
    budgetS: 1,
    timeoutS: 30,
    gitignore: '.bench-runs\n',
  });
  // The runs' seeds are the engine's to give: none inherited from this shell.
  const env = { ...process.env };
  delete env.AUTORESEARCH_SEED;
  delete env.AUTORESEARCH_RUN;
  const args = [
    ENGINE,
    'run',
    dir,
    '--tag',
    TAG,
    '--proposer',
    'offline',
    '--seed',
    String(seed),
    '--max-experiments',
    String(PROPOSALS),
    '--python',
    PYTHON,
    ...rule.args,
  ];
  const t = process.hrtime.bigint();
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', env });
  const wallS = Number(process.hrtime.bigint() - t) / 1e9;
  if (r.status !== 0) {
    throw new Error(`engine failed (${rule.name}, seed ${seed}, ${dir}): ${r.stderr || r.stdout}`);
  }
  const result = analyse(dir);
  fs.rmSync(dir, { recursive: true, force: true });
  return { ...result, wallS };
}

/** The truth about one run: its keeps judged by the noiseless metric of the code they kept. */
function analyse(dir) {
  const records = readJournal(dir, TAG);
  const experiments = records.filter(r => r.type === 'experiment');
  const runs = records.filter(r => r.type === 'run');
  const truthCache = new Map();
  const truthAt = commit => {
    if (!truthCache.has(commit)) {
      const source = execFileSync('git', ['show', `${commit}:train.py`], { cwd: dir, encoding: 'utf8' });
      truthCache.set(commit, trueBpb(constantsOf(source)));
    }
    return truthCache.get(commit);
  };
  const baseline = experiments.find(e => e.n === 0);
  if (!baseline?.commit || baseline.status !== 'keep') {
    throw new Error(`no kept baseline in ${dir}`);
  }
  const start = truthAt(baseline.commit);
  let best = start;
  let bestCommit = baseline.commit;
  let keeps = 0;
  let falseKeeps = 0;
  let worseKeeps = 0;
  for (const e of experiments) {
    if (VERBOSE) {
      const truth = e.commit ? truthAt(e.commit).toFixed(4) : '-';
      const n = e.runs ? ` ${e.runs.length} run(s)` : '';
      console.log(
        `  #${e.n} ${e.status.padEnd(7)} ${e.metric?.toFixed(4) ?? '-'} (true ${truth}, best ${best.toFixed(4)})${n}: ${e.description}`,
      );
    }
    if (e.n === 0 || e.status !== 'keep') continue;
    const value = truthAt(e.commit);
    keeps++;
    if (!(value < best - EPS)) falseKeeps++;
    if (value > best + EPS) worseKeeps++;
    best = value;
    bestCommit = e.commit;
  }
  const end = records.findLast(r => r.type === 'run_end');
  if (end?.best_commit && !bestCommit.startsWith(end.best_commit) && !end.best_commit.startsWith(bestCommit)) {
    throw new Error(`the run ended on ${end.best_commit}, not on its last keep ${bestCommit} (${dir})`);
  }
  const proposals = experiments.filter(e => e.n > 0).length;
  const spent = runs.length > 0 ? runs.length : experiments.filter(e => e.status !== 'rejected').length;
  const finalConstants = constantsOf(
    execFileSync('git', ['show', `${bestCommit}:train.py`], { cwd: dir, encoding: 'utf8' }),
  );
  return {
    proposals,
    keeps,
    falseKeeps,
    worseKeeps,
    gain: start - best,
    runs: spent,
    hasRunRecords: runs.length > 0,
    finalConstants,
  };
}

if (!fs.existsSync(ENGINE)) {
  console.error(`bench/noise: ${ENGINE} is missing; run npm run build:engine (make setup does)`);
  process.exit(1);
}

const available = trueBpb(START) - trueBpb({ LEARNING_RATE: LR_OPT, N_LAYER: LAYER_OPT });
console.log(
  `noise: ${PROPOSALS} offline proposals × ${SEEDS} seed(s) per rule; σ = ${SIGMA}; true gain available ${available.toFixed(4)}`,
);
const results = Object.fromEntries(RULES.map(r => [r.name, []]));
for (let seed = 1; seed <= SEEDS; seed++) {
  for (const rule of RULES) {
    const r = runRule(rule, seed);
    results[rule.name].push(r);
    const c = r.finalConstants;
    console.log(
      `${rule.name.padEnd(6)} seed ${seed}: keeps ${String(r.keeps).padStart(2)}, false keeps ${r.falseKeeps} (${r.worseKeeps} worse), ` +
        `true gain ${r.gain.toFixed(4)}, runs ${r.runs}${r.hasRunRecords ? '' : ' (experiments: no run records)'}, ` +
        `proposals ${r.proposals}, ${r.wallS.toFixed(1)} s; best LEARNING_RATE ${c.LEARNING_RATE}, N_LAYER ${c.N_LAYER}`,
    );
  }
}

const avg = (xs, f) => xs.reduce((s, x) => s + f(x), 0) / xs.length;
const sum = (xs, f) => xs.reduce((s, x) => s + f(x), 0);
for (const rule of RULES) {
  const rs = results[rule.name];
  console.log(
    `${rule.name.padEnd(6)} mean: keeps ${avg(rs, r => r.keeps).toFixed(1)}, false keeps ${avg(rs, r => r.falseKeeps).toFixed(1)} ` +
      `(${sum(rs, r => r.falseKeeps)} in all, ${sum(rs, r => r.worseKeeps)} truly worse), true gain ${avg(rs, r => r.gain).toFixed(4)} ` +
      `(${((avg(rs, r => r.gain) / available) * 100).toFixed(0)} % of what is available), runs ${avg(rs, r => r.runs).toFixed(1)}`,
  );
}
const strictGain = avg(results.strict, r => r.gain);
const noiseGain = avg(results.noise, r => r.gain);
console.log(`gain_ratio: ${strictGain > 0 ? (noiseGain / strictGain).toFixed(3) : 'n/a'}`);
console.log(`false_keeps: ${sum(results.noise, r => r.falseKeeps)}`);
