import { describe, expect, it } from 'vitest';
import { gainOf, nearMisses } from '../src/core/rule/near-miss';
import { record } from './helpers/records';

const run = (metric: number) => ({ k: 1, seed: 0, metric, run_s: 1, log_path: null });

describe('near-misses', () => {
  const history = [
    record(0, { status: 'keep', metric: 1, delta: null }),
    // Better by 0.02 on one run, better by 0.018 on three: the three runs weigh more in σ terms.
    record(1, { status: 'discard', metric: 0.98, delta: -0.02, runs: [run(0.98)] }),
    record(2, { status: 'discard', metric: 0.982, delta: -0.018, runs: [run(0.98), run(0.984), run(0.982)] }),
    // Worse than the best: no near-miss.
    record(3, { status: 'discard', metric: 1.01, delta: 0.01 }),
    // A crash, a rejection and a reported duplicate are not near-misses either.
    record(4, { status: 'crash' }),
    record(5, { status: 'rejected' }),
    record(6, { status: 'discard', metric: 0.97, delta: -0.03, same_as: 1 }),
  ];

  it('lists only discards with a commit that beat the best before them, ranked by z in today’s σ', () => {
    const got = nearMisses(history, 'lower', 0.01);
    expect(got.map(m => m.record.n)).toEqual([2, 1]);
    expect(got[1].z).toBeCloseTo(0.02 / (0.01 * Math.SQRT2), 6);
    expect(got[0].z).toBeCloseTo(0.018 / (0.01 * Math.sqrt(1 / 3 + 1)), 6);
  });

  it('ranks by raw gain when σ is unknown, and reads gains the metric’s way', () => {
    expect(nearMisses(history, 'lower', null).map(m => [m.record.n, m.z])).toEqual([
      [1, null],
      [2, null],
    ]);
    expect(nearMisses(history, 'higher', 0.01).map(m => m.record.n)).toEqual([3]);
    expect(gainOf(history[3], 'higher')).toBeCloseTo(0.01, 9);
  });
});
