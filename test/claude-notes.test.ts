/** The model's research notes: due every NOTES_EVERY experiments, written with write_notes, journaled, shown in later prompts. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ExperimentRecord } from '../src/core/journal/journal';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { NOTES_EVERY, notesBlock, notesDue } from '../src/engine/proposers/claude/notes';
import type { ClaudeOptions } from '../src/engine/proposers/claude/proposer';
import { MAX_NOTES_REFUSALS } from '../src/engine/proposers/claude/tools';
import { ProposalAbandoned, type ProposalContext } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { experiments, makeWorkspace } from './helpers/workspace';
import { history, record } from './helpers/records';
import { proposalContext, standInProposer } from './helpers/claude';
import { MessagesApiServer, type Turn } from './stand-ins/messages-api';

const KEY = 'sk-ant-api03-SECRETsecret_0123456789abcdef';
const TRAIN = 'import math\nLEARNING_RATE = 0.001\nN_LAYER = 4\nprint("val_bpb:", 1.0)\n';
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
const insert = (text: string) =>
  call('str_replace_based_edit_tool', { command: 'insert', path: 'train.py', insert_line: 0, new_str: text });
const finish = (description = 'raise the learning rate') =>
  call('finish_experiment', { description, rationale: 'the loss still falls', expected_delta: -0.01 });
const SECTIONS = {
  findings: '- #10 kept: LEARNING_RATE 0.002 (−0.001, 2.1σ)',
  dead_ends: '- N_LAYER above 4: slower steps, fewer of them',
  open_hypotheses: '- warmup may let a higher rate train',
};
const notes = (input: unknown = SECTIONS) => call('write_notes', input);
const turn = (...content: Array<ReturnType<typeof call>>): Extract<Turn, { type: 'message' }> => ({
  type: 'message',
  content,
});

const proposer = (o: Partial<ClaudeOptions> = {}) => standInProposer(server, o);
const ctx = (over: Partial<ProposalContext> = {}) => proposalContext(dir, TRAIN, over);
const messageRequests = () => server.requests.filter(r => r.path.startsWith('/v1/messages'));
/** The tool_result blocks the proposer sent in request i. */
const results = (i: number): Array<{ content: string; is_error?: boolean }> =>
  messageRequests()[i].body.messages.at(-1).content;
/** The text blocks of request i's first user message. */
const userBlocks = (i: number): Array<{ text: string; cache_control?: unknown }> =>
  messageRequests()[i].body.messages[0].content;
const withNotes = (n: number, through: number, text = 'the notes'): ExperimentRecord =>
  record(n, { proposal_meta: { model: 'm', notes: { text, through } } });

describe('when the research notes are due', () => {
  it('is derived from the history: every NOTES_EVERY experiments that ran, the baseline not counted', () => {
    expect(NOTES_EVERY).toBe(25);
    expect(notesDue(history(NOTES_EVERY))).toBeNull(); // #0 (the baseline) to #24: 24 ran
    expect(notesDue(history(NOTES_EVERY + 1))).toEqual({ ran: 25, last: null, through: 25 });
    // Rejected and interrupted proposals ran nothing.
    const idle = [...history(NOTES_EVERY), record(25, { status: 'rejected' }), record(26, { status: 'interrupted' })];
    expect(notesDue(idle)).toBeNull();
    // A resumed run reads the last notes from the journal: due again 25 runs after them.
    const written = [...history(30), withNotes(30, 29)];
    expect(notesDue(written)).toBeNull();
    const later = [...written, ...Array.from({ length: 24 }, (_, i) => record(31 + i))];
    expect(notesDue(later)).toEqual({ ran: 25, last: 29, through: 54 });
    expect(notesDue(later.slice(0, -1))).toBeNull();
    // A proposal in flight that wrote them (the pipelined draft's running experiment) counts.
    expect(notesDue(history(26), [{ notes: { text: 't', through: 25 } }])).toBeNull();
    expect(notesDue(history(26), [{ lesson: { about: 1, text: 'x' } }, undefined])).not.toBeNull();
    expect(notesDue(history(4), [], 3)).toEqual({ ran: 3, last: null, through: 3 });
  });

  it('shows the latest notes (the ones written after the most experiments) as a block of their own', () => {
    expect(notesBlock(history(40))).toBeNull();
    const h = [...history(30), withNotes(30, 28, 'old'), withNotes(31, 29, 'new'), withNotes(32, 27, 'stale')];
    expect(notesBlock(h)).toBe('# Your research notes, as you wrote them with #31 after #29 had finished\n\nnew');
    // Malformed or oversized notes in a journal are not notes.
    const bad = [...history(3), record(3, { proposal_meta: { notes: { text: 'x'.repeat(7000), through: 2 } } })];
    expect(notesBlock(bad)).toBeNull();
  });
});

describe('the notes through the Messages API', () => {
  it('asks for due notes, refuses finish_experiment until they are written, journals them and shows them next time', async () => {
    server.enqueue(turn(replace('LEARNING_RATE = 0.001', 'LEARNING_RATE = 0.002'), finish()), turn(notes(), finish()));
    const h = history(NOTES_EVERY + 1);
    const p = await proposer().propose(ctx({ history: h }));
    const ask = userBlocks(0).at(-1)!.text;
    expect(ask).toContain('## Your research notes are due\n25 experiments have run and you have written no notes yet.');
    expect(messageRequests()[0].body.tools.map((t: { name: string }) => t.name)).toContain('write_notes');
    const refusal = results(1)[1];
    expect(refusal.is_error).toBe(true);
    expect(refusal.content).toMatch(/^your research notes are due: call write_notes .* then finish_experiment again/);
    expect(results(1)[0].is_error).toBeUndefined(); // the edit itself went through
    expect(p.description).toBe('raise the learning rate');
    expect(p.files['train.py']).toContain('LEARNING_RATE = 0.002');
    const text = `## Findings\n${SECTIONS.findings}\n\n## Dead ends\n${SECTIONS.dead_ends}\n\n## Open hypotheses\n${SECTIONS.open_hypotheses}`;
    expect(p.meta).toMatchObject({ notes: { text, through: 25 }, turns: 2 });

    // The next proposal: its experiment journaled with the meta, the notes a block of their own.
    server.enqueue(turn(replace('N_LAYER = 4', 'N_LAYER = 5'), finish('deeper')));
    const next = await proposer().propose(ctx({ history: [...h, record(26, { proposal_meta: p.meta }), record(27)] }));
    expect(next.meta).not.toHaveProperty('notes');
    const blocks = userBlocks(2);
    const at = blocks.findIndex(b => b.text.startsWith('# Your research notes'));
    expect(blocks[at].text).toBe(`# Your research notes, as you wrote them with #26 after #25 had finished\n\n${text}`);
    // After program.md, before the keeps and the files: cached by the files' breakpoint; not asked for again.
    expect(blocks[at - 1].text).toMatch(/^# The researcher's instructions \(program\.md\)/);
    expect(blocks[at].cache_control).toBeUndefined();
    const files = blocks.findIndex(b => b.text.startsWith('# The editable files at the best commit'));
    expect(files).toBeGreaterThan(at);
    expect(blocks.slice(at, files).every(b => b.cache_control === undefined)).toBe(true);
    expect(blocks[files].cache_control).toBeDefined();
    expect(blocks.at(-1)!.text).not.toContain('research notes are due');
  });

  it('goes on without notes after MAX_NOTES_REFUSALS refused finishes, and refuses notes that are not due or too long', async () => {
    expect(MAX_NOTES_REFUSALS).toBe(2);
    server.enqueue(
      turn(replace('N_LAYER = 4', 'N_LAYER = 6'), notes({ ...SECTIONS, findings: 'x'.repeat(2001) }), finish()),
      turn(notes({ findings: 'only this' }), finish()),
      turn(finish()),
    );
    const p = await proposer().propose(ctx({ history: history(NOTES_EVERY + 1) }));
    expect(results(1).map(r => [r.is_error, r.content.split(':')[0]])).toEqual([
      [undefined, 'train.py'],
      [
        true,
        'write_notes needs findings, dead_ends and open_hypotheses, each non-empty text of at most 2000 characters',
      ],
      [true, 'your research notes are due'],
    ]);
    expect(results(2).map(r => r.is_error)).toEqual([true, true]);
    expect(p.meta).toMatchObject({ turns: 3, failed_edits: 0 });
    expect(p.meta).not.toHaveProperty('notes');

    // Not due: the notes are refused, and finish goes through.
    server.enqueue(turn(notes()), turn(replace('N_LAYER = 4', 'N_LAYER = 3'), finish('shallower')));
    const q = await proposer().propose(ctx({ history: history(5) }));
    expect(results(4)[0]).toMatchObject({ is_error: true });
    expect(results(4)[0].content).toMatch(/^your research notes are not due now/);
    expect(q.meta).not.toHaveProperty('notes');
  });

  it('keeps the notes of a proposal that is abandoned: its rejected record carries them', async () => {
    server.enqueue(
      turn(notes(), replace('no such text', 'x')),
      turn(replace('nor this', 'x')),
      turn(replace('nor', 'x')),
    );
    const err = await proposer()
      .propose(ctx({ history: history(NOTES_EVERY + 1) }))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProposalAbandoned);
    expect((err as ProposalAbandoned).meta).toMatchObject({ notes: { through: 25 } });
  });

  it('in the real pipelined loop: the notes are journaled once, with the proposal that wrote them, and reach the prompts after', async () => {
    // Every 3 experiments: #1 to #3 have run when #5 is drafted (while #4 trains), so #5's proposal writes them.
    for (let k = 1; k <= 7; k++) {
      server.enqueue(
        k === 5
          ? turn(insert(`# try ${k}`), notes(), finish(`try ${k}`))
          : turn(insert(`# try ${k}`), finish(`try ${k}`)),
      );
    }
    const loop = new Loop({
      dir,
      tag: 't1',
      proposer: proposer({ notesEvery: 3 }),
      executor: new SubprocessExecutor(1),
      python: resolvePython(),
      maxExperiments: 7,
      signal: new AbortController().signal,
    });
    await loop.run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.description)).toEqual(['baseline', ...[1, 2, 3, 4, 5, 6, 7].map(k => `try ${k}`)]);
    const carrying = exps.filter(e => (e.proposal_meta as { notes?: unknown } | undefined)?.notes);
    expect(carrying.map(e => [e.n, (e.proposal_meta as { notes: { through: number } }).notes.through])).toEqual([
      [5, 3],
    ]);
    const firstTurns = messageRequests().filter(r => r.body.messages.length === 1);
    const asked = firstTurns.map(r => JSON.stringify(r.body.messages[0].content).includes('research notes are due'));
    // Asked of #5 only: #6 was drafted while #5 (which wrote them) trained.
    expect(asked).toEqual([false, false, false, false, true, false, false]);
    const shown = firstTurns.map(r => JSON.stringify(r.body.messages[0].content).includes('# Your research notes, as'));
    expect(shown).toEqual([false, false, false, false, false, false, true]);
  });
});
