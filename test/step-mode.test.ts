/** Step mode on the real loop and real git: each proposal waits for a reviewer's decision file. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JournalRecord, RunConfig } from '../src/core/journal/journal';
import { REVIEW_DECISION_FILE } from '../src/core/journal/layout';
import type { ReviewDecision } from '../src/core/step-mode/review';
import { RunStateFile } from '../src/core/journal/run-state';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import { OfflineProposer } from '../src/engine/proposers/offline/proposer';
import { userContent } from '../src/engine/proposers/claude/prompt';
import type { Proposer } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { statusText } from '../src/engine/cli/report';
import { decide, reviewText } from '../src/engine/cli/review-command';
import { readPending } from '../src/engine/step-mode/step-review';
import {
  cli,
  experiments,
  finished,
  git,
  journal,
  makeWorkspace,
  ScriptedProposer,
  standInTrain,
  startCli,
  trainProposal,
  waitFor,
} from './helpers/workspace';

const STEP: Partial<RunConfig> = { step: true, noise_runs: 1 };

function stepLoop(
  dir: string,
  proposer: Proposer,
  signal = new AbortController().signal,
  resume = false,
  maxExperiments?: number,
) {
  const loop = new Loop({
    maxExperiments,
    dir,
    tag: 't1',
    resume,
    proposer,
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    signal,
    overrides: STEP,
  });
  const notes: string[] = [];
  loop.on('note', t => notes.push(t));
  return { loop, notes };
}

const root = (dir: string) => path.join(dir, '.autoresearch', 't1');
const state = (dir: string) =>
  RunStateFile.parse(JSON.parse(fs.readFileSync(path.join(root(dir), 'state.json'), 'utf8')));
const reviews = (dir: string) => journal(dir, 't1').filter(r => r.type === 'review');
/** Whether the journal has offered #n (a line still being written reads as not yet). */
const offered = (dir: string, n: number) => {
  try {
    return reviews(dir).some(r => r.type === 'review' && r.event === 'pending' && r.n === n);
  } catch {
    return false;
  }
};
// The offer is whole once both are there: the pending file is written first, then the journal's
// record, and a kill -9 between the two leaves no offer to resume (the experiment is interrupted).
const awaiting = (dir: string, n: number) =>
  waitFor(() => readPending(root(dir))?.n === n && offered(dir, n), 30_000, `#${n} pending`);

/** What the server's checks say of the run's journal lines and state.json (journal_schema.py, run_state.py): '' when all pass. */
function serverProblems(dir: string): string {
  const script = [
    'import json, sys',
    'from jupyterlab_autoresearch.read import journal_schema, run_state',
    'out = []',
    'for line in open(sys.argv[1], "rb").read().splitlines():',
    '    try: journal_schema.parse(line)',
    '    except journal_schema.RecordProblem as e: out.append(str(e))',
    'out.append(run_state.shape_problem(json.load(open(sys.argv[2]))) or "")',
    'print("; ".join(o for o in out if o))',
  ].join('\n');
  const files = [path.join(root(dir), 'journal.jsonl'), path.join(root(dir), 'state.json')];
  return execFileSync(resolvePython(), ['-c', script, ...files], { encoding: 'utf8' }).trim();
}

/** A decision written straight into the run's folder, as the server does for the panel. */
function writeDecision(dir: string, d: Omit<ReviewDecision, 'ts' | 'source'>): void {
  const decision: ReviewDecision = { ts: new Date().toISOString(), source: 'panel', ...d };
  fs.writeFileSync(path.join(root(dir), REVIEW_DECISION_FILE), JSON.stringify(decision));
}

describe('step mode', () => {
  it('waits before committing; approve from another shell commits and trains it', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const { loop } = stepLoop(dir, new ScriptedProposer([trainProposal('better', { metric: '0.900000' })]));
    const running = loop.run();
    await awaiting(dir, 1);
    // Nothing committed yet: the branch holds the initial commit only; the state says why it waits.
    expect(git(dir, 'log', '--format=%s').trim()).toBe('initial');
    expect(state(dir).pending).toMatchObject({ n: 1, description: 'better' });
    expect(serverProblems(dir)).toBe('');
    expect(statusText(dir, 't1')).toMatch(/state: +awaiting-review: #1 better/);
    const shown = reviewText(dir, 't1');
    expect(shown).toContain('description: better');
    expect(shown).toContain('+print("val_bpb:          " + "0.900000")');
    expect(await decide(dir, { tag: 't1' }, 'approve')).toMatch(/^approved #1/);
    const end = await running;
    expect(end).toMatchObject({ reason: 'exhausted', best_metric: 0.9 });
    const exps = experiments(dir, 't1');
    expect(exps[1]).toMatchObject({ status: 'keep', review: { action: 'approve', source: 'cli' } });
    expect(reviews(dir).map(r => r.type === 'review' && [r.n, r.event, r.action ?? null])).toEqual([
      [1, 'pending', null],
      [1, 'decision', 'approve'],
    ]);
    expect(state(dir).pending).toBeNull();
    expect(readPending(root(dir))).toBeNull();
  });

  it('records a rejection unrun and uncommitted, and its note reaches the next proposal; --all ends step mode', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const proposer = new ScriptedProposer([
      trainProposal('huge change', { metric: '0.500000' }),
      trainProposal('small change', { metric: '0.950000' }),
      trainProposal('unreviewed', { metric: '0.900000' }),
    ]);
    const { loop } = stepLoop(dir, proposer);
    const running = loop.run();
    await awaiting(dir, 1);
    await decide(dir, { tag: 't1', note: 'too big a step; change one thing at a time' }, 'reject');
    await awaiting(dir, 2);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('M train.py');
    await decide(dir, { tag: 't1', all: true }, 'approve');
    await running;
    const exps = experiments(dir, 't1');
    expect(exps[1]).toMatchObject({
      status: 'rejected',
      commit: null,
      reason: 'rejected by reviewer: too big a step; change one thing at a time',
      review: { action: 'reject', source: 'cli' },
    });
    expect(exps[1].diff).toContain('0.500000');
    expect(journal(dir, 't1').some(r => r.type === 'run' && r.n === 1)).toBe(false);
    expect(git(dir, 'log', '--format=%s', 'autoresearch/t1')).not.toContain('huge change');
    // The next proposal saw it: in its history and, for Claude, the note verbatim in the prompt.
    const ctx = proposer.contexts[1];
    expect(ctx.history.at(-1)?.reason).toContain('change one thing at a time');
    const prompt = userContent(ctx, { fix: null, logTail: null })
      .map(b => b.text)
      .join('\n');
    expect(prompt).toContain('#1 huge change: rejected by reviewer: too big a step; change one thing at a time');
    // Approve all: #3 ran without waiting.
    expect(exps[3]).toMatchObject({ description: 'unreviewed', status: 'keep' });
    expect(exps[3].review).toBeUndefined();
    // Only the switch off that "approve all" journals, from #3 on.
    expect(reviews(dir).filter(r => r.n === 3)).toEqual([
      { type: 'review', ts: expect.any(String), n: 3, event: 'mode', step: false, source: 'cli' },
    ]);
    expect(serverProblems(dir)).toBe('');
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });

  it("runs the reviewer's edit from a decision carrying files, after refusing one that touches a read-only file", async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const { loop, notes } = stepLoop(dir, new ScriptedProposer([trainProposal('proposed', { metric: '0.950000' })]));
    const running = loop.run();
    await awaiting(dir, 1);
    writeDecision(dir, { n: 1, decision: 'approve', files: { 'prepare.py': 'print("mine")\n' } });
    await waitFor(() => readPending(root(dir))?.refused !== undefined, 30_000, 'the refusal');
    expect(readPending(root(dir))?.refused?.message).toContain('not editable: prepare.py');
    expect(notes.join('\n')).toContain('the edited version was refused');
    writeDecision(dir, { n: 1, decision: 'approve', files: { 'train.py': standInTrain({ metric: '0.800000' }) } });
    await running;
    const exps = experiments(dir, 't1');
    expect(exps[1]).toMatchObject({ status: 'keep', metric: 0.8, review: { action: 'edit', source: 'panel' } });
    expect(exps[1].diff).toContain('0.800000');
    const decision = reviews(dir).find(r => r.type === 'review' && r.event === 'decision');
    expect(decision?.type === 'review' && decision.edit_diff).toMatch(/-print.*0\.950000[\s\S]*\+print.*0\.800000/);
    expect(git(dir, 'show', 'HEAD:train.py')).toContain('0.800000');
    expect(serverProblems(dir)).toBe('');
  });

  it('refuses a decision for another proposal, from the CLI and in the engine', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const { loop, notes } = stepLoop(dir, new ScriptedProposer([trainProposal('p', { metric: '0.900000' })]));
    const running = loop.run();
    await awaiting(dir, 1);
    await expect(decide(dir, { tag: 't1', n: 7 }, 'approve')).rejects.toThrow('#7 is not awaiting review; #1 is');
    writeDecision(dir, { n: 7, decision: 'reject' });
    await waitFor(() => notes.some(n => n.includes('ignored a decision for #7')), 30_000, 'the refusal note');
    expect(fs.existsSync(path.join(root(dir), REVIEW_DECISION_FILE))).toBe(false);
    expect(readPending(root(dir))?.n).toBe(1);
    expect(experiments(dir, 't1')).toHaveLength(1);
    await decide(dir, { tag: 't1', n: 1 }, 'approve');
    await running;
    expect(experiments(dir, 't1')[1]).toMatchObject({ status: 'keep' });
  });

  it('stops while waiting, leaving the proposal pending and the tree clean; --resume offers the same one', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const stop = new AbortController();
    const { loop } = stepLoop(
      dir,
      new ScriptedProposer([trainProposal('wait for me', { metric: '0.900000' })]),
      stop.signal,
    );
    const running = loop.run();
    await awaiting(dir, 1);
    const before = readPending(root(dir));
    stop.abort('stop');
    expect(await running).toMatchObject({ reason: 'stop' });
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(experiments(dir, 't1').map(e => e.n)).toEqual([0]);
    expect(state(dir)).toMatchObject({ status: 'stopped', pending: { n: 1, description: 'wait for me' } });
    expect(statusText(dir, 't1')).toContain('pending:     #1 wait for me awaits review');

    // Resumed by a proposer with nothing to offer: the pending proposal is what comes back.
    const again = stepLoop(dir, new ScriptedProposer([]), undefined, true);
    const resumed = again.loop.run();
    await waitFor(
      () => reviews(dir).length === 1 && readPending(root(dir))?.since === before?.since,
      30_000,
      'the offer',
    );
    await awaiting(dir, 1);
    expect(readPending(root(dir))).toMatchObject({ n: 1, diff: before?.diff, since: before?.since });
    await decide(dir, { tag: 't1' }, 'approve');
    await resumed;
    expect(experiments(dir, 't1').map(e => [e.n, e.status, e.description])).toEqual([
      [0, 'keep', 'baseline'],
      [1, 'keep', 'wait for me'],
    ]);
  });

  it('kill -9 while waiting: --resume shows the same pending proposal, not a new one (the bundled CLI, offline proposer)', async () => {
    const dir = makeWorkspace({ train: standInTrain() });
    const args = ['run', dir, '--tag', 't1', '--step', '--noise-runs', '1', '--proposer', 'offline'];
    const first = startCli(args);
    const done = finished(first);
    await awaiting(dir, 1);
    const pending = readPending(root(dir));
    expect(pending?.why).toMatch(/^offline move: /);
    first.kill('SIGKILL');
    await done;
    const second = startCli([...args, '--resume', '--max-experiments', '1']);
    const out = finished(second);
    await waitFor(
      () => state(dir).status === 'running' && readPending(root(dir))?.n === 1,
      60_000,
      'the resumed offer',
    );
    expect(readPending(root(dir))).toMatchObject({ n: 1, description: pending?.description, diff: pending?.diff });
    const review = await cli(['review', dir, '--tag', 't1']);
    expect(review.stdout).toContain(`#1 awaits review`);
    expect((await cli(['approve', dir])).stdout).toMatch(/^approved #1/);
    expect((await out).code).toBe(0);
    const records: JournalRecord[] = journal(dir, 't1');
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.description])).toEqual([
      [0, 'baseline'],
      [1, pending?.description],
    ]);
    expect(exps[1].status).not.toBe('interrupted');
    expect(records.filter(r => r.type === 'review' && r.event === 'pending')).toHaveLength(1);
  }, 120_000);

  it('the offline proposer treats a rejected direction as tried: its next move goes another way', async () => {
    const dir = makeWorkspace({ train: standInTrain() });
    const proposer = new OfflineProposer({ seed: 0 });
    const { loop } = stepLoop(dir, proposer, undefined, false, 2);
    const running = loop.run();
    await awaiting(dir, 1);
    const first = readPending(root(dir))?.meta as { change: { name: string; direction: string } };
    await decide(dir, { tag: 't1', note: 'not this one' }, 'reject');
    await awaiting(dir, 2);
    const second = readPending(root(dir))?.meta as { change: { name: string; direction: string } };
    expect([second.change.name, second.change.direction]).not.toEqual([first.change.name, first.change.direction]);
    await decide(dir, { tag: 't1' }, 'approve');
    expect(await running).toMatchObject({ reason: 'max-experiments' });
    expect(experiments(dir, 't1').map(e => e.status)).toEqual(['keep', 'rejected', expect.any(String)]);
  });
});
