/** The claude proposer, with the real SDK against the local Messages API stand-in. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Usage } from '../src/core/journal/journal';
import { costOf } from '../src/core/config/pricing';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { DEFAULT_MODEL, type ClaudeOptions } from '../src/engine/proposers/claude/proposer';
import { ProposalAbandoned, type ProposalContext } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { cli, experiments, git, makeWorkspace, standInTrain } from './helpers/workspace';
import { history, record } from './helpers/records';
import { proposalContext, standInProposer } from './helpers/claude';
import { MessagesApiServer, type Turn } from './stand-ins/messages-api';

const KEY = 'sk-ant-api03-SECRETsecret_0123456789abcdef';
const TRAIN = 'import math\nLEARNING_RATE = 0.001\nN_LAYER = 4\nx = 1\nx = 1\nx = 1\nprint("val_bpb:", 1.0)\n';
let server: MessagesApiServer;
let dir: string;

beforeEach(async () => {
  server = await MessagesApiServer.start({ apiKey: KEY });
  dir = makeWorkspace();
});
afterEach(() => server.close());

const call = (name: string, input: unknown) => ({ type: 'tool_use' as const, name, input });
const edit = (input: Record<string, unknown>) => call('str_replace_based_edit_tool', input);
const replace = (old_str: string, new_str: string, p = 'train.py') =>
  edit({ command: 'str_replace', path: p, old_str, new_str });
const finish = (description = 'raise the learning rate', rationale = 'the loss still falls fast at the end') =>
  call('finish_experiment', { description, rationale });
const writeNotes = call('write_notes', { findings: 'f', dead_ends: 'd', open_hypotheses: 'h' });
const turn = (...content: ReturnType<typeof call>[]): Extract<Turn, { type: 'message' }> => ({
  type: 'message',
  content,
});
const usage = (input: number, output: number, write = 0, read = 0): Usage => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: write,
  cache_read_input_tokens: read,
});

const proposer = (o: Partial<ClaudeOptions> = {}) => standInProposer(server, o);
const ctx = (over: Partial<ProposalContext> = {}) => proposalContext(dir, TRAIN, over);
/** The tool_result blocks the proposer sent in request i. */
function results(i: number): Array<{ type: string; tool_use_id: string; content: string; is_error?: boolean }> {
  return server.requests.filter(r => r.path.startsWith('/v1/messages'))[i].body.messages.at(-1).content;
}
const messageRequests = () => server.requests.filter(r => r.path.startsWith('/v1/messages'));

describe('the claude proposer', () => {
  it('turns a str_replace and finish_experiment into a proposal, with usage and cost', async () => {
    server.enqueue(
      {
        ...turn(edit({ command: 'view', path: '/repo/train.py', view_range: [1, 3] })),
        usage: usage(1000, 50, 4000, 0),
      },
      {
        ...turn(replace('LEARNING_RATE = 0.001', 'LEARNING_RATE = 0.002'), finish()),
        usage: usage(200, 120, 300, 4000),
      },
    );
    const p = await proposer().propose(ctx());
    expect(p.files).toEqual({ 'train.py': TRAIN.replace('0.001', '0.002') });
    expect(p).toMatchObject({
      description: 'raise the learning rate',
      rationale: 'the loss still falls fast at the end',
      meta: { model: DEFAULT_MODEL, turns: 2, failed_edits: 0 },
    });
    expect(p.usage).toEqual(usage(1200, 170, 4300, 4000));
    expect(p.cost_usd).toBeCloseTo(
      costOf(DEFAULT_MODEL, usage(1000, 50, 4000, 0)) + costOf(DEFAULT_MODEL, usage(200, 120, 300, 4000)),
      12,
    );
    expect(results(1)[0]).toMatchObject({
      type: 'tool_result',
      content: '     1\timport math\n     2\tLEARNING_RATE = 0.001\n     3\tN_LAYER = 4',
    });
    const body = messageRequests()[0].body;
    expect(body).toMatchObject({ model: DEFAULT_MODEL, stream: true });
    expect(body.tools[0]).toEqual({ type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' });
    // The system block's breakpoint covers the tools before it (a request has four breakpoints at most).
    expect(body.tools.map((t: { name: string }) => t.name)).toContain('finish_experiment');
    expect(body.tools.at(-1).cache_control).toBeUndefined();
    // The rules, then the run's facts (marked); program.md follows the history in the user turn.
    expect(body.system[0].text).toMatch(/^You are the researcher/);
    expect(body.system[0].cache_control).toBeUndefined();
    expect(body.system[1]).toMatchObject({ type: 'text', cache_control: { type: 'ephemeral' } });
    expect(body.system[1].text).toMatch(/^# The run\n/);
    expect(JSON.stringify(body.messages[0])).toContain('Make val_bpb lower.');
    // The workspace itself is never touched: the engine applies the proposal.
    expect(fs.readFileSync(path.join(dir, 'train.py'), 'utf8')).toBe(standInTrain());
  });

  it('answers each bad tool call with an is_error result that says what to do', async () => {
    server.enqueue(
      turn(replace('LEARNING_RATE = 0.01', 'LEARNING_RATE = 0.02')),
      turn(replace('x = 1', 'x = 2')),
      turn(replace('TIME_BUDGET = 1', 'TIME_BUDGET = 9', 'prepare.py')),
      turn(replace('a', 'b', 'model.py')),
      turn(replace('N_LAYER = 4', 'N_LAYER = (4')),
      turn(edit({ command: 'create', path: 'train.py', file_text: 'print(1)\n' })),
      turn(finish()),
      turn(
        edit({ command: 'insert', path: 'train.py', insert_line: 1, insert_text: 'WARMUP = 10' }),
        finish('add warmup'),
      ),
    );
    const p = await proposer({ maxFailedEdits: 10, maxToolTurns: 10 }).propose(ctx());
    const expected: Array<[number, RegExp]> = [
      [1, /^old_str was not found in train\.py; it must match the file exactly/],
      [2, /^old_str matches 3 times in train\.py \(lines 4, 5, 6\); include more context to make it unique$/],
      [3, /^prepare\.py is read-only: view it if you need to, but only train\.py may be edited$/],
      [
        4,
        /^model\.py is not a file you can see; the editable files are: train\.py; the read-only ones \(view only\): prepare\.py$/,
      ],
      [5, /^the edit was not applied: it would leave train\.py with a syntax error \(train\.py:3: .*\)/],
      [6, /^the create command is not available here; use view, str_replace or insert/],
      [7, /^make an edit first/],
    ];
    for (const [i, message] of expected) {
      const [r] = results(i);
      expect(r.is_error, `request ${i}`).toBe(true);
      expect(r.content).toMatch(message);
    }
    expect(p.files['train.py']).toBe(TRAIN.replace('LEARNING_RATE', 'WARMUP = 10\nLEARNING_RATE'));
    expect(p).toMatchObject({ description: 'add warmup', meta: { turns: 8, failed_edits: 6 } });
  });

  it('asks again when the model answers in prose instead of calling a tool', async () => {
    server.enqueue(
      { type: 'message', content: [{ type: 'text', text: 'I would raise the learning rate.' }] },
      turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()),
    );
    const p = await proposer().propose(ctx());
    expect(p.meta).toMatchObject({ turns: 2 });
    const second = messageRequests()[1].body.messages;
    expect(second.at(-2)).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'I would raise the learning rate.' }],
    });
    expect(second.at(-1).content[0].text).toMatch(
      /^Use str_replace_based_edit_tool to make your edit, then call finish_experiment/,
    );
  });

  it('abandons a proposal after 8 tool turns, and after 3 failed edits, with what it cost', async () => {
    for (let i = 0; i < 8; i++)
      server.enqueue({ ...turn(edit({ command: 'view', path: 'train.py' })), usage: usage(100, 10) });
    const err = await proposer()
      .propose(ctx())
      .catch(e => e);
    expect(err).toBeInstanceOf(ProposalAbandoned);
    expect(err.message).toBe('proposal abandoned: no finish_experiment after 8 tool turns');
    expect(err.usage).toEqual(usage(800, 80));
    expect(err.cost_usd).toBeCloseTo(8 * costOf(DEFAULT_MODEL, usage(100, 10)), 12);
    expect(err.meta).toMatchObject({ turns: 8, failed_edits: 0 });
    expect(messageRequests()).toHaveLength(8);

    for (let i = 0; i < 3; i++) server.enqueue(turn(replace('nope', 'x')));
    const failed = await proposer()
      .propose(ctx())
      .catch(e => e);
    expect(failed).toBeInstanceOf(ProposalAbandoned);
    expect(failed.message).toMatch(/^proposal abandoned: 3 failed edits; the last: old_str was not found/);
    expect(messageRequests()).toHaveLength(11);
  });

  it('marks the tools, the system block and the stable history for caching, and moves a breakpoint along the turns', async () => {
    server.enqueue(
      turn(edit({ command: 'view', path: 'train.py' })),
      // 39 experiments and no research notes yet: they are due, and finish_experiment waits for them.
      turn(replace('N_LAYER = 4', 'N_LAYER = 6'), writeNotes, finish()),
    );
    // Results 95 s apart: proposals come sooner than a 5-minute entry expires, so every breakpoint keeps 5 minutes.
    const h = history(40).map((r, i) => ({ ...r, ts: new Date(i * 95_000).toISOString() }));
    await proposer().propose(ctx({ history: h }));
    const [first, second] = messageRequests().map(r => r.body);
    const user = first.messages[0].content;
    // The heading, the one full chunk of 25 lines (marked), program.md, the keeps, the files at the best (marked), then the moving tail.
    expect(user).toHaveLength(6);
    expect(user[0].text).toBe('# Every experiment so far, the oldest first');
    expect(user[0].cache_control).toBeUndefined();
    expect(user[1].text).toMatch(/^#0 keep 1\.000000 · experiment 0/);
    expect(user[1].text.split('\n')).toHaveLength(25);
    expect(user[1].cache_control).toEqual({ type: 'ephemeral' });
    expect(user[2].text).toMatch(/^# The researcher's instructions \(program\.md\)\n/);
    expect(user[3].text).toMatch(/^# Every keep, the oldest first/);
    expect(user[4].text).toMatch(/^# The editable files at the best commit\n\n## train\.py/);
    expect(user[4].cache_control).toEqual({ type: 'ephemeral' });
    expect(user[5].text).toMatch(/^# The latest experiments, continuing the list above\n#25 discard/);
    expect(user[5].cache_control).toEqual({ type: 'ephemeral' });
    expect(second.messages[0].content[5].cache_control).toBeUndefined();
    expect(second.messages[2].content.at(-1).cache_control).toEqual({ type: 'ephemeral' });
    expect(second.system[1].cache_control).toEqual({ type: 'ephemeral' });
    // Four breakpoints: the system's facts, the last full chunk, the files, the newest block.
    const marks = JSON.stringify(second).match(/"cache_control"/g);
    expect(marks).toHaveLength(4);
  });

  it('reads the cache on later turns (the stand-in caches prefixes as the API does)', async () => {
    server.enqueue(
      turn(edit({ command: 'view', path: 'train.py' })),
      // 39 experiments and no research notes yet: they are due, and finish_experiment waits for them.
      turn(replace('N_LAYER = 4', 'N_LAYER = 6'), writeNotes, finish()),
    );
    const p = await proposer().propose(ctx({ history: history(40) }));
    expect(p.usage!.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(p.usage!.cache_read_input_tokens).toBeGreaterThan(0);
  });

  it('rides out 429s, 529s, a mid-stream overload and a cut stream, and the proposal completes', async () => {
    const notes: string[] = [];
    server.enqueue(
      { type: 'error', status: 429, error_type: 'rate_limit_error', message: 'slow down', retry_after_ms: 10 },
      {
        type: 'stream_error',
        content: [replace('N_LAYER = 4', 'N_LAYER = 6')],
        after_events: 3,
        error_type: 'overloaded_error',
        message: 'Overloaded',
      },
      { type: 'error', status: 529, error_type: 'overloaded_error', message: 'Overloaded' },
      { type: 'truncated', content: [replace('N_LAYER = 4', 'N_LAYER = 6')], after_events: 4 },
      turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish('deeper')),
    );
    // With the SDK's retries off, the engine's own backoff takes every one.
    const p = await proposer({ maxRetries: 0, onNote: t => notes.push(t) }).propose(ctx());
    expect(p).toMatchObject({
      description: 'deeper',
      files: { 'train.py': TRAIN.replace('N_LAYER = 4', 'N_LAYER = 6') },
    });
    expect(messageRequests()).toHaveLength(5);
    expect(notes).toHaveLength(4);
    expect(notes[0]).toMatch(/^the Messages API is unavailable \(429 rate_limit_error: slow down\); retrying in/);
    expect(notes[1]).toMatch(/overloaded_error: Overloaded/);
    expect(notes[2]).toMatch(/529 overloaded_error/);

    // With them on (the default), the SDK absorbs a 429 before the engine sees it.
    server.enqueue(
      { type: 'error', status: 429, error_type: 'rate_limit_error', message: 'slow down', retry_after_ms: 10 },
      turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()),
    );
    await proposer({ onNote: t => notes.push(t) }).propose(ctx());
    expect(notes).toHaveLength(4);
  });

  it('keeps waiting through a long outage until the run is stopped', async () => {
    for (let i = 0; i < 6; i++)
      server.enqueue({ type: 'error', status: 529, error_type: 'overloaded_error', message: 'Overloaded' });
    server.enqueue(turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()));
    await expect(proposer({ maxRetries: 1 }).propose(ctx())).resolves.toMatchObject({
      description: 'raise the learning rate',
    });

    server.enqueue({ type: 'error', status: 529, error_type: 'overloaded_error', message: 'Overloaded' });
    const stop = new AbortController();
    const started = Date.now();
    setTimeout(() => stop.abort('stop'), 200);
    await expect(
      proposer({ maxRetries: 0, backoff: { baseMs: 60_000, maxMs: 300_000 } }).propose(ctx({ signal: stop.signal })),
    ).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('checks the key at start: a refused key is a clear error that does not repeat it', async () => {
    await expect(proposer().check()).resolves.toBeUndefined();
    const bad = 'sk-ant-api03-WRONGwrong_0123456789';
    const err = await proposer({ apiKey: bad })
      .check()
      .catch(e => e);
    expect(err.message).toBe('ANTHROPIC_API_KEY was refused by the API (401 authentication_error); check the key');
    // The stand-in lists a few models only; for another, the check falls back to a 1-token message.
    server.enqueue({ type: 'error', status: 404, error_type: 'not_found_error', message: 'model: claude-sonnet-5' });
    await expect(proposer({ model: 'claude-sonnet-5' }).check()).rejects.toThrow(
      /does not know model "claude-sonnet-5"/,
    );
    server.enqueue({ type: 'message', content: [{ type: 'text', text: 'p' }], stop_reason: 'max_tokens' });
    await expect(proposer({ model: 'claude-opus-4-8' }).check()).resolves.toBeUndefined();
    expect(server.requests.at(-1)!.body).toMatchObject({ model: 'claude-opus-4-8', max_tokens: 1 });
    expect(() => proposer({ model: 'claude-nonexistent-1' })).toThrow(
      /no price is known for model "claude-nonexistent-1"/,
    );
  });

  it('never lets the key into a proposal, its meta or an error', async () => {
    server.enqueue(turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()));
    const p = await proposer().propose(ctx());
    expect(JSON.stringify(p)).not.toContain(KEY);
    server.enqueue({
      type: 'error',
      status: 400,
      error_type: 'invalid_request_error',
      message: `bad request from key ${KEY}`,
    });
    const err = await proposer()
      .propose(ctx())
      .catch(e => e);
    expect(err.message).toMatch(/^400 invalid_request_error: bad request from key sk-ant-\[redacted\]$/);
    expect(JSON.stringify(err) + String(err.stack)).not.toContain('SECRET');
  });

  it('offers to fix a crashed experiment, starting from its files', async () => {
    const crashed = standInTrain().replace('N_LAYER = 4', 'N_LAYER = 4\nDROPOUT = undefined_name');
    fs.writeFileSync(path.join(dir, 'train.py'), crashed);
    git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'crashes');
    const commit = git(dir, 'rev-parse', 'HEAD').trim();
    git(dir, 'reset', '-q', '--hard', 'HEAD~1');
    const log = path.join(dir, 'crash.log');
    fs.writeFileSync(log, "Traceback (most recent call last):\nNameError: name 'undefined_name' is not defined\n");
    const h = [record(0), record(1, { status: 'crash', commit, log_path: log })];
    server.enqueue(
      turn(call('fix_crashed_experiment', {})),
      turn(replace('DROPOUT = undefined_name', 'DROPOUT = 0.1'), finish('add dropout, fixed')),
    );
    const p = await proposer().propose(ctx({ history: h, files: { 'train.py': standInTrain() } }));
    expect(p.files['train.py']).toBe(crashed.replace('undefined_name', '0.1'));
    expect(p.meta).toMatchObject({ fix_of: 1, turns: 2 });
    const prompt = messageRequests()[0].body.messages[0].content.at(-1).text;
    expect(prompt).toContain("NameError: name 'undefined_name' is not defined");
    expect(prompt).toContain('You may fix experiment #1');
  });

  it('runs in the real loop: the edit is committed with its description, an abandoned proposal is recorded, --max-dollars stops cleanly', async () => {
    dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    for (let i = 0; i < 3; i++) server.enqueue({ ...turn(replace('no such text', 'x')), usage: usage(1000, 100) });
    server.enqueue({
      ...turn(replace('"1.000000"', '"0.900000"'), finish('lower the printed metric')),
      usage: usage(100_000, 10_000),
    });
    const loop = new Loop({
      dir,
      tag: 't1',
      proposer: proposer(),
      executor: new SubprocessExecutor(1),
      python: resolvePython(),
      maxDollars: 0.5,
      signal: new AbortController().signal,
    });
    const end = await loop.run();
    expect(end).toMatchObject({ reason: 'budget', best_metric: 0.9 });
    expect(end.message).toMatch(
      /^spent \$0\.3090 of --max-dollars 0\.5; the next proposal would cost about \$0\.3000$/,
    );
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status, e.description])).toEqual([
      [0, 'keep', 'baseline'],
      [1, 'rejected', 'proposal abandoned'],
      [2, 'keep', 'lower the printed metric'],
    ]);
    expect(exps[1]).toMatchObject({
      commit: null,
      reason: expect.stringMatching(/^proposal abandoned: 3 failed edits/),
      usage: usage(3000, 300),
    });
    expect(exps[1].cost_usd).toBeCloseTo(0.009, 9);
    expect(exps[2]).toMatchObject({
      usage: usage(100_000, 10_000),
      proposal_meta: { model: DEFAULT_MODEL, turns: 1, failed_edits: 0 },
    });
    expect(exps[2].cost_usd).toBeCloseTo(0.3, 9);
    expect(git(dir, 'log', '--format=%s', 'autoresearch/t1').trim().split('\n')).toEqual([
      'lower the printed metric',
      'initial',
    ]);
    // The key appears in nothing the run wrote: journal, logs, results.tsv.
    const files = (fs.readdirSync(dir, { recursive: true }) as string[])
      .map(f => path.join(dir, f))
      .filter(f => fs.statSync(f).isFile());
    expect(files.some(f => f.endsWith('journal.jsonl'))).toBe(true);
    expect(files.some(f => f.endsWith('results.tsv'))).toBe(true);
    expect(files.filter(f => fs.readFileSync(f).includes(KEY))).toEqual([]);
  });

  it('is the CLI default when ANTHROPIC_API_KEY is set, and a refused key stops the run before anything starts', async () => {
    const env = { ANTHROPIC_BASE_URL: server.url, AUTORESEARCH_PYTHON: resolvePython() };
    const refused = await cli(['run', dir, '--tag', 'k'], {
      env: { ...env, ANTHROPIC_API_KEY: 'sk-ant-api03-WRONGwrong_0123456789' },
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      'autoresearch: ANTHROPIC_API_KEY was refused by the API (401 authentication_error); check the key\n',
    );
    expect(fs.existsSync(path.join(dir, '.autoresearch', 'k'))).toBe(false);

    // A training script that prints its environment must not find the key there.
    fs.writeFileSync(
      path.join(dir, 'train.py'),
      'import os\nprint("key:", os.environ.get("ANTHROPIC_API_KEY", "none"))\n' + standInTrain(),
    );
    git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'print the environment');
    server.enqueue(turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish('deeper')));
    const ok = await cli(['run', dir, '--tag', 'c', '--max-experiments', '1', '--model', 'claude-sonnet-5-5'], {
      env: { ...env, ANTHROPIC_API_KEY: KEY },
    });
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    expect(experiments(dir, 'c').map(e => [e.proposer, e.description])).toEqual([
      ['baseline', 'baseline'],
      ['claude', 'deeper'],
    ]);
    expect(ok.stdout + ok.stderr).not.toContain(KEY);
    const logs = path.join(dir, '.autoresearch', 'c', 'logs');
    expect(fs.readFileSync(path.join(logs, '0000.log'), 'utf8')).toContain('key: none');
    for (const f of [
      ...fs.readdirSync(logs).map(f => path.join(logs, f)),
      path.join(dir, '.autoresearch', 'c', 'journal.jsonl'),
      path.join(dir, 'results.tsv'),
    ]) {
      expect(fs.readFileSync(f, 'utf8')).not.toContain(KEY);
    }
  });
});
