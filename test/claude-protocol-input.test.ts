/**
 * The claude proposer's answers to a model that misbehaves, with the real SDK against the Messages
 * API stand-in: a refusal with no content abandons the proposal (and counts toward the stop after
 * too many in a row); a tool input that is not valid JSON is answered with is_error on the next
 * turn, counted as a failed edit, and never retried as an outage.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { costOf } from '../src/core/config/pricing';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { DEFAULT_MODEL, type ClaudeOptions } from '../src/engine/proposers/claude/proposer';
import { MAX_ABANDONED_IN_A_ROW } from '../src/engine/proposers/claude/turns';
import { ProposalAbandoned, type ProposalContext } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
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
const replace = (old_str: string, new_str: string) =>
  call('str_replace_based_edit_tool', { command: 'str_replace', path: 'train.py', old_str, new_str });
const finish = () =>
  call('finish_experiment', { description: 'deeper', rationale: 'more capacity', expected_delta: -0.01 });
const turn = (...content: Block[]): Extract<Turn, { type: 'message' }> => ({ type: 'message', content });
const USAGE = { input_tokens: 1000, output_tokens: 50, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
/** A reply whose one tool call streams `json` as its input, which does not parse. */
const badJson = (json = '{"command": "str_replace", "path": "train.py", oops}'): Turn => ({
  type: 'message',
  content: [
    { type: 'thinking', thinking: 'N_LAYER looks small.' },
    { type: 'text', text: 'Let me edit.' },
    { type: 'tool_use', name: 'str_replace_based_edit_tool', input: {}, partial_json: json },
  ],
  usage: USAGE,
});
const requests = () => server.requests.filter(r => r.path.startsWith('/v1/messages'));

const proposer = (o: Partial<ClaudeOptions> = {}) => standInProposer(server, { maxRetries: 0, ...o });
const ctx = (over: Partial<ProposalContext> = {}) => proposalContext(dir, TRAIN, over);

describe('the claude protocol, when the model misbehaves', () => {
  it('abandons a proposal on a refusal with no content, at once, with what it cost', async () => {
    server.enqueue({ type: 'message', content: [], stop_reason: 'refusal', usage: USAGE });
    const err = await proposer()
      .propose(ctx())
      .catch(e => e);
    expect(err).toBeInstanceOf(ProposalAbandoned);
    expect(err.message).toBe('proposal abandoned: the model declined to propose');
    expect(err.usage).toMatchObject({ input_tokens: 1000 });
    expect(err.cost_usd).toBeCloseTo(costOf(DEFAULT_MODEL, USAGE), 12);
    // Not re-sent: one request.
    expect(requests()).toHaveLength(1);
  });

  it('stops the run after 5 empty refusals in a row, each recorded as abandoned', async () => {
    for (let i = 0; i < MAX_ABANDONED_IN_A_ROW * 2; i++) {
      server.enqueue({ type: 'message', content: [], stop_reason: 'refusal', usage: USAGE });
    }
    const loop = new Loop({
      dir,
      tag: 'r5',
      proposer: proposer(),
      executor: new SubprocessExecutor(1),
      python: resolvePython(),
      signal: new AbortController().signal,
      pipeline: false,
    });
    await expect(loop.run()).rejects.toThrow(
      /^the claude proposer failed: 5 proposals in a row were abandoned, .*\(the last: proposal abandoned: the model declined to propose\)/,
    );
    const exps = journal(dir, 'r5').filter(r => r.type === 'experiment');
    expect(exps.map(e => (e.type === 'experiment' ? [e.status, e.reason] : []))).toEqual([
      ['keep', expect.anything()],
      ...Array.from({ length: MAX_ABANDONED_IN_A_ROW }, () => [
        'rejected',
        'proposal abandoned: the model declined to propose',
      ]),
    ]);
    expect(requests()).toHaveLength(MAX_ABANDONED_IN_A_ROW);
  });

  it('answers a tool input that is not valid JSON with is_error on the next turn, and goes on', async () => {
    server.enqueue(badJson(), { ...turn(replace('N_LAYER = 4', 'N_LAYER = 6'), finish()), usage: USAGE });
    const p = await proposer().propose(ctx());
    expect(p.files['train.py']).toBe(TRAIN.replace('N_LAYER = 4', 'N_LAYER = 6'));
    expect(p.meta).toMatchObject({ turns: 2, failed_edits: 1, reasoning: 'N_LAYER looks small.' });
    const second = requests()[1].body.messages;
    // The reply goes back as it came (its signed thinking, which the API checks, its text, the call
    // with an empty input), then the error.
    expect(second.at(-2)).toMatchObject({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'N_LAYER looks small.', signature: expect.any(String) },
        { type: 'text', text: 'Let me edit.' },
        { type: 'tool_use', name: 'str_replace_based_edit_tool', input: {} },
      ],
    });
    const [answer] = second.at(-1).content;
    expect(answer.tool_use_id).toBe(second.at(-2).content[2].id);
    expect(answer.is_error).toBe(true);
    expect(answer.content).toMatch(
      /^your tool input was not valid JSON \(.+\); call str_replace_based_edit_tool again with a JSON object as its input$/,
    );
    // Two requests: never retried as an outage. The bad reply's prompt was billed (the stream's message_start).
    expect(requests()).toHaveLength(2);
    expect(p.usage!.input_tokens).toBeGreaterThanOrEqual(2000);
    expect(p.cost_usd).toBeCloseTo(costOf(DEFAULT_MODEL, p.usage!), 12);
  });

  it('abandons a proposal after maxFailedEdits tool inputs that are not valid JSON, without retrying any', async () => {
    server.enqueue(badJson(), badJson('{"command": view}'), badJson('not json at all'), badJson());
    const err = await proposer({ maxFailedEdits: 3 })
      .propose(ctx())
      .catch(e => e);
    expect(err).toBeInstanceOf(ProposalAbandoned);
    expect(err.message).toMatch(/^proposal abandoned: 3 failed edits; the last: tool input that was not valid JSON \(/);
    expect(err.meta).toMatchObject({ turns: 3, failed_edits: 3 });
    expect(requests()).toHaveLength(3);
    expect(server.remaining).toBe(1);
    expect(err.usage.input_tokens).toBeGreaterThanOrEqual(3000);
  });
});
