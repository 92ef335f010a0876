/** A run's loss curve and step time, read from its log by the default formats or program.md's log_pattern. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { compileLogPattern, DEFAULT_LOG_PATTERN, logPatternProblem, MAX_LINE } from '../src/core/config/log-pattern';
import { parseProgram, resolveConfig } from '../src/core/config/program';
import {
  curveOf,
  fmtCurve,
  logWindows,
  runCurve,
  useLogPattern,
  WINDOW_BYTES,
} from '../src/engine/proposers/claude/curve';
import { diagnostics, fullEntry } from '../src/engine/proposers/claude/history';
import { record } from './helpers/records';

const ROOT = path.join(__dirname, '..');
const PYTHON =
  process.env.AUTORESEARCH_PYTHON ??
  (fs.existsSync(path.join(ROOT, '.venv/bin/python')) ? path.join(ROOT, '.venv/bin/python') : 'python3');
let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-curve-'));
});
afterEach(() => useLogPattern(null));

function log(name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

describe('the default log formats', () => {
  it.each([
    ['step 120 | loss 3.21 | 41.2 ms', { step: 120, loss: 3.21, ms: 41.2 }],
    ['step:120 loss=3.21 dt=41ms', { step: 120, loss: 3.21, ms: 41 }],
    [
      'step 00120/01000 (12.0%) | loss: 3.213000 | lrm: 1.00 | dt: 41ms | tok/sec: 12,000',
      { step: 120, loss: 3.213, ms: 41 },
    ],
    ['iter 7: train_loss 2.5e-1, time 12.5ms', { step: 7, loss: 0.25, ms: 12.5 }],
    [
      'step 3 | loss 5.1477 | lr 5.69e-05 | 621.7 ms/step | elapsed 2.1s',
      { step: 3, loss: 5.1477, ms: 621.7, elapsed: 2.1 },
    ],
  ])('reads %s', (line, facts) => {
    expect(DEFAULT_LOG_PATTERN.read(line)).toEqual(facts);
  });

  it('skips validation losses and lines without a loss', () => {
    expect(DEFAULT_LOG_PATTERN.read('step 500 | val_loss 3.1')).toBeNull();
    expect(DEFAULT_LOG_PATTERN.read('step 500 | val loss 3.1')).toBeNull();
    expect(DEFAULT_LOG_PATTERN.read('evaluating val_bpb')).toBeNull();
  });

  it('builds 7 evenly spaced points and the median step time from \\r-separated progress lines', () => {
    const lines = Array.from(
      { length: 100 },
      (_, i) => `step ${(i + 1) * 10} | loss ${(5 - i * 0.03).toFixed(2)} | dt: ${i === 0 ? 900 : 40 + (i % 3)}ms`,
    );
    const curve = runCurve(log('progress.log', lines.join('\r') + '\n---\nval_bpb: 1.0\nloss 0.1\n'));
    expect(curve!.points.map(p => p.step)).toEqual([10, 180, 340, 510, 670, 840, 1000]);
    expect(curve!.points[0].loss).toBe(5);
    expect(curve!.points.at(-1)!.loss).toBe(2.03);
    // The first step's warm-up is left out; the summary's `loss` after --- is not a training line.
    expect(curve!.msPerStep).toBe(41);
    expect(curve!.cut).toBe(false);
    expect(fmtCurve(curve!)).toBe('10: 5 · 180: 4.49 · 340: 4.01 · 510: 3.5 · 670: 3.02 · 840: 2.51 · 1000: 2.03');
  });

  it('derives the step time from the seconds elapsed, and from the summary when the log has none', () => {
    const file = log(
      'elapsed.log',
      'step 1 | loss 5.5 | elapsed 0.0s\nstep 101 | loss 4.0 | elapsed 2.0s\nstep 201 | loss 3.5 | elapsed 5.0s\n',
    );
    expect(runCurve(file)!.msPerStep).toBe(25);
    const bare = log('bare.log', 'loss 3.0\nloss 2.5\n');
    const r = record(1, { log_path: bare, summary: { num_steps: 400, training_seconds: 10 } });
    expect(curveOf(r)).toEqual({
      points: [
        { step: 1, loss: 3 },
        { step: 2, loss: 2.5 },
      ],
      msPerStep: 25,
      cut: false,
    });
  });
});

describe('a declared log_pattern', () => {
  it('compiles a template with placeholders and {*} into a matcher', () => {
    const p = compileLogPattern('it={step} {*}L:{loss} {*}took {s}s');
    expect(p.read('it=12 lr=0.1 L:3.5 x took 0.04s')).toEqual({ step: 12, loss: 3.5, s: 0.04 });
    expect(p.read('it=12 L=3.5')).toBeNull();
    useLogPattern('it={step} {*}L:{loss} {*}took {s}s');
    const file = log(
      'custom.log',
      'it=1 L:5.0 took 0.05s\nit=2 L:4.0 took 0.03s\nit=3 L:3.0 took 0.03s\nstep 4 | loss 9.9\n',
    );
    expect(runCurve(file)).toEqual({
      points: [
        { step: 1, loss: 5 },
        { step: 2, loss: 4 },
        { step: 3, loss: 3 },
      ],
      msPerStep: 30,
      cut: false,
    });
    // The same log under the defaults: its own cache entry, the last line the only one they read.
    useLogPattern(null);
    expect(runCurve(file)!.points).toEqual([{ step: 4, loss: 9.9 }]);
  });

  it('is a program.md front matter key, refused with a one-line fix when it cannot work', () => {
    const ok = parseProgram('---\nlog_pattern: "step {step} | loss {loss} | {ms}ms"\n---\nGo.\n');
    expect(resolveConfig(ok.frontMatter).log_pattern).toBe('step {step} | loss {loss} | {ms}ms');
    for (const [template, why] of [
      ['step {step} | lr {lr}', /unknown placeholder \{lr\}/],
      ['step {step}', /needs a \{loss\} placeholder/],
      ['{step}{loss}', /side by side/],
      ['{loss} {loss}', /twice/],
      ['x'.repeat(300) + '{loss}', /one line of 1 to 200 characters/],
    ] as const) {
      expect(logPatternProblem(template)).toMatch(why);
      expect(() =>
        resolveConfig(parseProgram(`---\nlog_pattern: ${JSON.stringify(template)}\n---\n`).frontMatter),
      ).toThrow(why);
    }
  });

  it('stays linear on a pathological template and line', () => {
    // Templates that would backtrack catastrophically as regular expressions: numbers and spaces side by side.
    const p = compileLogPattern('{step} {*}{ms}.{*} {s} {*}{loss}e');
    const lines = ['1'.repeat(100_000), `${'1 '.repeat(5000)}x`, `${'1.'.repeat(5000)}`, `${' '.repeat(10_000)}1`];
    const t0 = performance.now();
    for (let i = 0; i < 200; i++) for (const line of lines) p.read(line);
    for (let i = 0; i < 200; i++) for (const line of lines) DEFAULT_LOG_PATTERN.read(`loss${line}ms${line}`);
    expect(performance.now() - t0).toBeLessThan(2000);
    // Only the line's first MAX_LINE characters are read.
    expect(compileLogPattern('loss {loss}').read(`${'x'.repeat(MAX_LINE)} loss 1.5`)).toBeNull();
  });
});

describe('a flooded log', () => {
  it('is read in two bounded windows, its middle noted as not read', () => {
    const file = path.join(dir, 'flood.log');
    const fd = fs.openSync(file, 'w');
    fs.writeSync(fd, 'step 1 | loss 5.5 | 40 ms\n');
    const junk = Buffer.alloc(1024 * 1024, 'x\n');
    for (let i = 0; i < 64; i++) fs.writeSync(fd, junk);
    fs.writeSync(fd, 'step 9000 | loss 2.25 | 42 ms\n---\nval_bpb: 1.2\n');
    fs.closeSync(fd);
    const { lines, cut } = logWindows(file);
    expect(cut).toBe(true);
    expect(lines.length).toBeLessThan(WINDOW_BYTES);
    const curve = runCurve(file)!;
    expect(curve.points).toEqual([
      { step: 1, loss: 5.5 },
      { step: 9000, loss: 2.25 },
    ]);
    expect(fmtCurve(curve)).toMatch(/its middle was not read/);
  });

  it('is not read through a link a run planted', () => {
    const link = path.join(dir, 'link.log');
    fs.symlinkSync(log('target.log', 'step 1 | loss 1.0\n'), link);
    expect(runCurve(link)).toBeNull();
  });
});

describe("what the model is shown of a run's training", () => {
  it('gives the step time and each run of a multi-run experiment in the line, the curve in full', () => {
    const file = log(
      '0004.log',
      Array.from({ length: 20 }, (_, i) => `step ${i * 50} | loss ${(4 - i * 0.1).toFixed(1)} | 30 ms`).join('\n'),
    );
    const r = record(4, {
      log_path: file,
      summary: { num_steps: 1000 },
      runs: [4.85, 6.46, 4.87].map((metric, i) => ({ k: i + 1, seed: i, metric, run_s: 8, log_path: file })),
    });
    expect(diagnostics(r)).toBe('steps 1000 · loss 2.1 · 30 ms/step · runs 4.85 / 6.46 / 4.87');
    expect(fullEntry(r)).toContain(
      'Training loss by step: 0: 4 · 150: 3.7 · 300: 3.4 · 500: 3 · 650: 2.7 · 800: 2.4 · 950: 2.1',
    );
  });

  it("reads the curve that tiny-cpu's train.py prints", () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-tiny-curve-'));
    for (const f of ['train.py', 'prepare.py'])
      fs.copyFileSync(path.join(ROOT, 'templates/tiny-cpu', f), path.join(work, f));
    const out = execFileSync(PYTHON, ['train.py'], {
      cwd: work,
      env: { ...process.env, AUTORESEARCH_BUDGET_S: '1.5', OMP_NUM_THREADS: '1' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    const file = log('tiny.log', out);
    const steps = Number(/^num_steps:\s+(\d+)/m.exec(out)![1]);
    const curve = runCurve(file)!;
    expect(curve.points[0].step).toBe(1);
    expect(curve.points.at(-1)!.step).toBe(steps);
    // About ten lines at any budget (one every tenth of it), each with its step time but the first.
    expect(out.match(/ ms\/step \| elapsed /g)!.length).toBeGreaterThanOrEqual(Math.min(steps - 1, 3));
    expect(curve.msPerStep).toBeGreaterThan(0);
  }, 150_000);
});
