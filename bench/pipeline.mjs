#!/usr/bin/env node
// bench/pipeline: how busy the training side stays when the proposer is slow.
//
// The local Messages API stand-in (test/stand-ins/messages-api.ts) answers each proposal
// after BENCH_LATENCY_S (default 20 s); a training script sleeps BENCH_TRAIN_S (default 60 s).
// BENCH_EXPERIMENTS (default 10) experiments run through `autoresearch run --proposer claude`
// twice, side by side: sequential (--no-pipeline) and pipelined. The figure does not come from the
// engine: each training run appends its own wall-clock start and end (time.time(), taken first
// and last thing in the script) to a file in the workspace, and a side's busy fraction is the
// time those runs took ÷ the wall-clock span from the end of the baseline's run to the end of the
// last run, over the experiments after the baseline (the bench's clock, Date.now(), reads the same
// system clock; it checks the span lies inside the engine process's lifetime). A run missing from
// the file is an error, not a zero. The engine's own idle_s figure is printed beside it, for
// comparison. Prints both sides, and last `busy_fraction: X` for the pipelined one. Target ≥ 0.95.
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { benchWorkspace, ONE_RUN_EACH } from './common.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ENGINE = path.join(ROOT, 'lib', 'engine', 'autoresearch.cjs');
const N = Number(process.env.BENCH_EXPERIMENTS ?? 10);
const TRAIN_S = Number(process.env.BENCH_TRAIN_S ?? 60);
const LATENCY_S = Number(process.env.BENCH_LATENCY_S ?? 20);
const PYTHON = execFileSync(process.env.AUTORESEARCH_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], {
  encoding: 'utf8',
}).trim();

/** The stand-in server, bundled from its TypeScript source for this process. */
async function loadStandIn() {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bench-')), 'messages-api.cjs');
  await build({
    entryPoints: [path.join(ROOT, 'test', 'stand-ins', 'messages-api.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    logLevel: 'warning',
  });
  return createRequire(import.meta.url)(out);
}

// One line per experiment, a comment line apart so that drafts merge cleanly onto kept results.
const LINES = Array.from({ length: N + 1 }, (_, i) => `V${i + 1} = 0\n#`).join('\n');
/** Where each training run appends "start end" (its own wall clock), in the workspace: git-ignored, and writable inside a sandbox. */
const TIMES = 'run-times.txt';
const TRAIN = `import time
T0 = time.time()
import os, random
${LINES}
time.sleep(${TRAIN_S})
# Each change helps a little, and noise decides many: a mix of keeps and discards.
m = 2.0 - 0.01 * (${Array.from({ length: N + 1 }, (_, i) => `V${i + 1}`).join(' + ')}) + random.uniform(0, 0.02)
print("---")
print(f"val_bpb:          {m:.6f}")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "${TIMES}"), "a") as f:
    f.write(f"{T0:.6f} {time.time():.6f}\\n")
`;

function workspace(name) {
  return benchWorkspace(name, { train: TRAIN, budgetS: TRAIN_S, gitignore: `${TIMES}\n` });
}

/** The runs' own [start, end] in ms, in order; every run must have written its line. */
function runTimes(dir, expected) {
  const file = path.join(dir, TIMES);
  const lines = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  const spans = lines.map(l => l.split(' ').map(x => Number(x) * 1000));
  if (spans.length !== expected || spans.some(([a, b]) => !(Number.isFinite(a) && Number.isFinite(b) && b >= a))) {
    throw new Error(
      `${file}: ${spans.length} well-formed runs of ${expected}; every run must record its start and end`,
    );
  }
  return spans.sort((x, y) => x[0] - y[0]);
}

/** A model that sets one more V line to 1 per proposal, in one turn. */
function handler() {
  let k = 0;
  return () => {
    k++;
    return {
      type: 'message',
      content: [
        {
          type: 'tool_use',
          name: 'str_replace_based_edit_tool',
          input: { command: 'str_replace', path: 'train.py', old_str: `V${k} = 0\n`, new_str: `V${k} = 1\n` },
        },
        {
          type: 'tool_use',
          name: 'finish_experiment',
          input: { description: `set V${k}`, rationale: `proposal ${k}` },
        },
      ],
    };
  };
}

async function side(MessagesApiServer, name, pipeline) {
  const server = await MessagesApiServer.start({ latencyMs: LATENCY_S * 1000, handler: handler() });
  const dir = workspace(name);
  const args = [
    ENGINE,
    'run',
    dir,
    '--tag',
    'bench',
    '--proposer',
    'claude',
    '--max-experiments',
    String(N),
    '--python',
    PYTHON,
    ...ONE_RUN_EACH,
  ];
  if (!pipeline) args.push('--no-pipeline');
  const env = { ...process.env, ANTHROPIC_API_KEY: server.apiKey, ANTHROPIC_BASE_URL: server.url };
  const started = Date.now();
  const code = await new Promise(resolve => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('close', resolve);
  });
  await server.close();
  if (code !== 0) throw new Error(`${name}: the engine exited with ${code}`);
  const ended = Date.now();
  const exps = fs
    .readFileSync(path.join(dir, '.autoresearch', 'bench', 'journal.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map(l => JSON.parse(l))
    .filter(r => r.type === 'experiment');
  if (exps.length !== N + 1) throw new Error(`${name}: ${exps.length} experiments, expected ${N + 1}`);
  // One run per experiment (ONE_RUN_EACH): the first is the baseline's.
  const spans = runTimes(dir, N + 1);
  if (spans[0][0] < started || spans.at(-1)[1] > ended)
    throw new Error(`${name}: run times outside the engine's lifetime; is the clock stepping?`);
  const [baseline, ...after] = spans;
  const training = after.reduce((s, [a, b]) => s + (b - a), 0) / 1000;
  const span = (after.at(-1)[1] - baseline[1]) / 1000;
  // The engine's own account, for comparison only: a missing idle_s is reported, not read as 0.
  const recorded = exps.slice(1).filter(e => typeof e.timings.idle_s === 'number');
  const engineIdle = recorded.reduce((s, e) => s + e.timings.idle_s, 0);
  const engineRun = recorded.reduce((s, e) => s + e.timings.run_s, 0);
  return {
    busy: training / span,
    training,
    idle: span - training,
    wall: (ended - started) / 1000,
    keeps: exps.slice(1).filter(e => e.status === 'keep').length,
    engineBusy: recorded.length ? engineRun / (engineRun + engineIdle) : null,
    engineMissing: N - recorded.length,
  };
}

if (!fs.existsSync(ENGINE)) {
  console.error(`bench/pipeline: ${ENGINE} is missing; run npm run build:engine (make setup does)`);
  process.exit(1);
}
const { MessagesApiServer } = await loadStandIn();
console.log(`experiments: ${N} after the baseline; training ${TRAIN_S} s; proposal latency ${LATENCY_S} s`);
// Both sides sleep rather than compute, so they can run at once without disturbing each other.
const [seq, pipe] = await Promise.all([
  side(MessagesApiServer, 'sequential', false),
  side(MessagesApiServer, 'pipelined', true),
]);
for (const [name, r] of [
  ['sequential', seq],
  ['pipelined', pipe],
]) {
  const engine =
    r.engineBusy === null
      ? 'none'
      : `${r.engineBusy.toFixed(3)}${r.engineMissing ? ` (${r.engineMissing} without idle_s)` : ''}`;
  console.log(
    `${name}: training ${r.training.toFixed(1)} s, idle ${r.idle.toFixed(1)} s (the runs' own clocks), wall ${r.wall.toFixed(1)} s, ${r.keeps} kept, busy ${r.busy.toFixed(3)}; the engine's idle_s says ${engine}`,
  );
}
console.log(`sequential_busy_fraction: ${seq.busy.toFixed(3)}`);
console.log(`busy_fraction: ${pipe.busy.toFixed(3)}`);
