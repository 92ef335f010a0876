/**
 * A plateau's branch with the real loop (src/engine/search/plateau.ts): a real git repository, a
 * noisy stand-in train.py run as a subprocess, the real keep rule. After `plateau` experiments
 * without a keep the engine branches from the best near-miss (the proposals start from its files),
 * a keep on the branch is a fast-forward of autoresearch/<tag>, and a branch that beats nothing
 * returns to the best. Killed with -9 mid-branch, --resume continues the branch.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { subprocessLoop } from './helpers/loop';
import type { ExperimentRecord, ExperimentStartRecord } from '../src/core/journal/journal';
import type { Proposal, ProposalContext } from '../src/engine/proposers/types';
import {
  cli,
  experiments,
  finished,
  git,
  journal,
  makeWorkspace,
  ScriptedProposer,
  startCli,
  waitFor,
} from './helpers/workspace';

/** train.py: the metric is X, with ±0.01 of noise by the run's seed (odd: −, even: +), so σ is known. */
const NOISY = [
  'import os',
  'X = 1.0',
  'Y = 4',
  'seed = int(os.environ.get("AUTORESEARCH_SEED", "1"))',
  'noise = -0.01 if seed % 2 == 1 else 0.01',
  'print("---")',
  'print("val_bpb:          %.6f" % (X + (Y - 4) ** 2 * 0.01 + noise))',
  'print("training_seconds: 0.1")',
  '',
].join('\n');

/** Two noise runs, one confirmation, a plateau of 2 (a branch of 2). */
const PROGRAM =
  '---\nbudget_s: 1\ntimeout_s: 20\nnoise_runs: 2\nconfirm_runs: 1\nplateau: 2\n---\nMake val_bpb lower.\n';

/** A proposal setting X on the files it is given (the best's, or the branch's). */
const setX =
  (x: number) =>
  (ctx: ProposalContext): Proposal => ({
    description: `X = ${x}`,
    rationale: 'test',
    files: { 'train.py': ctx.files['train.py'].replace(/^X = .*$/m, `X = ${x}`) },
  });
const setY =
  (y: number) =>
  (ctx: ProposalContext): Proposal => ({
    description: `Y = ${y}`,
    rationale: 'test',
    files: { 'train.py': ctx.files['train.py'].replace(/^Y = .*$/m, `Y = ${y}`) },
  });

describe('a plateau branch with the real loop', () => {
  it('branches from the best near-miss after `plateau` experiments; a keep there is a fast-forward of the branch', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: NOISY });
    // #1 a near-miss (0.995 within noise), #2 worse: a plateau; #3 and #4 on the branch from #1 (X = 0.995).
    const proposer = new ScriptedProposer([setX(0.995), setX(1.2), setY(5), setX(0.9)]);
    const end = await subprocessLoop(dir, proposer).run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status])).toEqual([
      [0, 'keep'],
      [1, 'discard'],
      [2, 'discard'],
      [3, 'discard'],
      [4, 'keep'],
    ]);
    expect(exps[1].delta).toBeLessThan(0); // better than the best, within noise: a near-miss
    // The branch's proposals were told where they start and saw the near-miss's files.
    const [, , c3, c4] = proposer.contexts;
    expect(proposer.contexts[0].start).toBeUndefined();
    expect(c3.start).toMatchObject({ n: 1, kind: 'branch', left: 2 });
    expect(c3.start?.why).toMatch(/2 experiments without a keep: branching from #1/);
    expect(c4.start).toMatchObject({ n: 1, kind: 'branch', left: 1 });
    expect(c3.files['train.py']).toContain('X = 0.995');
    expect(c3.moves).toBeUndefined();
    // Journaled as branch moves from #1's commit; judged against the global best.
    for (const e of [exps[3], exps[4]]) {
      expect(e.move).toEqual({ kind: 'branch', of: [1] });
      expect(e.parent_commit).toBe(exps[1].commit);
      expect(e.best_before).toBeCloseTo(1.0, 6);
    }
    expect(end.best_commit).toBe(exps[4].commit);
    // The keep descends from the best through the near-miss: the branch fast-forwarded.
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(exps[4].commit);
    expect(git(dir, 'rev-parse', `${exps[4].commit}^`).trim()).toBe(exps[1].commit);
    expect(git(dir, 'rev-parse', `${exps[1].commit}^`).trim()).toBe(exps[0].commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(fs.readFileSync(path.join(dir, 'train.py'), 'utf8')).toContain('X = 0.9\n');
  });

  it('returns to the best when the branch beats nothing: the next proposal is on the best, the branch ref too', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: NOISY });
    const proposer = new ScriptedProposer([setX(0.995), setX(1.2), setY(5), setY(6), setX(1.1), setX(1.3)]);
    const end = await subprocessLoop(dir, proposer).run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.status)).toEqual(['keep', 'discard', 'discard', 'discard', 'discard', 'discard', 'discard']);
    expect(exps.map(e => e.move?.kind ?? null)).toEqual([null, null, null, 'branch', 'branch', null, null]);
    const [, , , , c5] = proposer.contexts;
    expect(c5.start).toBeUndefined();
    expect(c5.files['train.py']).toContain('X = 1.0\n');
    expect(exps[5].parent_commit).toBe(exps[0].commit);
    // A plateau counts anew after the branch: #5 and #6 on the best, no second branch yet.
    expect(exps[6].parent_commit).toBe(exps[0].commit);
    expect(end.best_commit).toBe(exps[0].commit);
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(exps[0].commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });

  it('a stop while a branch experiment trains leaves the branch ref and the folder on the best', async () => {
    const dir = makeWorkspace({
      program: PROGRAM,
      train: NOISY.replace('import os', 'import os, time\ntime.sleep(0.3)'),
    });
    const proposer = new ScriptedProposer([setX(0.995), setX(1.2), setY(5), setY(6)]);
    const stop = new AbortController();
    const loop = subprocessLoop(dir, proposer, { signal: stop.signal });
    loop.on('run-start', n => {
      if (n === 3) stop.abort();
    });
    const end = await loop.run();
    const exps = experiments(dir, 't1');
    expect(exps.at(-1)).toMatchObject({ n: 3, status: 'interrupted', move: { kind: 'branch', of: [1] } });
    expect(end.best_commit).toBe(exps[0].commit);
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(exps[0].commit);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(exps[0].commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });

  it('a pipelined proposer drafts on the branch too: the draft starts from the near-miss, told so', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: NOISY });
    // Claude's way: each proposal drafted while the experiment before it trains.
    const proposer = new (class extends ScriptedProposer {
      readonly pipelined = true;
    })([setX(0.995), setX(1.2), setY(5), setX(0.9), setY(6)]);
    await subprocessLoop(dir, proposer, { maxExperiments: 5 }).run();
    // The draft made while the plateau's last experiment trained is on the branch already: its files, its start.
    const onBranch = proposer.contexts.filter(c => c.start !== undefined);
    expect(onBranch.length).toBeGreaterThan(0);
    for (const c of onBranch) {
      expect(c.start).toMatchObject({ n: 1, kind: 'branch' });
      expect(c.files['train.py']).toContain('X = 0.995');
      expect(c.moves).toBeUndefined();
    }
    // Off the branch (the baseline done), the drafts carry the moves prepared on the best (tree search).
    const onBest = proposer.contexts.filter(c => c.start === undefined && c.history.length > 0);
    expect(onBest.every(c => Array.isArray(c.moves))).toBe(true);
    expect(experiments(dir, 't1').filter(e => e.move?.kind === 'branch').length).toBeGreaterThan(0);
  });

  it('search: greedy never branches', async () => {
    const dir = makeWorkspace({ program: PROGRAM.replace('plateau: 2', 'plateau: 2\nsearch: greedy'), train: NOISY });
    const proposer = new ScriptedProposer([setX(0.995), setX(1.2), setY(5)]);
    await subprocessLoop(dir, proposer).run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => e.move?.kind ?? null)).toEqual([null, null, null, null]);
    expect(proposer.contexts.every(c => c.start === undefined && c.moves === undefined)).toBe(true);
  });
});

/** train.py for the offline proposer: X is right at 1; a larger Y helps a little, less than the noise (near-misses). */
const NEAR = [
  'import os, time',
  'X = 1.0',
  'Y = 4',
  'seed = int(os.environ.get("AUTORESEARCH_SEED", "1"))',
  'noise = -0.01 if seed % 2 == 1 else 0.01',
  'time.sleep(0.4)',
  'print("---")',
  'print("val_bpb:          %.6f" % (1.0 + (X - 1.0) ** 2 - 0.001 * Y + noise))',
  'print("training_seconds: 0.4")',
  '',
].join('\n');

/** The experiment_start records with no experiment record yet (a run's journal as it is being written). */
function startedOnly(dir: string): ExperimentStartRecord[] {
  try {
    const records = journal(dir, 't1');
    const done = new Set(records.filter(r => r.type === 'experiment').map(r => (r as ExperimentRecord).n));
    return records.filter((r): r is ExperimentStartRecord => r.type === 'experiment_start' && !done.has(r.n));
  } catch {
    return []; // a line half written
  }
}

describe('a plateau branch, kill -9 and --resume', () => {
  it('the resumed engine continues the branch it was on, and the branch ref ends at the best', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: NEAR });
    const child = startCli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '30']);
    const done = finished(child);
    // Killed while the branch's first experiment trains.
    await waitFor(
      () => startedOnly(dir).some(s => s.proposal?.move?.kind === 'branch'),
      60_000,
      "a branch's first experiment to start",
    );
    const killed = startedOnly(dir).find(s => s.proposal?.move?.kind === 'branch') as ExperimentStartRecord;
    await new Promise(r => setTimeout(r, 150));
    child.kill('SIGKILL');
    await done;
    const of = killed.proposal?.move?.of;
    expect(of).toHaveLength(1);

    const r = await cli(['run', dir, '--resume', '--max-experiments', String(killed.n + 2)]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const exps = experiments(dir, 't1');
    const after = exps.filter(e => e.n >= killed.n);
    // The killed one: measured on from its run, or interrupted; either way the branch goes on from the same near-miss.
    expect(after[0].move).toEqual({ kind: 'branch', of });
    const branchRecs = after.filter(e => e.status !== 'interrupted');
    expect(branchRecs.length).toBeGreaterThanOrEqual(2);
    for (const e of branchRecs.slice(0, 2)) {
      expect(e.move).toEqual({ kind: 'branch', of });
      expect(git(dir, 'rev-parse', `${e.commit}^`).trim()).toBe(killed.parent_commit);
    }
    const best = exps.filter(e => e.status === 'keep').at(-1) as ExperimentRecord;
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(best.commit);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(best.commit);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });
});
