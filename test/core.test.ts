import { describe, expect, it } from 'vitest';
import { judge, judgeBaseline } from '../src/core/rule/judge';
import { noiseRuleOf, type Direction } from '../src/core/rule/noise';
import { parseJournal } from '../src/core/journal/journal';
import { parseProgram, resolveConfig } from '../src/core/config/program';
import { parseResults, RESULTS_HEADER, resultsRow } from '../src/core/journal/results';
import { memoryGb, parseSummary, readMetric } from '../src/core/rule/summary';

describe('program.md front matter', () => {
  it('means the original conventions when absent', () => {
    const { frontMatter, body } = parseProgram('# Goal\nLower val_bpb.\n');
    expect(frontMatter).toEqual({});
    expect(body).toBe('# Goal\nLower val_bpb.\n');
    expect(resolveConfig(frontMatter)).toEqual({
      metric: 'val_bpb',
      direction: 'lower',
      budget_s: 300,
      timeout_s: 600,
      run: 'python train.py',
      editable: ['train.py'],
      readonly: ['prepare.py'],
      noise_runs: 3,
      keep_sigma: 2,
      confirm_runs: 2,
      sandbox: { mode: 'auto', network: false },
      search: 'tree',
      plateau: 12,
    });
  });

  it("takes the sandbox as a mode or a mapping; the flag sets the mode and keeps the front matter's network", () => {
    const sandbox = (fm: string, flag?: 'auto' | 'on' | 'off') =>
      resolveConfig(parseProgram(`---\n${fm}\n---\nGo.\n`).frontMatter, flag ? { sandbox: flag } : {}).sandbox;
    expect(sandbox('sandbox: on')).toEqual({ mode: 'on', network: false });
    expect(sandbox('sandbox: {network: true}')).toEqual({ mode: 'auto', network: true });
    expect(sandbox('sandbox: {mode: off}')).toEqual({ mode: 'off', network: false });
    expect(sandbox('sandbox: {network: true}', 'on')).toEqual({ mode: 'on', network: true });
    expect(() => parseProgram('---\nsandbox: maybe\n---\n')).toThrow(
      /"sandbox" must be auto, on or off, or a mapping like \{mode: on, network: true\}/,
    );
    expect(() => parseProgram('---\nsandbox: {net: true}\n---\n')).toThrow(
      /bad front matter: "sandbox" has unknown key "net"$/,
    );
  });

  it('overrides defaults, and the timeout follows the budget', () => {
    const { frontMatter, body } = parseProgram(
      '---\nmetric: acc\ndirection: higher\nbudget_s: 60\neditable: [model.py, train.py]\n---\nBody\n',
    );
    const config = resolveConfig(frontMatter);
    expect(config).toMatchObject({
      metric: 'acc',
      direction: 'higher',
      budget_s: 60,
      timeout_s: 120,
      editable: ['model.py', 'train.py'],
    });
    // Tiny budgets still leave a minute for start-up and evaluation.
    expect(resolveConfig({ budget_s: 5 }).timeout_s).toBe(65);
    expect(body).toBe('Body\n');
  });

  it('takes the claude settings: model, a spending cap and price overrides, flags winning', () => {
    const { frontMatter } = parseProgram(
      '---\nmodel: claude-new-9\nmax_dollars: 25\nprices:\n  claude-new-9: {input: 1, output: 2, cache_write: 1.25, cache_read: 0.1}\n---\nGo.\n',
    );
    expect(resolveConfig(frontMatter)).toMatchObject({
      model: 'claude-new-9',
      max_dollars: 25,
      prices: { 'claude-new-9': { input: 1, output: 2, cache_write: 1.25, cache_read: 0.1 } },
    });
    expect(resolveConfig(frontMatter, { max_dollars: 5, model: 'claude-sonnet-5-5' })).toMatchObject({
      model: 'claude-sonnet-5-5',
      max_dollars: 5,
    });
    expect(() => parseProgram('---\nprices:\n  m: {input: 1, output: 2}\n---\nGo.\n')).toThrow(
      /"prices.m.cache_write"/,
    );
  });

  it('names an unknown key and lists the known ones', () => {
    expect(() => parseProgram('---\nbudget: 60\n---\nx')).toThrow(
      /unknown key "budget"; known keys: metric, direction, budget_s/,
    );
  });

  it('names a bad value', () => {
    expect(() => parseProgram('---\ndirection: down\n---\nx')).toThrow(/"direction"/);
    expect(() => parseProgram('---\nbudget_s: -5\n---\nx')).toThrow(/"budget_s"/);
    expect(() => parseProgram('---\neditable: [../etc/passwd]\n---\nx')).toThrow(/inside the workspace/);
    expect(() => parseProgram('---\nbudget_s: [\n---\nx')).toThrow(/not valid YAML/);
  });

  it('refuses a timeout shorter than the budget and a file in both lists', () => {
    expect(() => resolveConfig({ budget_s: 100, timeout_s: 50 })).toThrow(/timeout_s/);
    expect(() => resolveConfig({ editable: ['prepare.py'] })).toThrow(/both editable and readonly/);
  });
});

describe('summary block', () => {
  const log =
    'step 1 | loss 3.1\n---\nnot a summary\n---\nval_bpb:          0.997900\ntraining_seconds: 300.1\npeak_vram_mb:     45060.2\ndepth: 8\nnote: hello\n';

  it('parses the last block, numbers as numbers', () => {
    expect(parseSummary(log)).toEqual({
      val_bpb: 0.9979,
      training_seconds: 300.1,
      peak_vram_mb: 45060.2,
      depth: 8,
      note: 'hello',
    });
    expect(memoryGb(parseSummary(log))).toBeCloseTo(44.004, 3);
  });

  it('reports a missing block, a missing key and NaN', () => {
    expect(readMetric(parseSummary('just output\n'), 'val_bpb')).toEqual({
      error: expect.stringMatching(/no summary block/),
    });
    expect(readMetric(parseSummary('---\nloss: 1\n'), 'val_bpb')).toEqual({
      error: 'the summary block has no "val_bpb" line',
    });
    expect(readMetric(parseSummary('---\nval_bpb: nan\n'), 'val_bpb')).toEqual({ error: 'val_bpb is NaN' });
    expect(readMetric(parseSummary('---\nval_bpb: 1.5\n'), 'val_bpb')).toEqual({ value: 1.5 });
  });
});

describe('keep rule', () => {
  // The original's rule is the judge's strict one (noise_runs 1): one run, any improvement kept.
  const strict = (direction: Direction) => noiseRuleOf({ direction });
  const action = (candidate: number, best: number, direction: Direction) =>
    judge({ candidate: [candidate], best: [best], sigma: null, rule: strict(direction) }).action;

  it('keeps only strict improvements in the configured direction', () => {
    // A first result (the baseline) has no best to beat: it is always kept.
    expect(judgeBaseline([1.0], null, strict('lower')).action).toBe('keep');
    expect(action(0.9, 1.0, 'lower')).toBe('keep');
    expect(action(1.0, 1.0, 'lower')).toBe('discard');
    expect(action(1.1, 1.0, 'higher')).toBe('keep');
    expect(action(0.9, 1.0, 'higher')).toBe('discard');
  });
});

describe('results.tsv', () => {
  it('formats rows like the original', () => {
    const base = { commit: 'a1b2c3d4e5f6', parent_commit: 'ffffffffffff', description: 'LR 0.001 → 0.002' };
    expect(resultsRow({ ...base, metric: 0.9979, memory_gb: 44.0042, status: 'keep' })).toBe(
      'a1b2c3d\t0.997900\t44.0\tkeep\tLR 0.001 → 0.002',
    );
    expect(
      resultsRow({ ...base, metric: null, memory_gb: 3, status: 'crash', description: 'tab\there\nnewline' }),
    ).toBe('a1b2c3d\t0.000000\t0.0\tcrash\ttab here newline');
    expect(RESULTS_HEADER).toBe('commit\tval_bpb\tmemory_gb\tstatus\tdescription');
    expect(parseResults(`${RESULTS_HEADER}\na1b2c3d\t0.997900\t44.0\tkeep\tx\n`)).toEqual([
      { commit: 'a1b2c3d', metric: 0.9979, memory_gb: 44, status: 'keep', description: 'x' },
    ]);
    expect(() => parseResults('commit\tbpb\n')).toThrow(/unexpected header/);
  });
});

describe('journal', () => {
  const start = {
    type: 'experiment_start',
    ts: '2026-11-30T00:00:00Z',
    n: 1,
    parent_commit: 'abcdef1',
    description: 'x',
  };
  it('drops a torn last line but refuses a bad line in the middle', () => {
    const text = JSON.stringify(start) + '\n{"type":"exper';
    expect(parseJournal(text)).toHaveLength(1);
    expect(() => parseJournal('{"type":"exper\n' + JSON.stringify(start) + '\n')).toThrow(/line 1 is not JSON/);
    expect(() => parseJournal(JSON.stringify({ ...start, n: -1 }) + '\n')).toThrow(/line 1 is invalid/);
  });
});
