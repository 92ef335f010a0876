/** What a claude proposal request says, and that it stays bounded over a long run. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExperimentRecord } from '../src/core/journal';
import {
  fixOffer,
  MAX_SUMMARY_LINES,
  readLogTail,
  RECENT_FULL,
  systemText,
  userContent,
} from '../src/engine/proposers/claude-prompt';
import type { ProposalContext } from '../src/engine/proposers/types';
import { history, record } from './helpers/records';

const TRAIN = 'LEARNING_RATE = 0.001\nN_LAYER = 4\nprint("---")\n';

function ctx(h: ExperimentRecord[]): ProposalContext {
  return {
    workdir: '/tmp/none',
    files: { 'train.py': TRAIN },
    history: h,
    program: 'Make val_bpb lower.\nNever touch the tokenizer.',
    metric: 'val_bpb',
    direction: 'lower',
    seed: 0,
  };
}

function size(h: ExperimentRecord[]): number {
  const c = ctx(h);
  return (
    systemText(c).length + userContent(c, { fix: fixOffer(h), logTail: null }).reduce((n, b) => n + b.text.length, 0)
  );
}

describe('the claude prompt', () => {
  it('gives the engine role first, then program.md verbatim', () => {
    const text = systemText(ctx([]));
    expect(text).toMatch(/^You are the researcher/);
    expect(text).toMatch(/the engine runs, commits and judges/);
    expect(text).toMatch(/exactly one experiment/);
    expect(text.endsWith('Make val_bpb lower.\nNever touch the tokenizer.')).toBe(true);
  });

  it('states the keep rule truthfully, and σ with the floor a gain must clear once the noise is measured', () => {
    const noise = { noiseRuns: 3, keepSigma: 2, confirmRuns: 2, sigma: 0.01, df: 4, bestRuns: 3 };
    const c = { ...ctx(history(10)), noise };
    expect(systemText(c)).toMatch(
      /keeps a commit only when the mean of its runs beats the best's mean by more than\s+2 standard errors of the difference/,
    );
    const text = userContent(c, { fix: null, logTail: null })
      .map(b => b.text)
      .join('\n');
    // 2 × 0.01 × √(1/2 + 1/3) = 0.0183
    expect(text).toContain(
      "Noise: σ = 0.0100 per run (4 degrees of freedom). A kept change must beat the best's mean (3 runs) by more than\n0.0183 on two runs",
    );
    // The strict rule says what it always said, and no noise.
    const strict = { ...ctx(history(10)), noise: { ...noise, noiseRuns: 1, sigma: null } };
    expect(systemText(strict)).toMatch(/keeps the commit if it beats the best so far/);
    expect(
      userContent(strict, { fix: null, logTail: null })
        .map(b => b.text)
        .join('\n'),
    ).not.toContain('Noise:');
  });

  it('shows the files, the standing, the recent experiments in full and older ones in one line each', () => {
    const h = history(50);
    const blocks = userContent(ctx(h), { fix: null, logTail: null });
    expect(blocks).toHaveLength(2);
    // The stable summary comes first and carries a cache breakpoint; the changing part has none.
    expect(blocks[0].cache_control).toEqual({ type: 'ephemeral' });
    expect(blocks[1].cache_control).toBeUndefined();
    expect(blocks[0].text).toContain('#0 keep 1.000000');
    expect(blocks[0].text).toMatch(/#24 discard 0\.997600 \(-0\.002400\) experiment 24/);
    expect(blocks[0].text).not.toContain('#25 ');
    const main = blocks[1].text;
    expect(main).toContain('Best so far: 0.996000 at #40; baseline 1.000000 at #0.');
    expect(main).toContain('## Experiments #25–#41, one line each');
    expect(main).toContain(`## The last ${RECENT_FULL} experiment(s) in full`);
    expect(main).toContain('### #49 discard: 0.995100 (-0.004900 vs best 1.000000)');
    expect(main).toContain('+LEARNING_RATE = 0.0010');
    expect(main).not.toContain('### #41 ');
    expect(main).toContain('## train.py\n```python\n' + TRAIN);
  });

  it('keeps the summary block identical between steps, so its cached prefix is reused', () => {
    const texts = new Set<string>();
    for (let len = 33; len < 58; len++) texts.add(userContent(ctx(history(len)), { fix: null, logTail: null })[0].text);
    expect(texts.size).toBe(1);
  });

  it('grows sub-linearly: 700 experiments cost well under 14 × the prompt of 50', () => {
    const at50 = size(history(50));
    const at200 = size(history(200));
    const at700 = size(history(700));
    expect(at700).toBeLessThan((700 / 50) * at50);
    // Past MAX_SUMMARY_LINES the summary is a digest of bounded size: the prompt stops growing.
    expect(at700).toBeLessThan(2.5 * at50);
    expect(at700).toBeLessThan(1.6 * at200);
    expect(size(history(1400))).toBeLessThan(1.05 * at700);
    expect(userContent(ctx(history(700)), { fix: null, logTail: null })[0].text.split('\n').length).toBeLessThan(
      MAX_SUMMARY_LINES,
    );
  });

  it('digests a long history: the keeps, the closest misses, the last failures, with counts', () => {
    const text = userContent(ctx(history(700)), { fix: null, logTail: null })[0].text;
    expect(text).toMatch(/^# Earlier experiments \(#0–#674\), digested: \d+ keep, \d+ discard, \d+ crash/);
    expect(text).toContain('## Kept (each beat the best of its time), the last 60 of 68');
    expect(text).toContain('#670 keep');
    expect(text).toContain('## The 15 closest misses (discarded)');
    expect(text).toMatch(/## The last 10 crashed or rejected\n(#\d+ crash .*\n){9}#663 crash/);
  });

  it('offers to fix a crash, at most twice per idea', () => {
    const base = history(5);
    expect(fixOffer(base)).toBeNull();
    const crashed = [...base, record(5, { status: 'crash' })];
    expect(fixOffer(crashed)).toMatchObject({ root: 5, attempt: 1, record: { n: 5 } });
    const fix1 = [...crashed, record(6, { status: 'crash', proposal_meta: { model: 'm', fix_of: 5 } })];
    expect(fixOffer(fix1)).toMatchObject({ root: 5, attempt: 2, record: { n: 6 } });
    const fix2 = [...fix1, record(7, { status: 'crash', proposal_meta: { model: 'm', fix_of: 5 } })];
    expect(fixOffer(fix2)).toBeNull();
    const text = userContent(ctx(crashed), { fix: fixOffer(crashed), logTail: 'Traceback\nRuntimeError: boom' }).at(
      -1,
    )!.text;
    expect(text).toContain('## The log tail of #5, which crashed\n```\nTraceback\nRuntimeError: boom\n```');
    expect(text).toContain('You may fix experiment #5 instead of trying a new idea: call fix_crashed_experiment');
    expect(text).toContain('fix attempt 1 of 2 for the idea of #5');
  });

  it('reads the tail of a log, from a whole line', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-log-')), 'x.log');
    fs.writeFileSync(
      file,
      Array.from({ length: 1000 }, (_, i) => `step ${i} | loss 3.0`).join('\n') + '\nRuntimeError: boom\n',
    );
    const tail = readLogTail(file, 200) as string;
    expect(tail.startsWith('…\nstep ')).toBe(true);
    expect(tail.endsWith('RuntimeError: boom\n')).toBe(true);
    expect(tail.length).toBeLessThanOrEqual(202);
    expect(readLogTail('/nonexistent/file')).toBeNull();
    expect(readLogTail(null)).toBeNull();
  });
});
