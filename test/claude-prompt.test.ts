/** What a claude proposal request says, and that it remembers every experiment cheaply over a long run. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ExperimentRecord } from '../src/core/journal/journal';
import { PRICES } from '../src/core/config/pricing';
import { CHUNK, FOLD, RECENT_FULL, WINDOW, foldedCount } from '../src/engine/proposers/claude/history';
import { fixOffer, readLogTail, systemBlocks, systemText, userContent } from '../src/engine/proposers/claude/prompt';
import { judge } from '../src/core/rule/judge';
import { toolDefinitions } from '../src/engine/proposers/claude/tool-defs';
import { machineWords, runFacts } from '../src/engine/proposers/run-facts';
import type { ProposalContext, RunFacts } from '../src/engine/proposers/types';
import { history, record } from './helpers/records';
import { researchHistory } from './stand-ins/research-history';

const TRAIN = 'LEARNING_RATE = 0.001\nN_LAYER = 4\nprint("---")\n';
const TEMPLATE = path.join(__dirname, '..', 'templates', 'tiny-cpu');
let dir: string;
let logs: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-prompt-'));
  fs.copyFileSync(path.join(TEMPLATE, 'prepare.py'), path.join(dir, 'prepare.py'));
  logs = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-prompt-logs-'));
});

const RUN: RunFacts = {
  budgetS: 60,
  timeoutS: 120,
  editable: ['train.py'],
  readonly: ['prepare.py'],
  executor: 'subprocess',
  machine: '2 CPU cores, 7 GB of memory; no NVIDIA GPU found (nvidia-smi lists none)',
  workers: 1,
  experimentsLeft: 37,
  deadline: null,
  maxDollars: 10,
  spentUsd: 1.25,
};
const NOISE = { noiseRuns: 3, keepSigma: 2, confirmRuns: 2, sigma: 0.004, df: 10, bestRuns: 3 };

function ctx(h: ExperimentRecord[], over: Partial<ProposalContext> = {}): ProposalContext {
  return {
    workdir: dir,
    files: { 'train.py': TRAIN },
    history: h,
    program: 'Make val_bpb lower.\nNever touch the tokenizer.',
    metric: 'val_bpb',
    direction: 'lower',
    seed: 0,
    ...over,
  };
}
const blocksOf = (c: ProposalContext) => userContent(c, { fix: fixOffer(c.history), logTail: null, ttl: '1h' });
const textOf = (c: ProposalContext) => [...systemBlocks(c), ...blocksOf(c)].map(b => b.text).join('\n');

describe('the claude prompt', () => {
  it('gives the engine role and the run facts as the system, and program.md verbatim after the history', () => {
    const c = ctx(history(30), { run: RUN });
    const [rules, facts] = systemBlocks(c, '1h');
    expect(rules.text).toMatch(/^You are the researcher/);
    expect(rules.text).toMatch(/the engine runs, commits and judges/);
    expect(rules.text).toMatch(/exactly one experiment/);
    expect(rules.text).toMatch(/view also reads the read-only files/);
    expect(rules.text).not.toContain('Never touch the tokenizer');
    expect(rules.cache_control).toBeUndefined();
    expect(facts.text).toMatch(/^# The run\n/);
    expect(facts.cache_control).toEqual({ type: 'ephemeral', ttl: '1h' });
    // program.md comes after the history's last full chunk (marked) and before the files.
    const blocks = blocksOf(c);
    const at = blocks.findIndex(b => b.text.includes('Never touch the tokenizer.'));
    expect(blocks[at].text).toBe(
      "# The researcher's instructions (program.md)\n\nMake val_bpb lower.\nNever touch the tokenizer.",
    );
    expect(blocks[at - 1].cache_control).toBeDefined();
    expect(blocks[at - 1].text).toMatch(/^#0 keep /);
    expect(blocks.at(-2)!.text).toMatch(/^# The editable files/);
  });

  it('states the keep rule truthfully, and σ with the floor a gain must clear once the noise is measured', () => {
    const noise = { ...NOISE, sigma: 0.01, df: 4 };
    const c = ctx(history(10), { noise });
    expect(systemText(c)).toMatch(
      /keeps a commit only when the mean of its runs beats the best's mean by more than\s+2 standard errors of the difference, on at least two runs: a result no better than the best is discarded after one run,\s+a promising one is re-run \(up to 2 more times\)/,
    );
    const text = blocksOf(c)
      .map(b => b.text)
      .join('\n');
    // 2 × 0.01 × √(1/2 + 1/3) = 0.0183; one run 0.0231; three runs 0.0163.
    expect(text).toContain(
      "Noise: σ = 0.0100 per run today (4 degrees of freedom); every σ-multiple in this prompt uses it.\nA kept change must beat the best's mean (3 runs) by more than the floor, 2σ of the difference, as the judge's reasons state it:\n0.0183 for 2 runs vs 3 (what a keep needs), 0.0231 for 1 run vs 3, 0.0163 for 3 runs vs 3.",
    );
    const strict = ctx(history(10), { noise: { ...noise, noiseRuns: 1, sigma: null } });
    expect(systemText(strict)).toMatch(/keeps the commit if it beats the best so far/);
    expect(textOf(strict)).not.toContain('Noise:');
  });

  it('states the run facts: budget, machine, what is left, the read-only files and their constants', () => {
    const h = researchHistory(12, { logDir: logs });
    const c = ctx(h, { run: RUN, noise: NOISE });
    const head = systemBlocks(c)[1];
    const rest = blocksOf(c);
    expect(head.text).toContain(
      '- Each experiment trains for 60 s of wall-clock time (AUTORESEARCH_BUDGET_S); a run past 120 s is killed and counts as a crash.',
    );
    expect(head.text).toContain("- Training runs on the engine's machine: 2 CPU cores, 7 GB of memory;");
    expect(head.text).toContain("- The baseline's log says: `device cpu | params 1.21M | layers 6");
    expect(head.text).toContain('Read-only (you may view them, never edit them): prepare.py.');
    // prepare.py whole, with what the engine's budget does to its TIME_BUDGET said beside it.
    expect(head.text).toContain(
      '## prepare.py (read-only)\nNote: the engine sets AUTORESEARCH_BUDGET_S to 60 s for every run, and this file reads it',
    );
    expect(head.text).toContain(fs.readFileSync(path.join(TEMPLATE, 'prepare.py'), 'utf8').trimEnd());
    // The files come after the history chunks, which never change: a keep rewrites only them and what follows.
    expect(rest.at(-2)!.text).toBe(
      '# The editable files at the best commit\n\n## train.py\n```python\n' + TRAIN + '\n```',
    );
    const tail = rest.at(-1)!.text;
    expect(tail).toContain('Left: 37 experiment(s) (--max-experiments), $8.75 of $10.00 (--max-dollars; $1.25 spent).');
    // A kernel's machine is not the engine's: nothing is claimed about it.
    const kernel = systemBlocks(ctx(h, { run: { ...RUN, executor: 'kernel', machine: null } }))[1].text;
    expect(kernel).toContain('Training runs in a Jupyter kernel, which may be on another machine');
    expect(kernel).not.toContain('CPU cores');
  });

  it("builds the run facts from the config and the loop's counters; a kernel's machine is not described", () => {
    const config = {
      metric: 'val_bpb',
      direction: 'lower' as const,
      budget_s: 300,
      timeout_s: 600,
      run: 'python train.py',
      editable: ['train.py'],
      readonly: ['prepare.py'],
    };
    const base = { config, workers: 1, proposed: 7, deadline: Infinity, spentUsd: 0.5 };
    expect(runFacts({ ...base, executor: 'kernel', maxExperiments: 10, maxDollars: 2 })).toEqual({
      budgetS: 300,
      timeoutS: 600,
      editable: ['train.py'],
      readonly: ['prepare.py'],
      executor: 'kernel',
      machine: null,
      workers: 1,
      experimentsLeft: 3,
      deadline: null,
      maxDollars: 2,
      spentUsd: 0.5,
    });
    expect(runFacts({ ...base, executor: 'subprocess' }).machine).toMatch(/^\d+ CPU cores, \d+ GB of memory; /);
    expect(machineWords({ CUDA_VISIBLE_DEVICES: '1' }, () => ['NVIDIA H100 80GB HBM3, 81559 MiB'])).toMatch(
      /; GPUs: NVIDIA H100 80GB HBM3 \(81559 MiB\), CUDA_VISIBLE_DEVICES=1$/,
    );
    expect(machineWords({}, () => null)).toMatch(/; no NVIDIA GPU found \(nvidia-smi lists none\)$/);
  });

  it("gives every experiment one line with its diagnostics, its delta and each run's metric, no σ, the prediction and the lesson", () => {
    const h = researchHistory(30, { logDir: logs });
    const text = blocksOf(ctx(h, { run: RUN, noise: NOISE }))
      .map(b => b.text)
      .join('\n');
    const r = h[9];
    expect(r.status).toBe('discard');
    expect(text).toContain(
      `#9 discard ${r.metric!.toFixed(6)} (${r.delta! >= 0 ? '+' : '−'}${Math.abs(r.delta!).toFixed(6)}; expected −`,
    );
    expect(text).toMatch(
      new RegExp(
        `#9 discard [^\\n]* · steps ${r.summary.num_steps} · ${r.summary.num_params_M}M params · ${r.summary.total_tokens_M}M tok · 60\\.1 s · peak 0\\.\\d GB · loss 1\\.\\d{4} · [\\d.]+ ms/step · change `,
      ),
    );
    // A line never carries a σ: the σ of its moment may be far from today's.
    for (const line of text.split('\n').filter(l => /^#\d+ (keep|discard|crash) /.test(l)))
      expect(line).not.toMatch(/\dσ/);
    expect(text).toContain(`— lesson on #7: #7 says`);
    const crash = h.find(x => x.status === 'crash')!;
    expect(text).toContain(`#${crash.n} crash — · ${crash.description.slice(0, 40)}`);
    expect(text).toContain('[exited with code 1: RuntimeError: shape mismatch in attention]');
    expect(text).toContain(`## The last ${RECENT_FULL} experiment(s) in full`);
    expect(text).toMatch(/Diagnostics: steps \d+ · /);
    // A multi-run experiment shows each run's metric: one bad draw among three is visible.
    const runs = [4.85, 6.46, 4.87].map((metric, i) => ({
      k: i + 1,
      seed: 4000 + i,
      metric,
      run_s: 60,
      log_path: null,
    }));
    const multi = record(4, { metric: 5.393333, delta: 0.1, runs });
    expect(blocksOf(ctx([record(0), multi])).at(-1)!.text).toContain(
      '#4 discard 5.393333 mean of 3 (+0.100000) · runs 4.85 / 6.46 / 4.87 ·',
    );
  });

  it('keeps each full chunk of lines identical as the run goes on, the last one marked for the cache', () => {
    const long = researchHistory(3 * CHUNK + 10);
    const seen = new Map<number, Set<string>>();
    const h1 = { type: 'ephemeral', ttl: '1h' };
    for (let len = 2 * CHUNK; len <= 3 * CHUNK + 10; len++) {
      const blocks = blocksOf(ctx(long.slice(0, len)));
      const full = blocks.filter(b => /^#\d+ /.test(b.text));
      expect(full).toHaveLength(Math.floor(len / CHUNK));
      expect(blocks.indexOf(full[0])).toBe(1);
      full.forEach((b, i) => seen.set(i, (seen.get(i) ?? new Set()).add(b.text)));
      // Breakpoints: the last full chunk and the files; not the heading, program.md, the keeps,
      // nor the moving tail (the proposer marks the newest block); with the system's, four at most.
      expect(blocks[0].cache_control).toBeUndefined();
      expect(full.at(-1)!.cache_control).toEqual(h1);
      expect(full.slice(0, -1).every(b => b.cache_control === undefined)).toBe(true);
      expect(blocks.filter(b => b.cache_control)).toHaveLength(2);
      expect(blocks.at(-2)!.cache_control).toEqual(h1);
      expect(blocks.at(-1)!.cache_control).toBeUndefined();
      expect(
        blocks.at(-1)!.text.startsWith('# The latest experiments, continuing the list above\n') || len % CHUNK === 0,
      ).toBe(true);
    }
    for (const texts of seen.values()) expect(texts.size).toBe(1);
    expect(seen.get(0)!.values().next().value).toMatch(/^#0 keep .*\n#1 /);
    // Before a chunk is full, only the files (and the system) carry a breakpoint.
    expect(blocksOf(ctx(long.slice(0, 3))).filter(b => b.cache_control)).toHaveLength(1);
  });

  it('folds the oldest experiments 200 at a time past 300 lines; the folded blocks never change once written', () => {
    expect([299, 499, 500, 699, 700, 1400].map(foldedCount)).toEqual([0, 0, 200, 200, 400, 1000]);
    const long = researchHistory(760);
    const folds = new Map<number, Set<string>>();
    for (const len of [499, 500, 501, 560, 699, 700, 701, 760]) {
      const blocks = blocksOf(ctx(long.slice(0, len)));
      const folded = blocks.filter(b => /^## #\d+–#\d+ folded/.test(b.text));
      expect(folded).toHaveLength(foldedCount(len) / FOLD);
      folded.forEach((b, i) => folds.set(i, (folds.get(i) ?? new Set()).add(b.text)));
      // The folds come first, then one line per experiment from the first one not folded.
      const lines = blocks.flatMap(b => b.text.split('\n')).filter(l => /^#\d+ /.test(l));
      expect(lines[0]).toMatch(new RegExp(`^#${foldedCount(len)} `));
      expect(lines).toHaveLength(len - foldedCount(len));
      expect(lines.length).toBeGreaterThanOrEqual(Math.min(len, WINDOW));
    }
    for (const texts of folds.values()) expect(texts.size).toBe(1);
    const first = [...folds.get(0)!][0];
    const ran = long.slice(0, FOLD).filter(r => ['keep', 'discard', 'crash'].includes(r.status));
    expect(first).toMatch(
      new RegExp(
        `^## #0–#199 folded: 200 experiments, ${ran.length} ran \\(\\d+ keep, \\d+ discard, \\d+ crash\\), ${200 - ran.length} did not run\n- `,
      ),
    );
    expect(first).toMatch(
      /\n- LEARNING_RATE: \d+ tries \(\d+ keep(, \d+ crash)?\); best −0\.\d+ at #\d+, worst \+0\.\d+ at #\d+; values /,
    );
  });

  it('holds 1,400 experiments in under 60k tokens, nearly all of it before the last breakpoint', () => {
    const h = researchHistory(1400, { logDir: logs });
    // The whole request as tiny-cpu's run sends it: the tools, the system blocks, its train.py and the history.
    const train = fs.readFileSync(path.join(TEMPLATE, 'train.py'), 'utf8');
    const c = ctx(h, { run: RUN, noise: NOISE, files: { 'train.py': train } });
    const blocks = blocksOf(c);
    const text = JSON.stringify(toolDefinitions()) + textOf(c);
    // Every experiment is in a line or in a folded range; every keep is listed with its description.
    const folded = foldedCount(h.length);
    expect(folded).toBe(1000);
    for (let from = 0; from < folded; from += FOLD) expect(text).toContain(`## #${from}–#${from + FOLD - 1} folded:`);
    for (const r of h.slice(folded)) expect(text).toContain(`#${r.n} ${r.status} `);
    for (const r of h.filter(x => x.status === 'keep' && x.n > 0))
      expect(text).toContain(
        `- #${r.n} ${r.delta! < 0 ? '−' : '+'}${Math.abs(r.delta!).toFixed(6)} (1 run vs 3): ${r.description.slice(0, 60)}`,
      );
    // ≈ 4 characters a token: about 52k, the figure docs/proposers.md states (within 5%).
    const tokens = text.length / 4;
    expect(tokens).toBeGreaterThan(49_400);
    expect(tokens).toBeLessThan(54_600);
    expect(tokens).toBeLessThan(60_000);
    expect(PRICES['claude-sonnet-5-5'].cache_read).toBe(0.1);
    // What is re-sent uncached each proposal: the chunk still filling and the moving part.
    expect(blocks.at(-1)!.text.length / 4).toBeLessThan(6000);
    expect(blocks.at(-1)!.text.length / text.length).toBeLessThan(0.12);
  });

  it('tallies the directions tried, lists the latest lessons and scores the predictions', () => {
    const h = [
      record(0),
      record(1, {
        diff: '-LEARNING_RATE = 0.001\n+LEARNING_RATE = 0.002\n',
        delta: -0.01,
        status: 'keep',
        proposal_meta: { expected_delta: -0.005 },
      }),
      record(2, {
        diff: '-LEARNING_RATE = 0.002\n+LEARNING_RATE = 0.004\n',
        delta: 0.02,
        proposal_meta: { expected_delta: -0.003, lesson: { about: 1, text: 'a higher rate helps here' } },
      }),
      record(3, {
        diff: '+        x = rotary(x)\n',
        delta: 0.001,
        proposal_meta: { direction: 'Rotary embeddings', lesson: { about: 2, text: 'too high diverges late' } },
      }),
      record(4, { status: 'crash', diff: '-N_LAYER = 4\n+N_LAYER = 40\n' }),
    ];
    const text = blocksOf(ctx(h))
      .map(b => b.text)
      .join('\n');
    expect(text).toContain(
      '- LEARNING_RATE: 2 tries (1 keep); best −0.010000 at #1, worst +0.020000 at #2; values 0.002, 0.004',
    );
    expect(text).toContain('- rotary embeddings: 1 try; best +0.001000 at #3');
    expect(text).toContain('- N_LAYER: 1 try (1 crash); values 40');
    expect(text).toContain(
      '## Your latest lessons\n- on #1 (written with #2): a higher rate helps here\n- on #2 (written with #3): too high diverges late',
    );
    expect(text).toContain('Your predictions: 1 of 2 had the sign right; the median miss is 0.023000.');
    expect(text).toMatch(
      /call finish_experiment with description, rationale, expected_delta \(.*\) and lesson \(what #4 taught\)/,
    );
  });

  it('tallies only experiments that ran: not rejected duplicates, abandoned or interrupted proposals', () => {
    const lr = (to: string) => `-LEARNING_RATE = 0.001\n+LEARNING_RATE = ${to}\n`;
    const h = [
      record(0),
      record(1, { diff: lr('0.002'), delta: -0.01, status: 'keep' }),
      record(2, { diff: lr('0.004'), delta: 0.02 }),
      record(3, { diff: lr('0.002'), status: 'rejected', metric: null, delta: null, same_as: 1 }),
      record(4, {
        diff: lr('0.008'),
        status: 'rejected',
        metric: null,
        delta: null,
        reason: 'proposal abandoned: 3 failed edits',
      }),
      record(5, { diff: lr('0.016'), status: 'interrupted', metric: null, delta: null }),
      record(6, { diff: lr('0.003'), status: 'crash' }),
    ];
    const text = blocksOf(ctx(h)).at(-1)!.text;
    expect(text).toContain(
      '- LEARNING_RATE: 3 tries (1 keep, 1 crash); best −0.010000 at #1, worst +0.020000 at #2; values 0.002, 0.004, 0.003',
    );
  });

  it('states one floor: the number the judge gives in its reason for the same runs', () => {
    const noise = { ...NOISE, sigma: 0.01, bestRuns: 3 };
    const text = blocksOf(ctx(history(10), { noise })).at(-1)!.text;
    const best = [1.01, 0.99, 1.0];
    for (const candidate of [[0.999], [0.999, 0.998], [0.999, 0.998, 0.999]]) {
      const d = judge({
        candidate,
        best,
        sigma: 0.01,
        rule: { direction: 'lower', noiseRuns: 3, keepSigma: 2, confirmRuns: 2 },
      });
      const [, floor, runs] = /floor (\d\.\d+) at 2σ, (\d+ runs? vs 3)\)$/.exec(d.reason)!;
      expect(text).toContain(`${floor} for ${runs}`);
    }
  });

  it("lists every keep with why (cached with the files), and the keeps' and near-misses' σ-multiples in today's σ", () => {
    const runs = (...m: number[]) => m.map((metric, i) => ({ k: i + 1, seed: i, metric, run_s: 60, log_path: null }));
    const verdict = {
      sigma: 0.001,
      se: 0.001,
      floor: 0.003,
      keep_sigma: 2,
      best_runs: 3,
      strict: false,
      confirmed: true,
    };
    const h = [
      record(0),
      record(1, {
        status: 'keep',
        delta: -0.02,
        runs: runs(0.98, 0.98),
        verdict,
        rationale: 'the loss still falls: undertrained',
      }),
      record(2, { status: 'keep', delta: -0.004, runs: runs(0.976, 0.976), verdict, description: 'a lucky keep' }),
      record(3, { delta: -0.003, runs: runs(0.973, 0.975, 0.973), verdict, description: 'nearly helped' }),
      record(4, { delta: -0.001, verdict, description: 'barely better' }),
      record(5, { delta: 0.01, verdict }),
    ];
    const blocks = blocksOf(ctx(h, { noise: { ...NOISE, sigma: 0.004 } }));
    const keeps = blocks.at(-3)!;
    expect(keeps.text).toBe(
      "# Every keep, the oldest first: delta vs the best before it, runs vs the best's, what it changed — why it was tried\n" +
        `- #1 −0.020000 (2 runs vs 3): ${h[1].description} — the loss still falls: undertrained\n` +
        `- #2 −0.004000 (2 runs vs 3): a lucky keep — ${h[2].rationale}`,
    );
    expect(keeps.cache_control).toBeUndefined();
    const moving = blocks.at(-1)!.text;
    // σ is 0.004 today (0.001 when judged): #2 no longer clears 2σ. se = 0.004 × √(1/2 + 1/3) = 0.0037.
    expect(moving).toContain(
      "## The keeps in today's σ (0.0040): the standard error of each delta above, its σ-multiple; 1 of 2 would not clear 2σ today",
    );
    expect(moving).toContain('#1 ±0.0037 5.5σ · #2 ±0.0037 1.1σ weak');
    expect(moving).toMatch(
      /## Near-misses[^\n]*\n- #3 −0\.003000 \(3 runs vs 3, 0\.9σ today\): nearly helped\n- #4 −0\.001000 \(1 run vs 3, 0\.2σ today\): barely better$/m,
    );
  });

  it('offers to fix a crash, at most twice per idea', () => {
    const base = history(5);
    expect(fixOffer(base)).toBeNull();
    const crashed = [...base, record(5, { status: 'crash' })];
    expect(fixOffer(crashed)).toMatchObject({ root: 5, attempt: 1, record: { n: 5 } });
    const fix1 = [...crashed, record(6, { status: 'crash', proposal_meta: { model: 'm', fix_of: 5 } })];
    expect(fixOffer(fix1)).toMatchObject({ root: 5, attempt: 2, record: { n: 6 } });
    const fix2 = [...fix1, record(7, { status: 'crash', proposal_meta: { model: 'm', fix_of: 5 } })];
    expect(fixOffer(fix2)).toBeNull();
    const text = userContent(ctx(crashed), { fix: fixOffer(crashed), logTail: 'Traceback\nRuntimeError: boom' }).at(
      -1,
    )!.text;
    expect(text).toContain('## The log tail of #5, which crashed\n```\nTraceback\nRuntimeError: boom\n```');
    expect(text).toContain('You may fix experiment #5 instead of trying a new idea: call fix_crashed_experiment');
    expect(text).toContain('fix attempt 1 of 2 for the idea of #5');
  });

  it('reads the tail of a log, from a whole line', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-log-')), 'x.log');
    fs.writeFileSync(
      file,
      Array.from({ length: 1000 }, (_, i) => `step ${i} | loss 3.0`).join('\n') + '\nRuntimeError: boom\n',
    );
    const tail = readLogTail(file, 200) as string;
    expect(tail.startsWith('…\nstep ')).toBe(true);
    expect(tail.endsWith('RuntimeError: boom\n')).toBe(true);
    expect(tail.length).toBeLessThanOrEqual(202);
    expect(readLogTail('/nonexistent/file')).toBeNull();
    expect(readLogTail(null)).toBeNull();
  });
});
