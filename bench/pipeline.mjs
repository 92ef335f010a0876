#!/usr/bin/env node
// bench/pipeline: how busy the training side stays when the proposer is slow.
//
// The local Messages API stand-in (test/stand-ins/messages-api.ts) answers each proposal
// after BENCH_LATENCY_S (default 20 s); a training script sleeps BENCH_TRAIN_S (default 60 s).
// BENCH_EXPERIMENTS (default 10) experiments run through `autoresearch run --proposer claude`
// twice, side by side: sequential (--no-pipeline) and pipelined. Each side's busy fraction is
// training time ÷ (training time + the idle time between runs the journal records), over the
// experiments after the baseline. Prints both, and last `busy_fraction: X` for the pipelined
// one. Target ≥ 0.95.
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
const PYTHON = execFileSync(process.env.AUTORESEARCH_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();

/** The stand-in server, bundled from its TypeScript source for this process. */
async function loadStandIn() {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bench-')), 'messages-api.cjs');
  await build({ entryPoints: [path.join(ROOT, 'test', 'stand-ins', 'messages-api.ts')], outfile: out, bundle: true, platform: 'node', format: 'cjs', logLevel: 'warning' });
  return createRequire(import.meta.url)(out);
}

// One line per experiment, a comment line apart so that drafts merge cleanly onto kept results.
const LINES = Array.from({ length: N + 1 }, (_, i) => `V${i + 1} = 0\n#`).join('\n');
const TRAIN = `import random, time
${LINES}
time.sleep(${TRAIN_S})
# Each change helps a little, and noise decides many: a mix of keeps and discards.
m = 2.0 - 0.01 * (${Array.from({ length: N + 1 }, (_, i) => `V${i + 1}`).join(' + ')}) + random.uniform(0, 0.02)
print("---")
print(f"val_bpb:          {m:.6f}")
`;

function workspace(name) {
  return benchWorkspace(name, { train: TRAIN, budgetS: TRAIN_S });
}

/** A model that sets one more V line to 1 per proposal, in one turn. */
function handler() {
  let k = 0;
  return () => {
    k++;
    return {
      type: 'message',
      content: [
        { type: 'tool_use', name: 'str_replace_based_edit_tool', input: { command: 'str_replace', path: 'train.py', old_str: `V${k} = 0\n`, new_str: `V${k} = 1\n` } },
        { type: 'tool_use', name: 'finish_experiment', input: { description: `set V${k}`, rationale: `proposal ${k}` } }
      ]
    };
  };
}

async function side(MessagesApiServer, name, pipeline) {
  const server = await MessagesApiServer.start({ latencyMs: LATENCY_S * 1000, handler: handler() });
  const dir = workspace(name);
  const args = [ENGINE, 'run', dir, '--tag', 'bench', '--proposer', 'claude', '--max-experiments', String(N), '--python', PYTHON, ...ONE_RUN_EACH];
  if (!pipeline) args.push('--no-pipeline');
  const env = { ...process.env, ANTHROPIC_API_KEY: server.apiKey, ANTHROPIC_BASE_URL: server.url };
  const started = Date.now();
  const code = await new Promise(resolve => {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('close', resolve);
  });
  await server.close();
  if (code !== 0) throw new Error(`${name}: the engine exited with ${code}`);
  const exps = fs.readFileSync(path.join(dir, '.autoresearch', 'bench', 'journal.jsonl'), 'utf8').trim().split('\n').map(l => JSON.parse(l)).filter(r => r.type === 'experiment');
  if (exps.length !== N + 1) throw new Error(`${name}: ${exps.length} experiments, expected ${N + 1}`);
  const after = exps.slice(1);
  const run = after.reduce((s, e) => s + e.timings.run_s, 0);
  const idle = after.reduce((s, e) => s + (e.timings.idle_s ?? 0), 0);
  return { busy: run / (run + idle), run, idle, wall: (Date.now() - started) / 1000, keeps: after.filter(e => e.status === 'keep').length };
}

if (!fs.existsSync(ENGINE)) {
  console.error(`bench/pipeline: ${ENGINE} is missing; run npm run build:engine (make setup does)`);
  process.exit(1);
}
const { MessagesApiServer } = await loadStandIn();
console.log(`experiments: ${N} after the baseline; training ${TRAIN_S} s; proposal latency ${LATENCY_S} s`);
// Both sides sleep rather than compute, so they can run at once without disturbing each other.
const [seq, pipe] = await Promise.all([side(MessagesApiServer, 'sequential', false), side(MessagesApiServer, 'pipelined', true)]);
for (const [name, r] of [['sequential', seq], ['pipelined', pipe]]) {
  console.log(`${name}: training ${r.run.toFixed(1)} s, idle ${r.idle.toFixed(1)} s, wall ${r.wall.toFixed(1)} s, ${r.keeps} kept, busy ${r.busy.toFixed(3)}`);
}
console.log(`sequential_busy_fraction: ${seq.busy.toFixed(3)}`);
console.log(`busy_fraction: ${pipe.busy.toFixed(3)}`);
