/**
 * The claude proposer's protocol limits, with the real SDK against the Messages API stand-in:
 * paths of any spelling, replies cut at max_tokens, a refusal after the first turn, a run of
 * abandoned proposals, and the tokens of cut streams in the ledger.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Usage } from '../src/core/journal/journal';
import { costOf } from '../src/core/config/pricing';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { DEFAULT_MODEL, type ClaudeOptions } from '../src/engine/proposers/claude/proposer';
import { MAX_ABANDONED_IN_A_ROW } from '../src/engine/proposers/claude/turns';
import { ProposalAbandoned, type ProposalContext } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { record } from './helpers/records';
import { proposalContext, standInProposer } from './helpers/claude';
import { journal, makeWorkspace } from './helpers/workspace';
import { MessagesApiServer, type Block, type Turn } from './stand-ins/messages-api';

const TRAIN = 'LEARNING_RATE = 0.001\nN_LAYER = 4\nprint("val_bpb:", 1.0)\n';
let server: MessagesApiServer;
let dir: string;

beforeEach(async () => {
  server = await MessagesApiServer.start();
  dir = makeWorkspace();
});
afterEach(() => server.close());

const call = (name: string, input: unknown) => ({ type: 'tool_use' as const, name, input });
const edit = (input: Record<string, unknown>) => call('str_replace_based_edit_tool', input);
const replace = (old_str: string, new_str: string, p = 'train.py') =>
  edit({ command: 'str_replace', path: p, old_str, new_str });
const finish = (description = 'deeper') =>
  call('finish_experiment', { description, rationale: 'more capacity', expected_delta: -0.01 });
const turn = (...content: Block[]): Extract<Turn, { type: 'message' }> => ({ type: 'message', content });
const usage = (input: number, output: number, write = 0, read = 0): Usage => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: write,
  cache_read_input_tokens: read,
});
const requests = () => server.requests.filter(r => r.path.startsWith('/v1/messages'));
const lastResults = (i: number) => requests()[i].body.messages.at(-1).content;

const proposer = (o: Partial<ClaudeOptions> = {}) => standInProposer(server, { maxRetries: 0, ...o });
const ctx = (over: Partial<ProposalContext> = {}) => proposalContext(dir, TRAIN, over);

describe('the claude protocol', () => {
  it('answers a path of any spelling that names no file with is_error, and goes on', async () => {
    const odd = [
      'toString',
      'constructor',
      '__proto__',
      'hasOwnProperty',
      '../prepare.py',
      '../train.py',
      '/etc/passwd',
    ];
    server.enqueue(
      turn(...odd.map(p => edit({ command: 'view', path: p }))),
      turn(...odd.map(p => replace('x', 'y', p))),
      turn(edit({ command: 'insert', path: 'valueOf', insert_line: 0, new_str: 'x = 1' })),
      turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()),
    );
    const p = await proposer({ maxFailedEdits: 20 }).propose(ctx());
    expect(p.files).toEqual({ 'train.py': TRAIN.replace('N_LAYER = 4', 'N_LAYER = 6') });
    for (const i of [1, 2, 3]) {
      for (const r of lastResults(i)) {
        expect(r.is_error, JSON.stringify(r)).toBe(true);
        expect(r.content).toMatch(/is not (a file you can see|one of the run's files)|is a folder/);
      }
    }
  });

  it('views the read-only files, never edits them', async () => {
    server.enqueue(
      turn(edit({ command: 'view', path: 'prepare.py' }), edit({ command: 'view', path: '/' })),
      turn(replace('TIME_BUDGET = 1', 'TIME_BUDGET = 9', 'prepare.py')),
      turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()),
    );
    const p = await proposer().propose(ctx());
    const [view, list] = lastResults(1);
    expect(view).toMatchObject({ content: '     1\t# fixed: never edited\n     2\tTIME_BUDGET = 1\n     3\t' });
    expect(view.is_error).toBeUndefined();
    expect(list.content).toBe('train.py\nprepare.py (read-only)');
    expect(lastResults(2)[0]).toMatchObject({
      is_error: true,
      content: 'prepare.py is read-only: view it if you need to, but only train.py may be edited',
    });
    expect(Object.keys(p.files)).toEqual(['train.py']);
    expect(fs.readFileSync(path.join(dir, 'prepare.py'), 'utf8')).toBe('# fixed: never edited\nTIME_BUDGET = 1\n');
  });

  it('runs no tool of a reply cut at max_tokens, even a cut edit that parses, and asks for a smaller edit', async () => {
    server.enqueue(
      {
        type: 'message',
        stop_reason: 'max_tokens',
        content: [
          replace('LEARNING_RATE = 0.001', 'LEARNING_RATE = 0.002'),
          {
            type: 'tool_use',
            name: 'str_replace_based_edit_tool',
            input: {},
            // Cut inside new_str: the SDK's partial JSON parse still yields an input with a shortened new_str.
            partial_json:
              '{"command": "str_replace", "path": "train.py", "old_str": "N_LAYER = 4", "new_str": "N_LAYER = 1',
          },
        ],
      },
      turn(replace('N_LAYER = 4', 'N_LAYER = 12'), finish('deeper still')),
    );
    const p = await proposer().propose(ctx());
    // Neither the complete call nor the cut one was applied.
    expect(p.files['train.py']).toBe(TRAIN.replace('N_LAYER = 4', 'N_LAYER = 12'));
    const second = requests()[1].body.messages;
    expect(second.at(-2).content.filter((b: { type: string }) => b.type === 'tool_use')).toHaveLength(2);
    const answer = second.at(-1).content;
    expect(answer.slice(0, 2).map((b: { is_error: boolean; content: string }) => [b.is_error, b.content])).toEqual([
      [true, 'not run: the reply was cut off at the output limit, so this call may be incomplete'],
      [true, 'not run: the reply was cut off at the output limit, so this call may be incomplete'],
    ]);
    expect(answer[2].text).toMatch(/^Your reply was cut off at the output limit .* Make a smaller edit/);
    expect(p.meta).toMatchObject({ turns: 2, failed_edits: 1 });
  });

  it('abandons only the proposal when the API refuses a later turn, and ends the run when it refuses the first', async () => {
    server.enqueue(
      { ...turn(edit({ command: 'view', path: 'train.py' })), usage: usage(1000, 50) },
      { type: 'error', status: 400, error_type: 'invalid_request_error', message: 'messages.2: bad block' },
    );
    const err = await proposer()
      .propose(ctx())
      .catch(e => e);
    expect(err).toBeInstanceOf(ProposalAbandoned);
    expect(err.message).toBe(
      'proposal abandoned: turn 2 was refused: 400 invalid_request_error: messages.2: bad block',
    );
    expect(err.usage).toEqual(usage(1000, 50));

    server.enqueue({ type: 'error', status: 400, error_type: 'invalid_request_error', message: 'effort: unsupported' });
    const first = await proposer()
      .propose(ctx())
      .catch(e => e);
    expect(first).not.toBeInstanceOf(ProposalAbandoned);
    expect(first.message).toBe('400 invalid_request_error: effort: unsupported');
  });

  it('records what a billed proposal cost when a later request is refused for any reason, then the next first turn ends the run', async () => {
    // A key revoked mid-run: the turn already answered was billed, so the proposal is abandoned (and
    // recorded with its cost) rather than lost with the run; the next proposal's first turn ends the run.
    const revoked = {
      type: 'error' as const,
      status: 401,
      error_type: 'authentication_error',
      message: 'invalid x-api-key',
    };
    server.enqueue({ ...turn(edit({ command: 'view', path: 'train.py' })), usage: usage(1000, 50) }, revoked, revoked);
    const loop = new Loop({
      dir,
      tag: 'r401',
      proposer: proposer(),
      executor: new SubprocessExecutor(1),
      python: resolvePython(),
      signal: new AbortController().signal,
      pipeline: false,
    });
    await expect(loop.run()).rejects.toThrow(
      /^the claude proposer failed: 401 authentication_error: invalid x-api-key$/,
    );
    const exps = journal(dir, 'r401').filter(r => r.type === 'experiment');
    expect(exps.map(e => (e.type === 'experiment' ? [e.status, e.reason, e.cost_usd] : []))).toEqual([
      ['keep', expect.anything(), 0],
      [
        'rejected',
        'proposal abandoned: turn 2 was refused: 401 authentication_error: invalid x-api-key',
        costOf(DEFAULT_MODEL, usage(1000, 50)),
      ],
    ]);
    expect(journal(dir, 'r401').at(-1)).toMatchObject({ type: 'run_end', reason: 'error' });
    expect(requests()).toHaveLength(3);

    // A first turn whose stream was cut (billed) and whose retry is refused: abandoned too, with the cut stream's tokens.
    server.enqueue(
      { type: 'truncated', content: [replace('N_LAYER = 4', 'N_LAYER = 6')], after_events: 2 },
      { type: 'error', status: 400, error_type: 'invalid_request_error', message: 'bad' },
    );
    const err = await proposer()
      .propose(ctx())
      .catch(e => e);
    expect(err).toBeInstanceOf(ProposalAbandoned);
    expect(err.message).toBe('proposal abandoned: turn 1 was refused: 400 invalid_request_error: bad');
    expect(err.usage.cache_creation_input_tokens).toBeGreaterThan(1000);
    expect(err.cost_usd).toBeCloseTo(costOf(DEFAULT_MODEL, err.usage), 12);
  });

  it('stops the run after 5 abandoned proposals in a row, saying why, without asking a sixth time', async () => {
    for (let i = 0; i < MAX_ABANDONED_IN_A_ROW * 3; i++) server.enqueue(turn(replace('no such text', 'x')));
    const loop = new Loop({
      dir,
      tag: 'a5',
      proposer: proposer(),
      executor: new SubprocessExecutor(1),
      python: resolvePython(),
      signal: new AbortController().signal,
      pipeline: false,
    });
    const why =
      /^the claude proposer failed: 5 proposals in a row were abandoned, so the run stops rather than keep paying for more \(the last: proposal abandoned: 3 failed edits; the last: old_str was not found/;
    await expect(loop.run()).rejects.toThrow(why);
    expect(journal(dir, 'a5').at(-1)).toMatchObject({
      type: 'run_end',
      reason: 'error',
      message: expect.stringMatching(why),
    });
    expect(requests()).toHaveLength(15);
    const exps = journal(dir, 'a5').filter(r => r.type === 'experiment');
    expect(exps.map(e => (e.type === 'experiment' ? e.status : ''))).toEqual([
      'keep',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
    ]);
    // A reviewer's rejections are no failures of the model: they do not count.
    const reviewed = [
      record(0),
      ...Array.from({ length: 6 }, (_, i) =>
        record(i + 1, {
          status: 'rejected',
          reason: 'not this',
          review: { action: 'reject', source: 'cli', waited_s: 1 },
        }),
      ),
    ];
    server.enqueue(turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()));
    await expect(proposer().propose(ctx({ history: reviewed }))).resolves.toMatchObject({ description: 'deeper' });
  });

  it('puts the tokens of cut and failed streams in the ledger, retries included', async () => {
    server.enqueue(
      {
        type: 'truncated',
        content: [{ type: 'text', text: 'x'.repeat(400) }, replace('N_LAYER = 4', 'N_LAYER = 6')],
        // message_start, the text block's start, a ping and its four deltas: cut before the tool call.
        after_events: 7,
      },
      {
        type: 'stream_error',
        content: [replace('N_LAYER = 4', 'N_LAYER = 6')],
        after_events: 3,
        error_type: 'overloaded_error',
        message: 'Overloaded',
      },
      { type: 'error', status: 529, error_type: 'overloaded_error', message: 'Overloaded' },
      { ...turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()), usage: usage(500, 80, 0, 0) },
    );
    const p = await proposer().propose(ctx());
    const [cut, failed] = requests().map(r => r.body);
    expect(cut.messages).toEqual(failed.messages);
    // Each cut stream was billed its prompt (message_start's usage): the first wrote it to the cache,
    // the second read it back; the 529 before any byte was not billed, the last reply is its own usage.
    const u = p.usage!;
    expect(u.cache_creation_input_tokens).toBeGreaterThan(1000);
    expect(u.cache_read_input_tokens).toBe(u.cache_creation_input_tokens);
    expect(u.input_tokens).toBeGreaterThanOrEqual(500);
    // The cut one had streamed 400 characters of text: about 100 output tokens.
    expect(u.output_tokens).toBeGreaterThanOrEqual(80 + 100);
    expect(p.cost_usd).toBeCloseTo(costOf(DEFAULT_MODEL, u), 12);
    expect(p.meta).toMatchObject({ turns: 1 });
  });
});
