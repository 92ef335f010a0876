/**
 * What a claude proposal is told of results it has not seen, derived from the journal (so a resume
 * agrees): the newest crash no prompt has shown, wherever it is among the last records, with its
 * log tail and the fix offer, once; and a lesson asked only about a finished experiment no
 * proposal, recorded or in flight, has drawn one from. Real SDK against the Messages API stand-in.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { proposalNotes } from '../src/core/journal/journal';
import { ClaudeProposer } from '../src/engine/proposers/claude/proposer';
import { crashShown } from '../src/engine/proposers/claude/unseen';
import type { ProposalContext } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { record } from './helpers/records';
import { git, makeWorkspace, standInTrain } from './helpers/workspace';
import { MessagesApiServer, type RecordedRequest, type Turn } from './stand-ins/messages-api';

let server: MessagesApiServer;
let dir: string;

beforeEach(async () => {
  server = await MessagesApiServer.start();
  dir = makeWorkspace();
});
afterEach(() => server.close());

const FINISH_TURN: Turn = {
  type: 'message',
  content: [
    {
      type: 'tool_use',
      name: 'str_replace_based_edit_tool',
      input: { command: 'insert', path: 'train.py', insert_line: 0, insert_text: 'WARMUP = 10' },
    },
    {
      type: 'tool_use',
      name: 'finish_experiment',
      input: { description: 'add warmup', rationale: 'r', expected_delta: -0.01, lesson: 'what it taught' },
    },
  ],
};
const promptOf = (r: RecordedRequest) =>
  (r.body.messages[0].content as Array<{ text: string }>).map(b => b.text).join('\n');

function proposer(): ClaudeProposer {
  return new ClaudeProposer({
    apiKey: server.apiKey,
    baseURL: server.url,
    python: resolvePython(),
    backoff: { baseMs: 5, maxMs: 20 },
  });
}
function ctx(over: Partial<ProposalContext>): ProposalContext {
  return {
    workdir: dir,
    files: { 'train.py': standInTrain() },
    history: [],
    program: 'Make val_bpb lower.',
    metric: 'val_bpb',
    direction: 'lower',
    seed: 0,
    ...over,
  };
}
/** Proposes once on `c`: the prompt it was shown and the meta it recorded. */
async function proposeOn(c: ProposalContext): Promise<{ prompt: string; meta: unknown }> {
  server.enqueue(FINISH_TURN);
  const before = server.requests.length;
  const p = await proposer().propose(c);
  return { prompt: promptOf(server.requests[before]), meta: p.meta };
}

/** A crashed experiment with a real commit (for the fix offer) and a log ending in a traceback. */
function crashRecord(n: number) {
  fs.writeFileSync(path.join(dir, 'train.py'), standInTrain().replace(/^/, 'N_HEAD = 3\n'));
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'crashing idea');
  const commit = git(dir, 'rev-parse', 'HEAD').trim();
  git(dir, 'reset', '-q', '--hard', 'HEAD~1');
  const log = path.join(dir, 'crash.log');
  fs.writeFileSync(log, 'step 1\nTraceback (most recent call last):\nAssertionError: n_embd % n_head != 0\n');
  return record(n, { status: 'crash', commit, log_path: log, diff: '--- a/train.py\n+++ b/train.py\n+N_HEAD = 3\n' });
}

describe('what a claude proposal has not seen yet', () => {
  it('shows the newest unseen crash even when a record came after it, once, and remembers that in the journal', async () => {
    const crash = crashRecord(1);
    const abandoned = record(2, { status: 'rejected', reason: 'proposal abandoned: 3 failed edits', commit: null });
    const first = await proposeOn(ctx({ history: [record(0), crash, abandoned] }));
    expect(first.prompt).toContain(
      '## The log tail of #1, which crashed\n```\nstep 1\nTraceback (most recent call last):\nAssertionError: n_embd % n_head != 0\n',
    );
    expect(first.prompt).toContain(
      'You may fix experiment #1 instead of trying a new idea: call fix_crashed_experiment',
    );
    expect(crashShown(first.meta)).toBe(1);

    // The proposal that showed it is in the journal now (here, rejected too): the crash is not shown again.
    const shown = record(3, { status: 'rejected', reason: 'duplicate', commit: null, proposal_meta: first.meta });
    const second = await proposeOn(ctx({ history: [record(0), crash, abandoned, shown] }));
    expect(second.prompt).not.toContain('which crashed');
    expect(second.prompt).not.toContain('You may fix experiment');
    expect(crashShown(second.meta)).toBeUndefined();

    // Nor while that proposal is still training (a draft made beside it knows its meta).
    const beside = await proposeOn(
      ctx({ history: [record(0), crash, abandoned], running: { n: 3, description: 'x', diff: '', meta: first.meta } }),
    );
    expect(beside.prompt).not.toContain('which crashed');
  });

  it('asks a lesson only about a finished experiment nobody drew one from, and records it about that one', async () => {
    const h = [record(0, { status: 'keep' }), record(1), record(2)];
    // #3 is training; its proposal already wrote the lesson on #2: this one is asked about #1.
    const running = { n: 3, description: 'x', diff: '', meta: { lesson: { about: 2, text: 'old' } } };
    const a = await proposeOn(ctx({ history: h, running }));
    expect(a.prompt).toMatch(/and lesson \(what #1 taught\)\.$/);
    expect(proposalNotes(a.meta).lesson).toEqual({ about: 1, text: 'what it taught' });

    // Every recent result has its lesson (other workers' in flight count too): none is asked, and one given unasked is dropped.
    const taught = [
      record(0, { status: 'keep' }),
      record(1, { proposal_meta: { lesson: { about: 0, text: 't' } } }),
      record(2, { proposal_meta: { lesson: { about: 1, text: 't' } } }),
    ];
    const inFlight = [{ n: 3, worker: 2, description: 'y', diff: '', meta: { lesson: { about: 2, text: 't' } } }];
    const b = await proposeOn(ctx({ history: taught, inFlight }));
    expect(b.prompt).not.toMatch(/lesson \(what #\d+ taught\)/);
    expect(proposalNotes(b.meta).lesson).toBeUndefined();
  });
});
