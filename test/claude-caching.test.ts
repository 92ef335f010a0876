/**
 * Caching that pays across proposals: the stable breakpoints get the 1-hour lifetime when
 * proposals come further apart than a 5-minute entry lives, priced at the 1-hour rate; the
 * ledger shows the share of each proposal's prompt read from the cache.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { experimentBundle } from '../src/core/views/bundle';
import type { ExperimentRecord, Usage } from '../src/core/journal/journal';
import { parseProgram } from '../src/core/config/program';
import { addUsage, cacheHitRate, costOf } from '../src/core/config/pricing';
import { proposalInterval, stableTtl } from '../src/engine/proposers/claude/cache';
import { ClaudeProposer } from '../src/engine/proposers/claude/proposer';
import type { ProposalContext, RunFacts } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { record } from './helpers/records';
import { makeWorkspace } from './helpers/workspace';
import { MessagesApiServer } from './stand-ins/messages-api';
import { researchHistory } from './stand-ins/research-history';
import { CHUNK } from '../src/engine/proposers/claude/history';

const usage = (input: number, output: number, write = 0, read = 0, hour?: number): Usage => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: write,
  cache_read_input_tokens: read,
  ...(hour !== undefined ? { cache_creation_1h_input_tokens: hour } : {}),
});
const RUN: RunFacts = {
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
let server: MessagesApiServer | null = null;
afterEach(() => server?.close());

describe('caching that pays', () => {
  it('chooses the 1-hour lifetime when proposals come further apart than a 5-minute entry lives', () => {
    const spaced = (gapS: number) => researchHistory(8, { gapS });
    expect(proposalInterval({ history: spaced(95) })).toBe(95);
    expect(stableTtl({ history: spaced(95), run: RUN })).toBe('5m');
    expect(stableTtl({ history: spaced(330), run: { ...RUN, budgetS: 60 } })).toBe('1h');
    // Before three gaps are seen: the budget (and what surrounds a run), shared among the workers.
    expect(stableTtl({ history: [], run: RUN })).toBe('1h');
    expect(stableTtl({ history: [], run: { ...RUN, budgetS: 60 } })).toBe('5m');
    expect(stableTtl({ history: [], run: { ...RUN, workers: 2 } })).toBe('5m');
  });

  it('prices 1-hour writes at twice the input rate, and a price row may say otherwise', () => {
    // Sonnet 5.5: $2 input, $2.50 5-minute write, so $4 for a 1-hour write, per MTok.
    expect(costOf('claude-sonnet-5-5', usage(0, 0, 1_000_000, 0, 400_000))).toBeCloseTo(0.6 * 2.5 + 0.4 * 4, 10);
    const row = { input: 1, output: 1, cache_write: 1, cache_read: 1, cache_write_1h: 3 };
    expect(costOf('m', usage(0, 0, 1_000_000, 0, 1_000_000), { m: row })).toBeCloseTo(3, 10);
    expect(
      parseProgram('---\nprices:\n  m: {input: 1, output: 1, cache_write: 1, cache_read: 1, cache_write_1h: 3}\n---\n')
        .frontMatter.prices,
    ).toEqual({ m: row });
    expect(addUsage(usage(1, 1, 10, 0, 4), usage(1, 1, 10, 0))).toEqual(usage(2, 2, 20, 0, 4));
    expect(cacheHitRate(usage(10, 5, 10, 80))).toBeCloseTo(0.8, 10);
    expect(cacheHitRate(usage(0, 0))).toBeNull();
  });

  it('estimates the first proposal (for --max-dollars) with its cache writes at the lifetime it will ask for', () => {
    const proposer = new ClaudeProposer({ apiKey: 'sk-ant-test-key', python: resolvePython() });
    const ctx = (run: RunFacts): ProposalContext => ({
      workdir: makeWorkspace(),
      files: { 'train.py': 'N_LAYER = 4\n' },
      history: [],
      program: 'Lower val_bpb.',
      metric: 'val_bpb',
      direction: 'lower',
      seed: 0,
      run,
    });
    const hour = proposer.estimateNextCost(ctx(RUN));
    // 100 s, not 300: the same prompt to the character, but proposals that come sooner than a 5-minute entry expires.
    const short = proposer.estimateNextCost(ctx({ ...RUN, budgetS: 100 }));
    // The same prompt: 3000 output tokens, written once, read twice; the writes at $4 rather than $2.50 per MTok.
    const prompt = (short - (3000 * 10) / 1e6) / ((2.5 + 2 * 0.1) / 1e6);
    expect(prompt).toBeGreaterThan(2000);
    expect(hour).toBeCloseTo((3000 * 10 + prompt * (4 + 2 * 0.1)) / 1e6, 9);
  });

  it('reads the stable prompt across proposals 330 s apart, where 5-minute entries would all have expired', async () => {
    let now = Date.parse('2026-12-01T00:00:00Z');
    server = await MessagesApiServer.start({ now: () => now, minCacheTokens: 1024 });
    const dir = makeWorkspace();
    const proposer = new ClaudeProposer({
      apiKey: server.apiKey,
      baseURL: server.url,
      python: resolvePython(),
      maxRetries: 0,
    });
    const train = 'LEARNING_RATE = 0.001\nN_LAYER = 4\n' + '# a long train.py\n'.repeat(200);
    const firstTurn = async (h: ExperimentRecord[], run: RunFacts) => {
      server!.enqueue({
        type: 'message',
        content: [
          {
            type: 'tool_use',
            name: 'str_replace_based_edit_tool',
            input: { command: 'str_replace', path: 'train.py', old_str: 'N_LAYER = 4', new_str: 'N_LAYER = 6' },
          },
          // Refused while the notes are not due; when they are, finish_experiment waits for them.
          {
            type: 'tool_use',
            name: 'write_notes',
            input: { findings: 'f', dead_ends: 'd', open_hypotheses: 'h' },
          },
          {
            type: 'tool_use',
            name: 'finish_experiment',
            input: { description: 'deeper', rationale: 'r', expected_delta: -0.01 },
          },
        ],
      });
      const ctx: ProposalContext = {
        workdir: dir,
        files: { 'train.py': train },
        history: h,
        program: 'Lower val_bpb.',
        metric: 'val_bpb',
        direction: 'lower',
        seed: 0,
        run,
      };
      return (await proposer.propose(ctx)).usage!;
    };
    const h = researchHistory(210, { gapS: 330, notes: true });
    const reads: Record<string, number[]> = { '1h': [], '5m': [] };
    for (const [kind, run] of [
      ['1h', RUN],
      // The same spacing with the stable entries forced to 5 minutes: the old behaviour.
      ['5m', { ...RUN, budgetS: 60 }],
    ] as const) {
      for (let i = 0; i < 3; i++) {
        const hist =
          kind === '5m' ? h.slice(0, 200 + i).map(r => ({ ...r, ts: new Date(0).toISOString() })) : h.slice(0, 200 + i);
        const u = await firstTurn(hist, run);
        reads[kind].push(cacheHitRate(u)!);
        if (kind === '1h' && i === 0) expect(u.cache_creation_1h_input_tokens).toBeGreaterThan(1000);
        now += 330_000;
      }
      now += 3 * 3600_000;
    }
    expect(reads['1h'][0]).toBe(0);
    // All but the moving part (~2k of ~20k tokens at 200 experiments, sent once a proposal) is read.
    expect(Math.min(...reads['1h'].slice(1))).toBeGreaterThan(0.88);
    expect(Math.max(...reads['5m'])).toBe(0);
    // Every request had at most four breakpoints, the 1-hour ones first (the stand-in refuses anything else).
    for (const r of server.requests.filter(q => q.path.startsWith('/v1/messages'))) {
      const ttls = JSON.stringify(r.body)
        .match(/"cache_control":\{[^}]*\}/g)!
        .map(m => (m.includes('1h') ? '1h' : '5m'));
      expect(ttls.length).toBeLessThanOrEqual(4);
      expect(ttls.join(',')).toMatch(/^(1h,)*(5m,?)*$/);
    }
  });

  it('leaves the history read from the cache when program.md is edited mid-run, with at most four breakpoints on every turn', async () => {
    let now = Date.parse('2026-12-01T00:00:00Z');
    server = await MessagesApiServer.start({ now: () => now, minCacheTokens: 1024 });
    const dir = makeWorkspace();
    const proposer = new ClaudeProposer({
      apiKey: server.apiKey,
      baseURL: server.url,
      python: resolvePython(),
      maxRetries: 0,
    });
    const train = 'LEARNING_RATE = 0.001\nN_LAYER = 4\n' + '# a long train.py\n'.repeat(200);
    const h = researchHistory(240, { gapS: 330, notes: true });
    const propose = async (hist: ExperimentRecord[], program: string) => {
      // Two turns: a view, then the edit and finish; the moving breakpoint follows the newest block.
      server!.enqueue(
        {
          type: 'message',
          content: [
            { type: 'tool_use', name: 'str_replace_based_edit_tool', input: { command: 'view', path: 'train.py' } },
          ],
        },
        {
          type: 'message',
          content: [
            {
              type: 'tool_use',
              name: 'str_replace_based_edit_tool',
              input: { command: 'str_replace', path: 'train.py', old_str: 'N_LAYER = 4', new_str: 'N_LAYER = 6' },
            },
            {
              type: 'tool_use',
              name: 'finish_experiment',
              input: { description: 'deeper', rationale: 'r', expected_delta: -0.01 },
            },
          ],
        },
      );
      const first = server!.requests.length;
      const p = await proposer.propose({
        workdir: dir,
        files: { 'train.py': train },
        history: hist,
        program,
        metric: 'val_bpb',
        direction: 'lower',
        seed: 0,
        run: RUN,
      });
      now += 330_000;
      return { usage: p.usage!, requests: server!.requests.slice(first) };
    };
    const program = 'Lower val_bpb.\n' + 'Prefer small, well-argued changes.\n'.repeat(40);
    await propose(h.slice(0, 230), program);
    const same = await propose(h.slice(0, 231), program);
    // The researcher edits program.md (the README's mid-run feature) before the next proposal.
    const edited = await propose(h.slice(0, 232), program + 'Now try only the optimizer.\n');
    const firstTurn = (r: { requests: Array<{ body: any }> }) => r.requests[0].body;
    const promptTokens = (u: Usage) => u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
    // What comes before program.md: the tools, the system blocks and the history's 9 full chunks.
    const user = firstTurn(edited).messages[0].content as Array<{ text: string; cache_control?: unknown }>;
    const at = user.findIndex(b => b.text.startsWith("# The researcher's instructions (program.md)"));
    expect(at).toBe(1 + Math.floor(232 / CHUNK));
    expect(user[at - 1].cache_control).toBeDefined();
    expect(user[at].text).toContain('Now try only the optimizer.');
    const before = JSON.stringify([firstTurn(edited).tools, firstTurn(edited).system, user.slice(0, at)]).length / 4;
    // Without the edit the whole stable prefix is read; with it, still everything before program.md.
    expect(same.usage.cache_read_input_tokens).toBeGreaterThan((0.85 * promptTokens(same.usage)) / 2);
    expect(edited.usage.cache_read_input_tokens).toBeGreaterThan(2 * 0.95 * before);
    // What the edit re-sends: program.md, the files and the moving part, a small share of the prompt.
    const turn1 = promptTokens(edited.usage) / 2;
    expect(edited.usage.cache_creation_input_tokens).toBeLessThan(turn1 - 0.95 * before + 200);
    expect(edited.usage.cache_creation_input_tokens).toBeGreaterThan(same.usage.cache_creation_input_tokens);
    for (const r of server.requests.filter(q => q.path.startsWith('/v1/messages'))) {
      const marks = JSON.stringify(r.body).match(/"cache_control":\{[^}]*\}/g) ?? [];
      expect(marks.length).toBeGreaterThanOrEqual(3);
      expect(marks.length).toBeLessThanOrEqual(4);
    }
  });

  it('reads the folded history across proposals and holds 1,400 experiments under 60k prompt tokens', async () => {
    let now = Date.parse('2026-12-01T00:00:00Z');
    server = await MessagesApiServer.start({ now: () => now, minCacheTokens: 1024 });
    const dir = makeWorkspace();
    const proposer = new ClaudeProposer({
      apiKey: server.apiKey,
      baseURL: server.url,
      python: resolvePython(),
      maxRetries: 0,
    });
    const h = researchHistory(1400, { gapS: 330, notes: true });
    const usages: Usage[] = [];
    for (const len of [1299, 1300, 1301, 1400]) {
      server.enqueue({
        type: 'message',
        content: [
          {
            type: 'tool_use',
            name: 'str_replace_based_edit_tool',
            input: { command: 'str_replace', path: 'train.py', old_str: 'N_LAYER = 4', new_str: 'N_LAYER = 6' },
          },
          {
            type: 'tool_use',
            name: 'finish_experiment',
            input: { description: 'deeper', rationale: 'r', expected_delta: -0.01 },
          },
        ],
      });
      const p = await proposer.propose({
        workdir: dir,
        files: { 'train.py': 'N_LAYER = 4\n' },
        history: h.slice(0, len),
        program: 'Lower val_bpb.',
        metric: 'val_bpb',
        direction: 'lower',
        seed: 0,
        run: RUN,
      });
      usages.push(p.usage!);
      now += 330_000;
    }
    const total = (u: Usage) => u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
    for (const u of usages) expect(total(u)).toBeLessThan(60_000);
    // 1,299 → 1,300 experiments folds #800–#999: written once; afterwards the folds and full chunks are read,
    // 99 experiments later too (the history's breakpoint finds the last one within its 20-block lookback).
    expect(usages[1].cache_read_input_tokens).toBeLessThan(0.5 * total(usages[1]));
    expect(cacheHitRate(usages[2])!).toBeGreaterThan(0.9);
    // 99 experiments on, the new lines are written once; the folds and the 12 chunks cached before are read.
    const last = server.requests.at(-1)!.body;
    const cached = JSON.stringify([last.tools, last.system, last.messages[0].content.slice(0, 1 + 5 + 12)]).length / 4;
    expect(usages[3].cache_read_input_tokens).toBeGreaterThan(0.95 * cached);
  });

  it("shows each proposal's cache hit rate in its output", () => {
    const r = record(3, { usage: usage(1000, 500, 4000, 45_000) });
    const b = experimentBundle(r);
    expect(b['text/plain']).toContain('prompt cached 90%');
    expect(b['text/html']).toContain('<th>prompt cached</th>');
    expect(experimentBundle(record(4))['text/plain']).not.toContain('prompt cached');
  });
});
