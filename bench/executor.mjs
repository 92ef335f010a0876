#!/usr/bin/env node
// bench/executor: what running training through a Jupyter kernel costs over a plain child process.
//
// A training script that sleeps 1 s and prints a random metric runs 20 times under
// `autoresearch run` (baseline + 19 proposals by the offline proposer), twice:
//   kernel     — --executor kernel: a real `jupyter server` on 127.0.0.1 and its ipykernel
//                (the kernel's start is part of the cost, spread over the 20 experiments);
//   subprocess — --executor subprocess: the run is a child of the engine.
//   slurm      — --executor slurm: each run an srun job step on a Slurm cluster: the one $SLURM_CONF
//                names, else the one-node cluster scripts/local-slurm.sh starts here.
// All use the venv's interpreter; the sides alternate so slow spells of a shared machine hit each.
// Prints each side's overhead per experiment (wall time ÷ 20 − the 1 s sleep),
// `kernel_overhead_ratio: X` = kernel wall time ÷ subprocess wall time (target ≤ 1.3) and, last,
// `slurm_overhead_ratio: Y` = slurm wall time ÷ subprocess wall time (target ≤ 1.5: srun's start-up).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchWorkspace, freePort, ONE_RUN_EACH, sleepTrain } from './common.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ENGINE = path.join(ROOT, 'lib', 'engine', 'autoresearch.cjs');
const JUPYTER = path.join(ROOT, '.venv', 'bin', 'jupyter');
const N = Number(process.env.BENCH_EXPERIMENTS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SLEEP_S = 1;
// The kernel runs `python train.py` with its own interpreter first on PATH; the subprocess side gets the same one.
const PYTHON = execFileSync(path.join(ROOT, '.venv', 'bin', 'python'), ['-c', 'import sys; print(sys.executable)'], {
  encoding: 'utf8',
}).trim();

const TRAIN = sleepTrain(SLEEP_S);

/** A `jupyter server` on 127.0.0.1 with a temp root; resolves once its kernelspecs answer. */
async function startServer() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bench-jupyter-'));
  const token = randomBytes(16).toString('hex');
  const port = await freePort();
  const args = [
    'server',
    '--no-browser',
    '--ip=127.0.0.1',
    `--port=${port}`,
    '--port-retries=0',
    `--ServerApp.root_dir=${tmp}`,
    `--IdentityProvider.token=${token}`,
  ];
  if (process.getuid?.() === 0) args.push('--allow-root');
  const child = spawn(JUPYTER, args, {
    cwd: tmp,
    env: { ...process.env, JUPYTER_RUNTIME_DIR: path.join(tmp, '.runtime') },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let err = '';
  child.stderr.on('data', d => (err += d));
  const url = `http://127.0.0.1:${port}/`;
  const stop = () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  for (const until = Date.now() + 90_000; ;) {
    if (child.exitCode !== null) throw new Error(`jupyter server exited: ${err}`);
    if (Date.now() > until) {
      stop();
      throw new Error(`jupyter server did not answer within 90 s: ${err}`);
    }
    try {
      if ((await fetch(`${url}api/kernelspecs`, { headers: { Authorization: `token ${token}` } })).ok) break;
    } catch {
      // not listening yet
    }
    await new Promise(r => setTimeout(r, 200));
  }
  return { url, token, stop };
}

function workspace(name) {
  return benchWorkspace(name, { train: TRAIN, budgetS: SLEEP_S, timeoutS: 30 });
}

function runEngine(name, extra) {
  const dir = workspace(name);
  const t = process.hrtime.bigint();
  const r = spawnSync(
    process.execPath,
    [
      ENGINE,
      'run',
      dir,
      '--tag',
      'bench',
      '--proposer',
      'offline',
      '--max-experiments',
      String(N - 1),
      '--python',
      PYTHON,
      ...ONE_RUN_EACH,
      ...extra,
    ],
    { encoding: 'utf8' },
  );
  const seconds = Number(process.hrtime.bigint() - t) / 1e9;
  if (r.status !== 0) throw new Error(`${name}: the engine failed: ${r.stderr}`);
  const records = fs
    .readFileSync(path.join(dir, '.autoresearch', 'bench', 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map(l => JSON.parse(l));
  const exps = records.filter(r => r.type === 'experiment');
  if (exps.length !== N) throw new Error(`${name}: the engine ran ${exps.length} experiments, expected ${N}`);
  const crashes = exps.filter(e => e.status === 'crash');
  if (crashes.length) throw new Error(`${name}: ${crashes.length} experiments crashed, e.g. ${crashes[0].reason}`);
  fs.rmSync(dir, { recursive: true, force: true });
  return seconds;
}

for (const [file, fix] of [
  [ENGINE, 'run npm run build:engine (make setup does)'],
  [JUPYTER, 'run make setup (it installs jupyter_server and ipykernel into .venv)'],
]) {
  if (!fs.existsSync(file)) {
    console.error(`bench/executor: ${file} is missing; ${fix}`);
    process.exit(1);
  }
}
/** The environment Slurm's commands need: $SLURM_CONF's cluster if set, else the local one, started. */
function slurmEnv() {
  if (process.env.SLURM_CONF) return {};
  const script = path.join(ROOT, 'scripts', 'local-slurm.sh');
  const started = spawnSync('bash', [script, 'start'], { encoding: 'utf8' });
  if (started.status !== 0)
    throw new Error(`bench/executor: ${script} start failed:\n${started.stdout}${started.stderr}`);
  const env = {};
  for (const m of spawnSync('bash', [script, 'env'], { encoding: 'utf8' }).stdout.matchAll(/^export (\w+)=(.*)$/gm)) {
    env[m[1]] = m[2].replace(/^(['"])(.*)\1$/, '$2');
  }
  return env;
}

Object.assign(process.env, slurmEnv());
const server = await startServer();
let kernel = 0;
let subprocess = 0;
let slurm = 0;
try {
  for (let i = 0; i < ROUNDS; i++) {
    subprocess += runEngine('subprocess', ['--executor', 'subprocess']);
    kernel += runEngine('kernel', ['--executor', 'kernel', '--server-url', server.url, '--token', server.token]);
    slurm += runEngine('slurm', ['--executor', 'slurm']);
  }
} finally {
  server.stop();
}
kernel /= ROUNDS;
subprocess /= ROUNDS;
slurm /= ROUNDS;
const per = s => ((s / N - SLEEP_S) * 1000).toFixed(1);
console.log(`experiments: ${N} × ${SLEEP_S} s of training, ${ROUNDS} round(s)`);
console.log(`subprocess_wall_s: ${subprocess.toFixed(2)}`);
console.log(`kernel_wall_s: ${kernel.toFixed(2)}`);
console.log(`subprocess_overhead_ms_per_experiment: ${per(subprocess)}`);
console.log(`kernel_overhead_ms_per_experiment: ${per(kernel)}`);
console.log(`slurm_wall_s: ${slurm.toFixed(2)}`);
console.log(`slurm_overhead_ms_per_experiment: ${per(slurm)}`);
console.log(`kernel_overhead_ratio: ${(kernel / subprocess).toFixed(3)}`);
console.log(`slurm_overhead_ratio: ${(slurm / subprocess).toFixed(3)}`);
