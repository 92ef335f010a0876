/**
 * The search beyond greedy as the claude proposer sees it (issue 28): the prompt's section on a
 * plateau branch's start and the moves on offer, and take_move through the real SDK against the
 * Messages API stand-in — a move taken and finished without an edit, the move the proposal
 * records, an invalid index answered with is_error.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_MOVES_SHOWN, searchBlock } from '../src/engine/proposers/claude/search-prompt';
import type { MoveCandidate, ProposalContext } from '../src/engine/proposers/types';
import { git, makeWorkspace, standInTrain } from './helpers/workspace';
import { history, record } from './helpers/records';
import { proposalContext, standInProposer } from './helpers/claude';
import { MessagesApiServer, type Turn } from './stand-ins/messages-api';

const KEY = 'sk-ant-api03-SECRETsecret_0123456789abcdef';
const TRAIN = 'import math\nLEARNING_RATE = 0.001\nN_LAYER = 4\nWARMUP = 0\nprint("val_bpb:", 1.0)\n';
let server: MessagesApiServer;
let dir: string;

beforeEach(async () => {
  server = await MessagesApiServer.start({ apiKey: KEY });
  dir = makeWorkspace();
});
afterEach(() => server.close());

const call = (name: string, input: unknown) => ({ type: 'tool_use' as const, name, input });
const replace = (old_str: string, new_str: string) =>
  call('str_replace_based_edit_tool', { command: 'str_replace', path: 'train.py', old_str, new_str });
const finish = (description = 'the move as prepared') =>
  call('finish_experiment', { description, rationale: 'its numbers', expected_delta: -0.002 });
const turn = (...content: ReturnType<typeof call>[]): Extract<Turn, { type: 'message' }> => ({
  type: 'message',
  content,
});
const messageRequests = () => server.requests.filter(r => r.path.startsWith('/v1/messages'));
/** The tool_result blocks the proposer sent in request i. */
const results = (i: number): Array<{ content: string; is_error?: boolean }> =>
  messageRequests()[i].body.messages.at(-1).content;

const MOVES: MoveCandidate[] = [
  {
    kind: 'retest',
    of: [11],
    description: 're-test #11 (warmup 100 steps) on the new best #14',
    why: 'it beat the best of its day by 0.0031 (1.8σ today), short of the 2σ floor',
    files: { 'train.py': TRAIN.replace('WARMUP = 0', 'WARMUP = 100') },
  },
  {
    kind: 'combine',
    of: [11, 13],
    description: 'combine #11 (warmup 100 steps) with #13 (6 layers)',
    why: '#11 +0.0031 (1.8σ), #13 +0.0024 (1.4σ): both near-misses, on different knobs',
    files: {
      'train.py': TRAIN.replace('WARMUP = 0', 'WARMUP = 100').replace('N_LAYER = 4', 'N_LAYER = 6'),
      // A candidate naming a file that is not editable changes nothing there.
      'prepare.py': 'TIME_BUDGET = 999\n',
    },
  },
];

const proposer = () => standInProposer(server, {});
const ctx = (over: Partial<ProposalContext> = {}) => proposalContext(dir, TRAIN, { history: history(15), ...over });

describe('searchBlock', () => {
  it('says where a branch starts, how many are left and why, and lists each move with what, why and how to take it', () => {
    const text = searchBlock({
      start: { n: 11, kind: 'branch', left: 3, why: '20 experiments without a keep; #11 is the best near-miss (1.8σ)' },
      moves: MOVES,
    })!;
    expect(text).toContain('## This proposal starts from #11, not from the best');
    expect(text).toContain('Why the engine branched: 20 experiments without a keep; #11 is the best near-miss (1.8σ)');
    expect(text).toContain("Your working copy is #11's files");
    expect(text).toContain(
      '3 more experiments of this branch follow this one; if none beats the best, the run returns to the best.',
    );
    expect(text).toContain(
      '1. re-test (of #11): re-test #11 (warmup 100 steps) on the new best #14\n' +
        '   Why: it beat the best of its day by 0.0031 (1.8σ today), short of the 2σ floor',
    );
    expect(text).toContain('2. combine (of #11 + #13): combine #11 (warmup 100 steps) with #13 (6 layers)');
    expect(text).toMatch(
      /call take_move with its number \(index\).*Then call finish_experiment\nat once, or edit further first/,
    );
    expect(searchBlock({ start: { n: 4, kind: 'branch', left: 0, why: 'x' } })).toContain(
      'this is the branch’s last experiment',
    );
  });

  it('is null with nothing on offer; bounds a planted line and the number of moves', () => {
    expect(searchBlock({})).toBeNull();
    expect(searchBlock({ moves: [] })).toBeNull();
    const long = { ...MOVES[0], description: 'a\n'.repeat(5000), why: 'b'.repeat(10_000) };
    const text = searchBlock({ moves: Array.from({ length: 20 }, () => long) })!;
    expect(text.split('\n').filter(l => /^\d+\. /.test(l))).toHaveLength(MAX_MOVES_SHOWN);
    expect(Math.max(...text.split('\n').map(l => l.length))).toBeLessThan(400);
  });
});

describe('take_move through the Messages API', () => {
  it('takes a move and finishes without an edit: the move’s files, and the move recorded', async () => {
    server.enqueue(turn(call('take_move', { index: 2 })), turn(finish()));
    const p = await proposer().propose(ctx({ moves: MOVES }));
    expect(p.files).toEqual({ 'train.py': MOVES[1].files['train.py'] });
    expect(p.move).toEqual({ kind: 'combine', of: [11, 13] });
    expect(p.meta).toMatchObject({ turns: 2, failed_edits: 0 });
    expect(results(1)[0]).toMatchObject({
      content: expect.stringMatching(
        /^Your working copy is now move 2's files \(combine of #11 \+ #13\)\. Call finish_experiment/,
      ),
    });
    expect(results(1)[0].is_error).toBeUndefined();
    const body = messageRequests()[0].body;
    // The moves are in the moving part (the last block, uncached before the proposer marks it), the tool before finish.
    const blocks = body.messages[0].content;
    expect(blocks.at(-1).text).toContain('## Moves on offer');
    expect(blocks.slice(0, -1).some((b: { text: string }) => b.text.includes('Moves on offer'))).toBe(false);
    expect(body.tools.map((t: { name: string }) => t.name)).toEqual(
      expect.arrayContaining(['take_move', 'finish_experiment']),
    );
    expect(body.system[0].text).toContain('take one with take_move');
    expect(fs.readFileSync(path.join(dir, 'prepare.py'), 'utf8')).not.toContain('999');
  });

  it('answers an invalid index, a missing one and a move with none on offer with is_error, and edits on a taken move', async () => {
    server.enqueue(
      turn(call('take_move', { index: 5 })),
      turn(call('take_move', {})),
      turn(call('take_move', { index: 1 }), replace('LEARNING_RATE = 0.001', 'LEARNING_RATE = 0.002')),
      turn(finish('re-test #11 with a higher learning rate')),
    );
    const p = await proposer().propose(ctx({ moves: MOVES }));
    expect(results(1)[0]).toMatchObject({
      is_error: true,
      content: 'there is no move 5; the moves on offer are numbered 1 to 2',
    });
    expect(results(2)[0]).toMatchObject({
      is_error: true,
      content: "take_move needs index, the move's number in the list: 1 to 2",
    });
    expect(p.files['train.py']).toBe(MOVES[0].files['train.py'].replace('0.001', '0.002'));
    expect(p.move).toEqual({ kind: 'retest', of: [11] });
    // An invalid move is no failed edit: it changed nothing.
    expect(p.meta).toMatchObject({ turns: 4, failed_edits: 0 });

    server.enqueue(
      turn(call('take_move', { index: 1 })),
      turn(finish()),
      turn(replace('N_LAYER = 4', 'N_LAYER = 5'), finish()),
    );
    const plain = await proposer().propose(ctx());
    expect(results(5)[0]).toMatchObject({
      is_error: true,
      content: 'no moves are on offer now; edit the files for a new experiment instead',
    });
    // With no move taken, finish still wants an edit.
    expect(results(6)[0]).toMatchObject({ is_error: true, content: expect.stringMatching(/^make an edit first/) });
    expect(plain.move).toEqual({ kind: 'explore' });
    expect(messageRequests()[4].body.messages[0].content.at(-1).text).not.toContain('Moves on offer');
  });

  it('records a plateau branch’s experiment as a branch of its near-miss, and a fix as a fix of the crash', async () => {
    server.enqueue(turn(replace('N_LAYER = 4', 'N_LAYER = 5'), finish('deeper, on the branch')));
    const start = { n: 11, kind: 'branch' as const, left: 2, why: 'a plateau of 20 experiments' };
    const p = await proposer().propose(ctx({ start }));
    expect(p.move).toEqual({ kind: 'branch', of: [11] });
    expect(messageRequests()[0].body.messages[0].content.at(-1).text).toContain(
      '## This proposal starts from #11, not from the best',
    );

    const crashed = standInTrain().replace('N_LAYER = 4', 'N_LAYER = 4\nDROPOUT = undefined_name');
    fs.writeFileSync(path.join(dir, 'train.py'), crashed);
    git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'crashes');
    const commit = git(dir, 'rev-parse', 'HEAD').trim();
    git(dir, 'reset', '-q', '--hard', 'HEAD~1');
    server.enqueue(
      turn(call('fix_crashed_experiment', {})),
      turn(replace('DROPOUT = undefined_name', 'DROPOUT = 0.1'), finish('add dropout, fixed')),
    );
    const h = [record(0), record(1, { status: 'crash', commit })];
    const fixed = await proposer().propose(ctx({ history: h, files: { 'train.py': standInTrain() }, moves: MOVES }));
    expect(fixed.move).toEqual({ kind: 'fix', of: [1] });
  });
});
