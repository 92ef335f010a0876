/**
 * The engine's prepared moves (src/engine/search/moves.ts) on a real git repository: a re-test
 * re-applies a near-miss's diff on a best that moved, a combination merges two near-misses onto
 * the best, an ablation reverts one keep from the best; nothing whose files are the best's or an
 * already-judged state is offered. The plateau rule (search/plateau.ts) from the journal alone.
 * And the offline proposer: prepared moves taken in tree search, and none to take in greedy.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { Repo } from '../src/engine/git/git';
import { lineMerge, MoveBuilder, keepsOf } from '../src/engine/search/moves';
import { branchPlan } from '../src/engine/search/plateau';
import { stateOfFiles } from '../src/engine/search/files-state';
import { stateOf } from '../src/engine/experiment/ledger';
import { OfflineProposer } from '../src/engine/proposers/offline/proposer';
import type { ExperimentRecord } from '../src/core/journal/journal';
import type { ProposalContext } from '../src/engine/proposers/types';
import { record } from './helpers/records';
import { git, makeWorkspace } from './helpers/workspace';

/** train.py with four constants far enough apart that changing each one merges cleanly with the others. */
const train = (a: number, b: number, c: number, d: number): string =>
  `A = ${a}\n\n# --\n\nB = ${b}\n\n# --\n\nC = ${c}\n\n# --\n\nD = ${d}\n`;

/** Commits train.py on top of `parent` (the branch is moved there first); returns the commit. */
function commitOn(dir: string, parent: string, text: string, message: string): string {
  git(dir, 'reset', '-q', '--hard', parent);
  fs.writeFileSync(path.join(dir, 'train.py'), text);
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', message);
  return git(dir, 'rev-parse', 'HEAD').trim();
}

/** A repository with a history: #1 kept (A), #2 a near-miss on #1 (B), #3 kept (C), #4 and #5 near-misses on #3 (D, A again). */
function scene() {
  const dir = makeWorkspace({ train: train(1, 2, 3, 4) });
  const c0 = git(dir, 'rev-parse', 'HEAD').trim();
  const c1 = commitOn(dir, c0, train(10, 2, 3, 4), 'A');
  const c2 = commitOn(dir, c1, train(10, 20, 3, 4), 'B');
  const c3 = commitOn(dir, c1, train(10, 2, 30, 4), 'C');
  const c4 = commitOn(dir, c3, train(10, 2, 30, 40), 'D');
  const c5 = commitOn(dir, c3, train(11, 2, 30, 4), 'A again');
  git(dir, 'reset', '-q', '--hard', c3);
  const history: ExperimentRecord[] = [
    record(0, { status: 'keep', parent_commit: c0, commit: c0, delta: null }),
    record(1, { status: 'keep', parent_commit: c0, commit: c1, delta: -0.1 }),
    record(2, { status: 'discard', parent_commit: c1, commit: c2, delta: -0.03 }),
    record(3, { status: 'keep', parent_commit: c1, commit: c3, delta: -0.1 }),
    record(4, { status: 'discard', parent_commit: c3, commit: c4, delta: -0.02 }),
    record(5, { status: 'discard', parent_commit: c3, commit: c5, delta: -0.01 }),
  ];
  return { dir, history, c: [c0, c1, c2, c3, c4, c5] };
}

describe('prepared moves on a real git repository', () => {
  it('re-tests a near-miss on a best that moved, combines near-misses, ablates a keep', async () => {
    const { dir, history, c } = scene();
    const builder = new MoveBuilder(new Repo(dir), ['train.py']);
    const best = { commit: c[3], state: stateOf(dir, ['train.py']) };
    const moves = await builder.build({ history, best, direction: 'lower', sigma: null, taken: new Set() });
    const by = Object.fromEntries(moves.map(m => [`${m.kind}:${m.of.join(',')}`, m.files['train.py']]));
    // #2's B re-applied on the best (C = 30); #4 and #5 ran on this best: re-testing them would be the same code.
    expect(by['retest:2']).toBe(train(10, 20, 30, 4));
    expect(Object.keys(by).filter(k => k.startsWith('retest'))).toEqual(['retest:2']);
    // Combined: the near-misses on this best (#2 comes back through its re-test).
    expect(by['combine:4,5']).toBe(train(11, 2, 30, 40));
    expect(Object.keys(by).filter(k => k.startsWith('combine'))).toEqual(['combine:4,5']);
    // Ablating #1 (A = 10) from the best; #3 is the best itself (ablating it is the best before it).
    expect(by['ablate:1']).toBe(train(1, 2, 30, 4));
    expect(Object.keys(by).filter(k => k.startsWith('ablate'))).toEqual(['ablate:1']);
    expect(moves[0]).toMatchObject({ kind: 'retest', description: 're-test #2 on the new best' });
    expect(moves.find(m => m.kind === 'ablate')?.why).toMatch(/keep #1/);
  });

  it('offers no move onto a state already judged, nor one that conflicts', async () => {
    const { dir, history, c } = scene();
    // #6 and #7: near-misses on the best that change D too: combined with #4 they conflict (the same line).
    const c6 = commitOn(dir, c[3], train(10, 2, 30, 41), 'D differently');
    const c7 = commitOn(dir, c[3], train(10, 2, 31, 4), 'C again');
    git(dir, 'reset', '-q', '--hard', c[3]);
    const h = [
      ...history,
      record(6, { status: 'discard', parent_commit: c[3], commit: c6, delta: -0.025 }),
      record(7, { status: 'discard', parent_commit: c[3], commit: c7, delta: -0.015 }),
    ];
    const builder = new MoveBuilder(new Repo(dir), ['train.py']);
    const best = { commit: c[3], state: stateOf(dir, ['train.py']) };
    // The combination of #6 and #7 was run already (its state is in the journal).
    const taken = new Set([stateOfFiles({ 'train.py': train(10, 2, 31, 41) }, ['train.py'])]);
    const moves = await builder.build({ history: h, best, direction: 'lower', sigma: null, taken });
    // The top three near-misses on this best: #6, #4, #7 (#5's gain is the smallest).
    expect(moves.map(m => `${m.kind}:${m.of.join(',')}`)).toEqual(['retest:2', 'combine:4,7', 'ablate:1']);
  });

  it('merges changes to adjacent lines line by line, where git sees a conflict', () => {
    expect(lineMerge('A = 1\nB = 2\n', 'A = 5\nB = 2\n', 'A = 1\nB = 7\n')).toBe('A = 5\nB = 7\n');
    expect(lineMerge('A = 1\nB = 2\n', 'A = 5\nB = 2\n', 'A = 6\nB = 2\n')).toBeNull();
    expect(lineMerge('A = 1\n', 'A = 1\nB = 2\n', 'A = 3\n')).toBeNull();
  });

  it('hashes files as stateOf does, so a prepared move is recognised as the code it would run', () => {
    const { dir } = scene();
    expect(stateOfFiles({ 'train.py': fs.readFileSync(path.join(dir, 'train.py'), 'utf8') }, ['train.py'])).toBe(
      stateOf(dir, ['train.py']),
    );
  });

  it('keepsOf walks the chain of keeps from the best, newest first, without the best and the baseline', () => {
    const { history, c } = scene();
    expect(keepsOf(history, c[3]).map(r => r.n)).toEqual([1]);
    expect(keepsOf(history, c[1]).map(r => r.n)).toEqual([]);
  });
});

describe('the plateau rule, from the journal', () => {
  const best = 'c'.repeat(40);
  const nm = (n: number, delta: number) => record(n, { status: 'discard', parent_commit: best, delta });
  const o = { plateau: 4, direction: 'lower' as const, sigma: null, bestCommit: best };

  it('branches after `plateau` experiments without a keep, from the best near-miss on the best', () => {
    const h = [record(0, { status: 'keep', commit: best }), nm(1, 0.02), nm(2, -0.01), nm(3, -0.03)];
    expect(branchPlan(h, o)).toBeNull();
    const plan = branchPlan([...h, nm(4, 0.1)], o);
    expect(plan).toMatchObject({ of: 3, base: h[3].commit, left: 2 });
  });

  it('continues a branch under way, returns to the best when it runs out, and never branches with plateau 0', () => {
    const base = record(3).commit as string;
    const h = [record(0, { status: 'keep', commit: best }), nm(1, 0.02), nm(2, -0.01), nm(3, -0.03), nm(4, 0.1)];
    const b1 = record(5, { parent_commit: base, move: { kind: 'branch', of: [3] } });
    expect(branchPlan([...h, b1], o)).toMatchObject({ of: 3, base, left: 1 });
    // Interrupted (killed): it does not count, the branch goes on.
    const cut = record(6, { status: 'interrupted', parent_commit: base, move: { kind: 'branch', of: [3] } });
    expect(branchPlan([...h, b1, cut], o)).toMatchObject({ of: 3, left: 1 });
    // A proposal given up (no edit, no move) neither: the branch goes on.
    const gaveUp = record(6, { status: 'rejected', description: 'proposal abandoned' });
    expect(branchPlan([...h, b1, gaveUp], o)).toMatchObject({ of: 3, left: 1 });
    const b2 = record(7, { parent_commit: base, move: { kind: 'branch', of: [3] } });
    expect(branchPlan([...h, b1, cut, b2], o)).toBeNull();
    // A plateau again later: the next near-miss, not the one already branched from.
    const later = [8, 9, 10, 11].map(n => nm(n, 0.05));
    expect(branchPlan([...h, b1, cut, b2, ...later], o)).toMatchObject({ of: 2 });
    expect(branchPlan([...h, b1], { ...o, plateau: 0 })).toBeNull();
  });

  it('a keep ends the plateau', () => {
    const h = [record(0, { status: 'keep', commit: best }), nm(1, -0.02), nm(2, 0.1), nm(3, 0.1), nm(4, 0.1)];
    expect(branchPlan(h, o)).not.toBeNull();
    expect(branchPlan([...h, record(5, { status: 'keep', commit: 'd'.repeat(40) })], o)).toBeNull();
  });
});

describe('the offline proposer and prepared moves', () => {
  /** A context in which every single step from the best was tried, so the proposer looks further. */
  const ctx = (moves: ProposalContext['moves']): ProposalContext => ({
    workdir: '/nonexistent',
    files: { 'train.py': 'LR = 0.5\nN = 4\n' },
    history: [record(0, { status: 'keep', proposal_meta: undefined })],
    program: '',
    metric: 'val_bpb',
    direction: 'lower',
    seed: 1,
    moves,
  });

  const combine = {
    kind: 'combine' as const,
    of: [3, 4],
    description: 'combine #3 and #4 on the best',
    why: 'each nearly helped',
    files: { 'train.py': 'LR = 0.25\nN = 8\n' },
  };
  const ablate = {
    kind: 'ablate' as const,
    of: [2],
    description: 'ablate #2: the best without its change',
    why: 'is keep #2 still needed?',
    files: { 'train.py': 'LR = 0.5\nN = 3\n' },
  };

  it('takes a re-test or combination first, and journals its kind (tree search)', async () => {
    const next = await new OfflineProposer().propose(ctx([ablate, combine]));
    expect(next).toMatchObject({
      description: 'combine #3 and #4 on the best: LR 0.5 → 0.25, N 4 → 8',
      rationale: 'each nearly helped.',
      move: { kind: 'combine', of: [3, 4] },
      files: { 'train.py': 'LR = 0.25\nN = 8\n' },
    });
    expect(next?.meta).toMatchObject({
      constants: { 'train.py': { LR: 0.25, N: 8 } },
      changes: [{ name: 'LR' }, { name: 'N' }],
    });
  });

  it('takes an ablation only once its promising single steps are used up', async () => {
    const p = new OfflineProposer();
    const fresh = await p.propose(ctx([ablate]));
    expect(fresh?.move).toBeUndefined();
    const { history } = await exhausted(p);
    const next = await p.propose({ ...ctx([ablate]), history });
    expect(next).toMatchObject({ move: { kind: 'ablate', of: [2] }, files: { 'train.py': 'LR = 0.5\nN = 3\n' } });
  });

  it('greedy search: nothing prepared, so its own steps and no move', async () => {
    const p = new OfflineProposer();
    const own = await p.propose(ctx(undefined));
    expect(own?.move).toBeUndefined();
    expect(own?.description).toMatch(/^(LR|N) /);
    // A move onto a state it tried already is passed over.
    const tried = [
      record(0, { status: 'keep' }),
      record(1, {
        proposal_meta: {
          kind: 'offline',
          constants: { 'train.py': { LR: 0.25, N: 8 } },
          changes: [
            { file: 'train.py', name: 'LR', from: 0.5, to: 0.25, direction: 'down', level: 0 },
            { file: 'train.py', name: 'N', from: 4, to: 8, direction: 'up', level: 0 },
          ],
        },
      }),
    ];
    expect((await p.propose({ ...ctx([combine]), history: tried }))?.move).toBeUndefined();
  });
});

/** A history in which the proposer's one-step neighbourhood (coarse steps) from the best was all tried and discarded. */
async function exhausted(p: OfflineProposer): Promise<{ history: ExperimentRecord[] }> {
  const history: ExperimentRecord[] = [record(0, { status: 'keep' })];
  for (let n = 1; n < 40; n++) {
    const prop = await p.propose({
      workdir: '/nonexistent',
      files: { 'train.py': 'LR = 0.5\nN = 4\n' },
      history,
      program: '',
      metric: 'val_bpb',
      direction: 'lower',
      seed: 1,
    });
    if (!prop) break;
    const meta = prop.meta as { change?: { level: number; jump?: boolean } };
    // Stop once it leaves the promising neighbourhood (finer steps, pairs, jumps).
    if (!meta.change || meta.change.level > 0) break;
    history.push(record(n, { status: 'discard', delta: 0.05, proposal_meta: prop.meta }));
  }
  return { history };
}
