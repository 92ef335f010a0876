/**
 * The noise-aware keep rule: the pure decision (src/core/rule/judge.ts), the measurements it reads,
 * and the engine gathering runs for it — real git, real Python runs, seeds from the engine.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { subprocessLoop } from './helpers/loop';
import type { RunRecord } from '../src/core/journal/journal';
import { Measurements } from '../src/core/rule/measurements';
import { judge } from '../src/core/rule/judge';
import { pooledSigma, type NoiseRule } from '../src/core/rule/noise';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import type { Proposal } from '../src/engine/proposers/types';
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

const RULE: NoiseRule = { direction: 'lower', noiseRuns: 3, keepSigma: 2, confirmRuns: 2 };

describe('judge', () => {
  it('is the strict rule with noise_runs 1 or a deterministic metric', () => {
    for (const [rule, sigma] of [
      [{ ...RULE, noiseRuns: 1 }, null],
      [RULE, 0],
    ] as const) {
      expect(judge({ candidate: [0.999], best: [1], sigma, rule }).action).toBe('keep');
      expect(judge({ candidate: [1], best: [1], sigma, rule }).action).toBe('discard');
    }
  });

  it('discards at once what is not better, confirms what looks better, keeps only a reproduced gain past the floor', () => {
    const best = [1.01, 0.99, 1.0];
    const worse = judge({ candidate: [1.004], best, sigma: 0.01, rule: RULE });
    expect(worse).toMatchObject({ action: 'discard', reason: 'not better (+0.0040; floor 0.0231 at 2σ, 1 run vs 3)' });
    // Past the floor on its first run: still run again, a keep is reproduced.
    expect(judge({ candidate: [0.95], best, sigma: 0.01, rule: RULE }).action).toBe('run-candidate');
    expect(judge({ candidate: [0.95, 0.96], best, sigma: 0.01, rule: RULE })).toMatchObject({
      action: 'keep',
      reason: expect.stringMatching(/^beats the noise \(−0\.0450; floor 0\.0183 at 2σ, 2 runs vs \d+\)$/),
    });
    // Better but within the floor: confirm, up to 1 + confirm_runs runs, then discard.
    expect(judge({ candidate: [0.996], best, sigma: 0.01, rule: RULE }).action).toBe('run-candidate');
    expect(judge({ candidate: [0.996, 0.996, 0.996], best, sigma: 0.01, rule: RULE })).toMatchObject({
      action: 'discard',
      reason: 'within noise (−0.0040; floor 0.0163 at 2σ, 3 runs vs 3)',
    });
  });

  it('re-measures a best with fewer runs than the candidate, and works for higher-is-better', () => {
    expect(judge({ candidate: [0.99, 0.991], best: [1], sigma: 0.01, rule: RULE }).action).toBe('run-best');
    const higher = { ...RULE, direction: 'higher' as const };
    expect(judge({ candidate: [0.9], best: [1, 1.01, 0.99], sigma: 0.01, rule: higher }).action).toBe('discard');
    expect(judge({ candidate: [1.1, 1.09], best: [1, 1.01, 0.99], sigma: 0.01, rule: higher }).action).toBe('keep');
  });

  it('measures σ first when nothing was run twice (a best from before repeats)', () => {
    expect(judge({ candidate: [0.99], best: [1], sigma: null, rule: RULE }).action).toBe('run-candidate');
    expect(judge({ candidate: [1.01], best: [1], sigma: null, rule: RULE }).action).toBe('discard');
  });
});

describe('pooled σ', () => {
  it('pools squared deviations over every group measured more than once', () => {
    expect(pooledSigma([[1], [2]])).toEqual({ sigma: null, df: 0 });
    const { sigma, df } = pooledSigma([[1, 3], [10, 10, 13], [7]]);
    expect(df).toBe(3);
    expect(sigma).toBeCloseTo(Math.sqrt((2 + 6) / 3), 12);
  });

  it('reads runs from the journal, and counts a journal from before repeats as one run per experiment', () => {
    const run = (n: number, k: number, metric: number | null): RunRecord => ({
      type: 'run',
      ts: 't',
      n,
      commit: 'abcdef1',
      state: 's0',
      purpose: k === 1 ? 'measure' : 'noise',
      k,
      seed: k,
      metric,
      summary: {},
      run_s: 1,
      exit_code: 0,
      signal: null,
      reason: null,
      memory_gb: 0,
      log_path: null,
    });
    const m = Measurements.of([run(0, 1, 1.0), run(0, 2, null), run(0, 3, 1.02)]);
    expect(m.values('s0')).toEqual([1.0, 1.02]);
    expect(m.runCount('s0')).toBe(3);
    expect(m.sigma().sigma).toBeCloseTo(Math.sqrt(0.0002), 12);
  });
});

/**
 * A stand-in whose metric is TRUE + an offset per seed (the engine's AUTORESEARCH_SEED is
 * n × 1000 + i), so the test knows each draw; it prints what the engine gave it.
 */
function noisyTrain(truth: number, offsets: Record<number, number>, extra = ''): string {
  return `import os, sys, time
truth = ${truth}
OFFSETS = ${JSON.stringify(offsets)}
seed = int(os.environ["AUTORESEARCH_SEED"])
print("seed", seed, "run", os.environ["AUTORESEARCH_RUN"], flush=True)
${extra}
print("---")
print("val_bpb: %.6f" % (truth + OFFSETS.get(str(seed), 0.0)))
`;
}

const BASELINE_OFFSETS = { 1: 0.01, 2: -0.01, 3: 0 };

const loop = subprocessLoop;

function change(description: string, truth: number, offsets: Record<number, number> = {}): Proposal {
  return {
    description,
    rationale: `test: ${description}`,
    files: { 'train.py': noisyTrain(truth, { ...BASELINE_OFFSETS, ...offsets }) },
  };
}

function runs(dir: string): RunRecord[] {
  return journal(dir, 't1').filter((r): r is RunRecord => r.type === 'run');
}

describe('the engine under the noise-aware rule', () => {
  it('measures the noise on the baseline, confirms before keeping, discards losers and lucky draws, never reruns known code', async () => {
    const dir = makeWorkspace({ train: noisyTrain(1.0, BASELINE_OFFSETS) });
    const proposals = [
      change('a lucky draw', 1.0, { 1001: -0.015, 1002: 0.012, 1003: -0.004 }),
      change('a real gain', 0.9), // 10σ better
      change('truly worse', 1.1),
      change('truly worse', 1.1), // the same code as #3
    ];
    await loop(dir, new ScriptedProposer(proposals)).run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status, e.runs?.length ?? 0])).toEqual([
      [0, 'keep', 3],
      [1, 'discard', 3],
      [2, 'keep', 2],
      [3, 'discard', 1],
      [4, 'rejected', 0],
    ]);

    const [baseline, lucky, gain, worse, same] = exps;
    expect(baseline.metric).toBeCloseTo(1.0, 6);
    expect(baseline.verdict).toMatchObject({
      sigma: expect.closeTo(0.01, 6),
      confirmed: true,
      spent: { measure: 1, noise: 2, confirm: 0, best: 0 },
    });
    expect(gain).toMatchObject({
      metric: expect.closeTo(0.9, 6),
      best_before: expect.closeTo(1.0, 6),
      verdict: { confirmed: true, spent: { measure: 1, confirm: 1 } },
    });
    expect(gain.reason).toMatch(/^beats the noise \(−0\.1000; floor 0\.0\d+ at 2σ, 2 runs vs \d+\)$/);
    expect(worse.reason).toMatch(/^not better \(\+0\.2000; floor/);
    expect(lucky.reason).toMatch(/^within noise \(/);
    expect(lucky.metric).toBeCloseTo(1.0 + (-0.015 + 0.012 - 0.004) / 3, 6);
    expect(same).toMatchObject({
      same_as: 3,
      metric: expect.closeTo(1.1, 6),
      reason: expect.stringMatching(/^same code as #3 \(discard, mean 1\.100000 over 1 run\); not run again$/),
    });

    // Every run got a distinct seed and its code's run number; the script saw both.
    const all = runs(dir);
    expect(all.map(r => [r.n, r.purpose, r.k, r.seed])).toEqual([
      [0, 'measure', 1, 1],
      [0, 'noise', 2, 2],
      [0, 'noise', 3, 3],
      [1, 'measure', 1, 1001],
      [1, 'confirm', 2, 1002],
      [1, 'confirm', 3, 1003],
      [2, 'measure', 1, 2001],
      [2, 'confirm', 2, 2002],
      [3, 'measure', 1, 3001],
    ]);
    expect(fs.readFileSync(all[4].log_path as string, 'utf8')).toMatch(/^seed 1002 run 2$/m);
    // results.tsv: the mean, one row per decided experiment.
    const rows = fs
      .readFileSync(path.join(dir, 'results.tsv'), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map(l => l.split('\t'));
    expect(rows.map(r => [r[1], r[3]])).toEqual([
      ['1.000000', 'keep'],
      [lucky.metric?.toFixed(6), 'discard'],
      ['0.900000', 'keep'],
      ['1.100000', 'discard'],
    ]);
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(gain.commit);
  });

  it('noise_runs 1 is the original strict rule: one run each, any improvement kept', async () => {
    const dir = makeWorkspace({ train: noisyTrain(1.0, BASELINE_OFFSETS) });
    await loop(dir, new ScriptedProposer([change('a lucky draw', 1.0, { 1001: -0.015 })]), {
      overrides: { noise_runs: 1 },
    }).run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.status, e.runs?.length])).toEqual([
      ['keep', 1],
      ['keep', 1],
    ]);
    expect(exps[1].verdict).toMatchObject({ strict: true, confirmed: false });
    expect(runs(dir)).toHaveLength(2);
  });

  it('with two workers: one rule, distinct seeds across workers, each run and experiment names its worker', async () => {
    const dir = makeWorkspace({ train: noisyTrain(1.0, BASELINE_OFFSETS) });
    const proposals = [
      change('a real gain', 0.9),
      change('a knob that does nothing', 1.0, { 2001: -0.015, 2002: 0.01, 2003: 0.01 }),
    ];
    await loop(dir, new ScriptedProposer(proposals), {
      workers: 2,
      executorFor: () => new SubprocessExecutor(1),
    }).run();
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status])).toEqual(
      expect.arrayContaining([
        [0, 'keep'],
        [1, 'keep'],
        [2, 'discard'],
      ]),
    );
    const all = runs(dir);
    expect(new Set(all.map(r => r.seed)).size).toBe(all.length);
    expect(all.every(r => r.worker === 1 || r.worker === 2)).toBe(true);
    expect(all.filter(r => r.n === 1).map(r => r.purpose)).toEqual(['measure', 'confirm']);
    expect(exps.find(e => e.n === 1)?.verdict?.confirmed).toBe(true);
    expect(git(dir, 'rev-parse', 'autoresearch/t1').trim()).toBe(exps.find(e => e.n === 1)?.commit);
  });

  it('after kill -9 during a confirmation run, --resume measures on: nothing lost, nothing run twice', async () => {
    const marker = path.join(makeWorkspace(), 'slept');
    // The offline proposer's first move changes a knob that does nothing; its first draw looks
    // better, so a confirmation follows; that run hangs once, and the engine is killed under it.
    const hang = `if seed == 1002 and not os.path.exists(${JSON.stringify(marker)}):\n    open(${JSON.stringify(marker)}, "w").close()\n    time.sleep(60)`;
    const train = noisyTrain(1.0, { ...BASELINE_OFFSETS, 1001: -0.012, 1002: 0.002 }, hang).replace(
      'truth = 1\n',
      'truth = 1\nLEARNING_RATE = 0.001\n',
    );
    const dir = makeWorkspace({ train });
    const child = startCli(['run', dir, '--tag', 't1', '--proposer', 'offline']);
    const done = finished(child);
    await waitFor(() => fs.existsSync(marker), 60_000, 'the confirmation run to start');
    child.kill('SIGKILL');
    await done;
    expect(experiments(dir, 't1').map(e => e.n)).toEqual([0]);

    const r = await cli(['run', dir, '--resume', '--max-experiments', '1']);
    expect(r.code, r.stderr).toBe(0);
    const exps = experiments(dir, 't1');
    expect(exps.map(e => [e.n, e.status])).toEqual([
      [0, 'keep'],
      [1, 'discard'],
    ]);
    expect(exps[1].runs?.map(x => [x.k, x.seed])).toEqual([
      [1, 1001],
      [2, 1002],
      [3, 1003],
    ]);
    expect(exps[1].description).toMatch(/^LEARNING_RATE /);
    expect(
      runs(dir)
        .filter(x => x.n === 1)
        .map(x => x.seed),
    ).toEqual([1001, 1002, 1003]);
    expect(
      journal(dir, 't1')
        .filter(x => x.type === 'experiment_start')
        .map(x => x.n),
    ).toEqual([0, 1]);
    const rows = fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8').trim().split('\n').slice(1);
    expect(rows).toHaveLength(2);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });
});
