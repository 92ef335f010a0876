/** Step mode switched while a run goes on (`autoresearch step`, the mode file), on the real loop and real git. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { JournalRecord, RunConfig } from '../src/core/journal/journal';
import { REVIEW_MODE_FILE } from '../src/core/journal/layout';
import type { ReviewMode } from '../src/core/step-mode/review';
import { deriveRunState, RunStateFile } from '../src/core/journal/run-state';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { Loop } from '../src/engine/run/setup';
import type { Proposal, ProposalContext, Proposer } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { statusText } from '../src/engine/cli/report';
import { decide, setStepMode } from '../src/engine/cli/review-command';
import { readPending } from '../src/engine/step-mode/step-review';
import {
  cli,
  experiments,
  finished,
  journal,
  makeWorkspace,
  standInTrain,
  startCli,
  trainProposal,
  waitFor,
} from './helpers/workspace';

/** Scripted proposals, each handed out only once the test opens its gate: the model boundary, held still. */
class GatedProposer implements Proposer {
  readonly name = 'gated';
  readonly asked: ProposalContext[] = [];
  private readonly gates: Array<() => void> = [];
  private readonly opened: Array<Promise<void>>;
  constructor(private readonly proposals: Proposal[]) {
    this.opened = proposals.map(() => new Promise<void>(resolve => this.gates.push(resolve)));
  }
  open(i: number): void {
    this.gates[i]();
  }
  async propose(ctx: ProposalContext): Promise<Proposal | null> {
    const i = this.asked.push(ctx) - 1;
    if (i >= this.proposals.length) return null;
    await this.opened[i];
    return this.proposals[i];
  }
}

function runLoop(dir: string, proposer: Proposer, overrides: Partial<RunConfig> = {}) {
  const loop = new Loop({
    dir,
    tag: 't1',
    proposer,
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    signal: new AbortController().signal,
    overrides: { noise_runs: 1, ...overrides },
  });
  const notes: string[] = [];
  loop.on('note', t => notes.push(t));
  return { running: loop.run(), notes };
}

const root = (dir: string) => path.join(dir, '.autoresearch', 't1');
const state = (dir: string) =>
  RunStateFile.parse(JSON.parse(fs.readFileSync(path.join(root(dir), 'state.json'), 'utf8')));
const modes = (dir: string) =>
  journal(dir, 't1').flatMap(r =>
    r.type === 'review' && r.event === 'mode' ? [{ n: r.n, step: r.step, source: r.source }] : [],
  );

describe('switching step mode while a run goes on', () => {
  it('on mid-run reviews the next proposal; off while one is pending leaves that one waiting and reviews no more', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const proposer = new GatedProposer([
      trainProposal('first', { metric: '0.900000' }),
      trainProposal('second', { metric: '0.800000' }),
    ]);
    const { running, notes } = runLoop(dir, proposer);
    await waitFor(() => proposer.asked.length === 1, 30_000, 'the first proposal asked for');
    expect(state(dir).step).toBe(false);

    expect(setStepMode(dir, { step: true })).toMatch(/^step mode on for run t1/);
    // Journaled as soon as the engine sees the file, before any proposal: the state (and the panel's toggle) follow.
    await waitFor(() => state(dir).step === true, 30_000, 'step on in the state');
    expect(statusText(dir, 't1')).toContain('step mode:   on: each proposal awaits');
    expect(modes(dir)).toEqual([{ n: 1, step: true, source: 'cli' }]);
    proposer.open(0);
    await waitFor(() => readPending(root(dir))?.n === 1, 30_000, '#1 pending');
    expect(state(dir).pending).toMatchObject({ n: 1, description: 'first' });

    setStepMode(dir, { tag: 't1', step: false });
    await waitFor(() => state(dir).step === false, 30_000, 'step off in the state');
    expect(statusText(dir, 't1')).not.toContain('step mode:');
    // A mode record does not end the wait: #1 is still the one awaiting review.
    expect(state(dir).pending).toMatchObject({ n: 1, description: 'first' });
    expect(readPending(root(dir))?.n).toBe(1);
    expect(modes(dir)).toEqual([
      { n: 1, step: true, source: 'cli' },
      { n: 2, step: false, source: 'cli' },
    ]);
    proposer.open(1);
    await decide(dir, { tag: 't1' }, 'approve');
    expect(await running).toMatchObject({ reason: 'exhausted' });
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status, e.review?.action ?? null])).toEqual([
      [0, 'keep', null],
      [1, 'keep', 'approve'],
      [2, 'keep', null],
    ]);
    expect(journal(dir, 't1').filter(r => r.type === 'review' && r.n === 2 && r.event !== 'mode')).toEqual([]);
    expect(notes.join('\n')).toContain('step mode off (cli): from #2');
    expect(state(dir)).toMatchObject({ step: false, pending: null });
  });

  it('"approve all" is journaled as a switch off, and the state says so', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const proposer = new GatedProposer([
      trainProposal('reviewed', { metric: '0.900000' }),
      trainProposal('not reviewed', { metric: '0.800000' }),
    ]);
    const { running } = runLoop(dir, proposer, { step: true });
    proposer.open(0);
    await waitFor(() => readPending(root(dir))?.n === 1, 30_000, '#1 pending');
    expect(state(dir).step).toBe(true);
    await decide(dir, { tag: 't1', all: true }, 'approve');
    await waitFor(() => state(dir).step === false, 30_000, 'step off after approve all');
    proposer.open(1);
    await running;
    expect(modes(dir)).toEqual([{ n: 2, step: false, source: 'cli' }]);
    expect(experiments(dir, 't1')[2]).toMatchObject({ description: 'not reviewed', status: 'keep' });
    expect(experiments(dir, 't1')[2].review).toBeUndefined();
  });

  it('a mode file from before the engine started is old news; no engine, no switch', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    expect(() => setStepMode(dir, { tag: 't1', step: true })).toThrow(
      'no engine is running on run t1; start it in step mode: autoresearch run',
    );
    fs.mkdirSync(root(dir), { recursive: true });
    const stale: ReviewMode = { step: true, source: 'panel', ts: new Date(Date.now() - 60_000).toISOString() };
    fs.writeFileSync(path.join(root(dir), REVIEW_MODE_FILE), JSON.stringify(stale));
    const proposer = new GatedProposer([trainProposal('unreviewed', { metric: '0.900000' })]);
    proposer.open(0);
    const { running } = runLoop(dir, proposer);
    await running;
    expect(modes(dir)).toEqual([]);
    expect(experiments(dir, 't1')[1]).toMatchObject({ status: 'keep' });
    expect(experiments(dir, 't1')[1].review).toBeUndefined();
  });

  it('the state follows run_start, then mode records, then approve all; a mode record leaves the pending one pending', () => {
    const base = { ts: '2026-01-01T00:00:00.000Z' };
    const start = { ...base, type: 'run_start', tag: 't', branch: 'autoresearch/t', proposer: 'offline', pid: 1 };
    const records = [
      { ...start, config: { step: true } },
      { ...base, type: 'experiment_start', n: 1, parent_commit: 'abcdef0', description: 'd' },
      { ...base, type: 'review', n: 1, event: 'pending' },
      { ...base, type: 'review', n: 2, event: 'mode', step: false, source: 'panel' },
    ] as unknown as JournalRecord[];
    expect(deriveRunState(records, 0)).toMatchObject({ step: false, pending: { n: 1 } });
    const on = [...records, { ...base, type: 'review', n: 1, event: 'mode', step: true, source: 'cli' }];
    expect(deriveRunState(on as JournalRecord[], 0)).toMatchObject({ step: true, pending: { n: 1 } });
    const all = [...on, { ...base, type: 'review', n: 1, event: 'decision', action: 'approve', all: true }];
    expect(deriveRunState(all as JournalRecord[], 0)).toMatchObject({ step: false, pending: null });
    expect(deriveRunState([], 0).step).toBe(false);
  });

  it('the bundled CLI: step on is refused for a run with several workers, off is taken', async () => {
    const dir = makeWorkspace({ train: standInTrain({ sleep: 2 }) });
    const args = ['run', dir, '--tag', 't1', '--workers', '2', '--proposer', 'offline', '--noise-runs', '1'];
    const child = startCli(args);
    const done = finished(child);
    try {
      await waitFor(
        () => fs.existsSync(path.join(root(dir), 'state.json')) && state(dir).run !== null,
        60_000,
        'the run',
      );
      const on = await cli(['step', dir, 'on']);
      expect(on.code).toBe(1);
      expect(on.stderr).toContain('step mode reviews one proposal at a time: this run has 2 workers');
      const off = await cli(['step', dir, 'off', '--tag', 't1']);
      expect(off.code).toBe(0);
      expect(off.stdout).toMatch(/^step mode off for run t1/);
      const bad = await cli(['step', dir, 'maybe']);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('step takes on or off');
    } finally {
      child.kill('SIGTERM');
      await done;
    }
  }, 120_000);
});
