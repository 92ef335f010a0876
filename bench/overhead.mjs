#!/usr/bin/env node
// bench/overhead: what the engine costs per experiment beyond training itself.
//
// A training script that sleeps 1 s and prints a random metric runs 20 times:
//   engine — `autoresearch run` (baseline + 19 proposals by the offline proposer);
//   shell  — a plain bash loop doing only edit → commit → run → grep → keep or reset.
// Both sides run in this process's machine, in the same run, so noise hits both alike.
// Prints each side's overhead per experiment (wall time ÷ 20 − the 1 s sleep) and,
// last, `overhead_ratio: X` = engine wall time ÷ shell wall time. Target ≤ 1.10.
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchWorkspace, ONE_RUN_EACH, sleepTrain } from './common.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ENGINE = path.join(ROOT, 'lib', 'engine', 'autoresearch.cjs');
const N = Number(process.env.BENCH_EXPERIMENTS ?? 20);
const SLEEP_S = 1;
// The real interpreter, not a launcher (pyenv's shim costs ~90 ms a start): both sides use it.
const PYTHON = execFileSync(process.env.AUTORESEARCH_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], {
  encoding: 'utf8',
}).trim();

const TRAIN = sleepTrain(SLEEP_S);

function workspace(name) {
  return benchWorkspace(name, {
    train: TRAIN,
    budgetS: SLEEP_S,
    timeoutS: 30,
    gitignore: 'results.tsv\n.autoresearch/\nrun.log\n',
  });
}

function timed(fn) {
  const t = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t) / 1e9;
}

// The shell loop: the least a human-written loop does per experiment.
const SHELL = `set -e
best=999
python=$1; n=$2
for i in $(seq 1 $n); do
  if [ "$i" -gt 1 ]; then
    sed -i "s/^N_LAYER = .*/N_LAYER = $((100 + i))/" train.py
    git commit -qam "N_LAYER -> $i"
  fi
  "$python" train.py > run.log 2>&1 || true
  m=$(grep "^val_bpb:" run.log | awk '{print $2}')
  if awk "BEGIN{exit !($m < $best)}"; then best=$m; else git reset -q --hard HEAD~1; fi
done
`;

function runShell() {
  const dir = workspace('shell');
  return timed(() => {
    const r = spawnSync('bash', ['-c', SHELL, 'bench', PYTHON, String(N)], { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`shell loop failed: ${r.stderr}`);
  });
}

function runEngine() {
  const dir = workspace('engine');
  const seconds = timed(() => {
    const r = spawnSync(
      process.execPath,
      [ENGINE, 'run', dir, '--tag', 'bench', '--max-experiments', String(N - 1), '--python', PYTHON, ...ONE_RUN_EACH],
      { encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`engine failed: ${r.stderr}`);
  });
  const lines = fs
    .readFileSync(path.join(dir, '.autoresearch', 'bench', 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n');
  const count = lines.filter(l => JSON.parse(l).type === 'experiment').length;
  if (count !== N) throw new Error(`engine ran ${count} experiments, expected ${N}`);
  return seconds;
}

if (!fs.existsSync(ENGINE)) {
  console.error(`bench/overhead: ${ENGINE} is missing; run npm run build:engine (make setup does)`);
  process.exit(1);
}
// Alternate the two sides so slow spells of a shared machine hit both.
let shell = 0;
let engine = 0;
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
for (let i = 0; i < rounds; i++) {
  shell += runShell();
  engine += runEngine();
}
shell /= rounds;
engine /= rounds;
const per = s => ((s / N - SLEEP_S) * 1000).toFixed(1);
console.log(`experiments: ${N} × ${SLEEP_S} s of training, ${rounds} round(s)`);
console.log(`shell_wall_s: ${shell.toFixed(2)}`);
console.log(`engine_wall_s: ${engine.toFixed(2)}`);
console.log(`shell_overhead_ms_per_experiment: ${per(shell)}`);
console.log(`engine_overhead_ms_per_experiment: ${per(engine)}`);
console.log(`overhead_ratio: ${(engine / shell).toFixed(3)}`);
