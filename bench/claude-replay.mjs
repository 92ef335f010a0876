#!/usr/bin/env node
// bench/claude-replay: what a claude proposal costs once the run is long, and how much of its
// prompt the cache serves.
//
// A recorded 30-proposal session (SESSION below: each proposal's replies, their thinking, a view,
// one str_replace of tiny-cpu's train.py and finish_experiment with its prediction and lesson) is
// replayed through the real ClaudeProposer and the real @anthropic-ai/sdk against the Messages API
// stand-in (test/stand-ins/messages-api.ts), which prices nothing but counts what the API would:
// the prompt tokens (≈ 4 characters a token), what each request writes to and reads from the
// prompt cache, with its 5-minute and 1-hour lifetimes and its 20-block lookback. The session runs
// after a synthetic history (test/stand-ins/research-history.ts) of 50, 700 and 1,400 experiments; the
// stand-in's clock advances 330 s between proposals (the original's 300 s budget and what
// surrounds a run), so a 5-minute cache entry has expired by the next proposal. Each replayed
// proposal becomes the next record of the history (a tenth of them kept, which changes train.py).
// Prices: src/core/config/pricing.ts for BENCH_MODEL (default claude-sonnet-5-5). Output tokens are the
// stand-in's count of the recorded replies (their thinking included), not a real model's.
//
// Prints one line per proposal, then per history size the means per proposal: prompt tokens,
// cache reads and writes, hit rate and dollars, beside the same replay with 5-minute entries only
// (the engine before this change chose no lifetime); then 1,400 experiments with the chosen lifetime,
// `tokens_per_prompt_700` and `_1400` (one request's prompt, the stand-in's count), and last
// `usd_per_proposal_700: X`. `--parts` prints instead the rendered first-turn prompt's parts with
// their tokens (≈ 4 characters a token) after 50, 700 and 1,400 experiments, and exits.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MODEL = process.env.BENCH_MODEL ?? 'claude-sonnet-5-5';
const GAP_S = 330;
const VERBOSE = process.env.BENCH_VERBOSE === '1';
const PYTHON = execFileSync(process.env.AUTORESEARCH_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], {
  encoding: 'utf8',
}).trim();

// The recorded session: [constant, new value, description, lesson on the last result].
const SESSION = [
  [
    'LEARNING_RATE',
    '0.0004',
    'double the peak learning rate',
    'the baseline loss still falls at the end: undertrained',
  ],
  ['WARMUP_FRAC', '0.02', 'shorten warmup to 2% of the budget', 'a higher rate helped; the schedule now matters more'],
  ['N_LAYER', '4', 'fewer blocks for more steps in 60 s', 'warmup was a large share of one minute'],
  ['N_EMBD', '192', 'widen the residual stream', 'depth 4 got 30% more steps but lost capacity'],
  ['BATCH_SIZE', '32', 'double the batch', 'width costs steps: 22% fewer at 192'],
  ['LEARNING_RATE', '0.0006', 'raise the rate with the bigger batch', 'a bigger batch used the cores better'],
  ['FINAL_LR_FRAC', '0.05', 'decay further at the end', 'the rate is near its edge: the loss spiked early'],
  ['WEIGHT_DECAY', '0.05', 'halve weight decay', 'the final decay helped within noise only'],
  ['MLP_RATIO', '3', 'narrower MLP, more steps', 'decay barely matters in one minute'],
  ['HEAD_DIM', '64', 'fewer, wider heads', 'a narrower MLP traded capacity for steps evenly'],
  ['SEQ_LEN', '256', 'longer training context', 'wider heads were faster per step'],
  ['GRAD_CLIP', '0.5', 'clip gradients harder', 'longer context cost half the steps'],
  ['DROPOUT', '0.05', 'a little dropout', 'clipping harder slowed learning'],
  ['N_LAYER', '5', 'one block back', 'no byte is seen twice: dropout cannot help'],
  ['WARMUP_FRAC', '0.0', 'no warmup at all', 'five blocks sit between the two best'],
  ['LEARNING_RATE', '0.0005', 'settle the rate between the two best', 'without warmup the first steps diverge'],
  ['BATCH_SIZE', '24', 'a batch between the two best', 'the rate optimum is flat near 0.0005'],
  ['N_EMBD', '160', 'a width between the two best', 'batch 24 is within noise of 32'],
  ['FINAL_LR_FRAC', '0.0', 'decay to zero', 'width 160 keeps most of the steps'],
  ['MLP_RATIO', '5', 'a wider MLP than the baseline', 'decay to zero is within noise'],
  ['HEAD_DIM', '48', 'heads of 48', 'MLP width matters less than steps'],
  ['WEIGHT_DECAY', '0.2', 'double weight decay', 'head width 48 is within noise of 64'],
  ['SEQ_LEN', '96', 'shorter context, more steps', 'decay is noise at this budget'],
  ['GRAD_CLIP', '2.0', 'loosen clipping', 'shorter context gains steps, loses long-range fit'],
  ['LEARNING_RATE', '0.0007', 'probe the rate once more after the batch change', 'clipping at 2 is the same as 1'],
  ['N_LAYER', '7', 'seven blocks at the new width', 'the rate edge moved up with the batch'],
  ['WARMUP_FRAC', '0.03', 'warmup of 3%', 'seven blocks lose steps again'],
  ['BATCH_SIZE', '40', 'a larger batch again', 'warmup 3% is within noise of 2%'],
  ['N_EMBD', '176', 'width 176', 'batch 40 saturates the cores'],
  ['DROPOUT', '0.02', 'the least dropout', 'width 176 is the best trade so far'],
];

/** The engine's parts, bundled from their TypeScript sources for this process. */
async function load() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bench-replay-'));
  const entry = path.join(dir, 'entry.ts');
  const src = p => JSON.stringify(path.join(ROOT, p));
  fs.writeFileSync(
    entry,
    [
      `export { ClaudeProposer } from ${src('src/engine/proposers/claude/proposer.ts')};`,
      `export { costOf, cacheHitRate } from ${src('src/core/config/pricing.ts')};`,
      `export { MessagesApiServer } from ${src('test/stand-ins/messages-api.ts')};`,
      `export { researchHistory } from ${src('test/stand-ins/research-history.ts')};`,
      `export { systemBlocks, userContent } from ${src('src/engine/proposers/claude/prompt.ts')};`,
      `export { toolDefinitions } from ${src('src/engine/proposers/claude/tool-defs.ts')};`,
    ].join('\n'),
  );
  const out = path.join(dir, 'entry.cjs');
  await build({
    entryPoints: [entry],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    logLevel: 'warning',
  });
  return createRequire(import.meta.url)(out);
}

/** A workspace with tiny-cpu's train.py and prepare.py (the proposer reads the read-only file's constants). */
function workspace() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bench-replay-ws-'));
  for (const f of ['train.py', 'prepare.py'])
    fs.copyFileSync(path.join(ROOT, 'templates', 'tiny-cpu', f), path.join(dir, f));
  return dir;
}

/** A recorded reply's thinking, as long as a summarised thinking block of a high-effort turn (~1,500 tokens). */
function thinking(k, what) {
  const line = `Proposal ${k}: ${what}. The history's lines show steps per budget against the metric; the tally says which constants are spent. `;
  return line.repeat(Math.ceil(6000 / line.length)).slice(0, 6000);
}

function replies(k, train) {
  const [name, value, description, lesson] = SESSION[k];
  const line = train.split('\n').find(l => l.startsWith(`${name} =`));
  const newLine = line.replace(/=\s*[^#\s]+/, `= ${value}`);
  const at = train.split('\n').indexOf(line) + 1;
  return [
    {
      type: 'message',
      content: [
        { type: 'thinking', thinking: thinking(k, `look at ${name}`) },
        {
          type: 'tool_use',
          name: 'str_replace_based_edit_tool',
          input: { command: 'view', path: 'train.py', view_range: [at - 3, at + 3] },
        },
      ],
    },
    {
      type: 'message',
      content: [
        { type: 'thinking', thinking: thinking(k, `change ${name} to ${value}`) },
        {
          type: 'tool_use',
          name: 'str_replace_based_edit_tool',
          input: { command: 'str_replace', path: 'train.py', old_str: line, new_str: newLine },
        },
        // The research notes (every 25 experiments): refused when not due, then finish goes through.
        {
          type: 'tool_use',
          name: 'write_notes',
          input: {
            findings: `${lesson}.`,
            dead_ends: `changing ${name} away from ${value} did not help before.`,
            open_hypotheses: `${description}, then its neighbours.`,
          },
        },
        {
          type: 'tool_use',
          name: 'finish_experiment',
          input: { description, rationale: `${lesson}; so ${description}.`, expected_delta: -0.004, lesson },
        },
      ],
    },
  ];
}

/** A one-hunk diff of the lines that differ (the session changes one line a proposal). */
function diffOf(before, after) {
  const a = before.split('\n');
  const b = after.split('\n');
  const i = a.findIndex((l, j) => l !== b[j]);
  return `--- a/train.py\n+++ b/train.py\n@@ -${i + 1},1 +${i + 1},1 @@\n-${a[i]}\n+${b[i]}\n`;
}

const RUN = {
  budgetS: 300,
  timeoutS: 600,
  editable: ['train.py'],
  readonly: ['prepare.py'],
  executor: 'kernel',
  machine: null,
  workers: 1,
  experimentsLeft: null,
  deadline: null,
  maxDollars: null,
  spentUsd: 0,
};

async function replay(m, size, shortOnly) {
  let now = Date.parse('2026-12-01T00:00:00Z');
  const server = await m.MessagesApiServer.start({ now: () => now, minCacheTokens: 1024 });
  const dir = workspace();
  const logs = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bench-replay-logs-'));
  // With the research notes a run writes every 25 experiments (not due at the start of the session).
  const history = m.researchHistory(size, { gapS: GAP_S, logDir: logs, notes: true });
  // 5-minute entries only: a budget whose proposals would come sooner than they expire.
  const run = shortOnly ? { ...RUN, budgetS: 60 } : RUN;
  if (shortOnly) for (const r of history) r.ts = new Date(0).toISOString();
  // A failed request is a failed replay, not an outage to wait out.
  const proposer = new m.ClaudeProposer({
    apiKey: server.apiKey,
    baseURL: server.url,
    python: PYTHON,
    model: MODEL,
    maxRetries: 0,
    onNote: text => {
      throw new Error(`replay failed: ${text}`);
    },
  });
  let train = fs.readFileSync(path.join(dir, 'train.py'), 'utf8');
  const rows = [];
  try {
    for (let k = 0; k < SESSION.length; k++) {
      server.enqueue(...replies(k, train));
      const ctx = {
        workdir: dir,
        files: { 'train.py': train },
        history,
        program: 'Lower val_bpb.',
        metric: 'val_bpb',
        direction: 'lower',
        seed: 0,
        run,
      };
      const p = await proposer.propose(ctx).catch(e => {
        const last = server.requests.at(-1)?.body?.messages?.at(-1)?.content;
        throw new Error(
          `proposal ${k} after ${size} experiments: ${e.message}; the last tool results: ${JSON.stringify(last)?.slice(0, 600)}`,
        );
      });
      const u = p.usage;
      const prompt = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
      rows.push({
        prompt,
        // One request's prompt: what the model reads each turn (the proposal's turns share it).
        perRequest: prompt / Math.max(1, p.meta.turns),
        read: u.cache_read_input_tokens,
        write: u.cache_creation_input_tokens,
        hit: m.cacheHitRate(u),
        usd: p.cost_usd,
      });
      // The proposal lands as the history's next record; every tenth is kept and becomes the files.
      const n = history.length;
      const kept = k % 10 === 9;
      const next = m.researchHistory(n + 1, { gapS: GAP_S })[n];
      history.push({
        ...next,
        ts: shortOnly
          ? new Date(0).toISOString()
          : new Date(Date.parse(history.at(-1).ts) + GAP_S * 1000).toISOString(),
        status: kept ? 'keep' : 'discard',
        diff: diffOf(train, p.files['train.py']),
        description: p.description,
        rationale: p.rationale,
        proposal_meta: p.meta,
      });
      if (kept) train = p.files['train.py'];
      now += GAP_S * 1000;
      if (VERBOSE)
        console.log(
          `  ${shortOnly ? '5m' : 'ttl'} @${size} #${n}: prompt ${prompt} read ${u.cache_read_input_tokens} write ${u.cache_creation_input_tokens} hit ${(100 * rows.at(-1).hit).toFixed(0)}% $${p.cost_usd.toFixed(4)}`,
        );
    }
  } finally {
    await server.close();
  }
  const mean = key => rows.reduce((s, r) => s + r[key], 0) / rows.length;
  return {
    prompt: mean('prompt'),
    perRequest: mean('perRequest'),
    read: mean('read'),
    write: mean('write'),
    hit: mean('hit'),
    usd: mean('usd'),
  };
}

/** The parts of a rendered first-turn prompt and their tokens (≈ 4 characters a token), the moving part by section. */
function parts(m, size) {
  const dir = workspace();
  const logs = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bench-replay-logs-'));
  const ctx = {
    workdir: dir,
    files: { 'train.py': fs.readFileSync(path.join(dir, 'train.py'), 'utf8') },
    history: m.researchHistory(size, { gapS: GAP_S, logDir: logs, notes: true }),
    program: fs.readFileSync(path.join(ROOT, 'templates', 'tiny-cpu', 'program.md'), 'utf8'),
    metric: 'val_bpb',
    direction: 'lower',
    seed: 0,
    run: RUN,
    noise: { noiseRuns: 3, keepSigma: 2, confirmRuns: 2, sigma: 0.004, df: 10, bestRuns: 3 },
  };
  const tok = text => Math.ceil(text.length / 4);
  const [rules, facts] = m.systemBlocks(ctx, '1h');
  const user = m.userContent(ctx, { fix: null, logTail: null, ttl: '1h' });
  const moving = user.at(-1).text;
  const files = user.at(-2);
  const named = text => text.split('\n')[0].replace(/^#+ /, '').slice(0, 48);
  const rows = [
    ['tools', tok(JSON.stringify(m.toolDefinitions()))],
    ['system: rules', tok(rules.text)],
    ['system: run facts, read-only files', tok(facts.text)],
  ];
  const folds = user.filter(b => /^## #\d+–#\d+ folded/.test(b.text));
  const chunks = user.filter(b => /^#\d+ /.test(b.text));
  rows.push([`memory: ${folds.length} folded block(s)`, folds.reduce((n, b) => n + tok(b.text), 0)]);
  rows.push([`memory: ${chunks.length} full chunk(s) of lines`, chunks.reduce((n, b) => n + tok(b.text), 0)]);
  for (const b of user.slice(0, -2))
    if (!folds.includes(b) && !chunks.includes(b)) rows.push([named(b.text), tok(b.text)]);
  rows.push(['editable files', tok(files.text)]);
  // The moving part, by its sections (`# ` and `## ` headings).
  for (const sec of moving.split(/\n\n(?=#{1,2} )/)) rows.push([`moving: ${named(sec)}`, tok(sec)]);
  const total = rows.reduce((n, r) => n + r[1], 0);
  console.log(`\nprompt parts after ${size} experiments (≈ chars/4): ${total} tokens`);
  for (const [name, t] of rows) console.log(`  ${String(t).padStart(7)}  ${name}`);
  return total;
}

const m = await load();
if (process.argv.includes('--parts')) {
  for (const size of [50, 700, 1400]) parts(m, size);
  process.exit(0);
}
const results = {};
console.log(
  `bench/claude-replay: ${SESSION.length} recorded proposals after 50, 700 and 1,400 experiments, ${MODEL}, ${GAP_S} s apart`,
);
console.log('history  cache        prompt tok/proposal  read      write     hit    $/proposal');
for (const size of [50, 700, 1400]) {
  for (const shortOnly of size === 1400 ? [false] : [true, false]) {
    const r = await replay(m, size, shortOnly);
    if (!shortOnly) results[size] = r;
    console.log(
      `${String(size).padStart(7)}  ${(shortOnly ? '5 min only' : 'chosen').padEnd(11)}  ${Math.round(r.prompt).toString().padStart(19)}  ${Math.round(r.read).toString().padStart(8)}  ${Math.round(r.write).toString().padStart(8)}  ${(100 * r.hit).toFixed(1).padStart(5)}%  ${r.usd.toFixed(4)}`,
    );
  }
}
console.log(`usd_per_proposal_50: ${results[50].usd.toFixed(4)}`);
console.log(`usd_per_proposal_1400: ${results[1400].usd.toFixed(4)}`);
console.log(`tokens_per_prompt_700: ${Math.round(results[700].perRequest)}`);
console.log(`tokens_per_prompt_1400: ${Math.round(results[1400].perRequest)}`);
console.log(`cache_hit_rate_700: ${results[700].hit.toFixed(3)}`);
console.log(`usd_per_proposal_700: ${results[700].usd.toFixed(4)}`);
