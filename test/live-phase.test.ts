/**
 * What an experiment in flight is doing, as its engine writes it into state.json (LivePhase):
 * `train` from the moment a training run starts, each run counted down from its own start, and
 * `evaluate` only once the run printed its `evaluating` line. The panel's strip reads these.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RunStateFile, type LivePhase } from '../src/core/journal/run-state';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { LogCapture } from '../src/engine/experiment/log-capture';
import { Loop } from '../src/engine/run/setup';
import { resolvePython } from '../src/engine/workspace/python';
import { runPaths } from '../src/engine/workspace/workspace';
import { makeWorkspace, ScriptedProposer, standInTrain } from './helpers/workspace';

/** A stand-in that trains for a while, says it evaluates, evaluates for a while, then prints its summary. */
function slowTrain(): string {
  return standInTrain({ noSummary: true }).concat(
    [
      'time.sleep(1.2)',
      'print("evaluating val_bpb", flush=True)',
      'time.sleep(1.2)',
      'print("---")',
      'print("val_bpb:          1.000000")',
      '',
    ].join('\n'),
  );
}

describe('state.json says what an experiment in flight does', () => {
  it('train from each run’s own start, evaluate only once the run says so', async () => {
    const dir = makeWorkspace({ train: slowTrain() });
    const loop = new Loop({
      dir,
      tag: 't1',
      proposer: new ScriptedProposer([]),
      executor: new SubprocessExecutor(1),
      python: resolvePython(),
      signal: new AbortController().signal,
      // The baseline's two runs: the second is counted down from its own start.
      overrides: { noise_runs: 2 },
    });
    const file = runPaths(dir, 't1').state;
    const seen: Array<{ phase: LivePhase; start: string; at: number }> = [];
    const watch = setInterval(() => {
      try {
        const state = RunStateFile.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
        const f = state.in_flight[0];
        const last = seen[seen.length - 1]?.phase;
        if (f?.phase && JSON.stringify(f.phase) !== JSON.stringify(last)) {
          seen.push({ phase: f.phase, start: f.ts, at: Date.now() });
        }
      } catch {
        // Not written yet.
      }
    }, 40);
    try {
      await loop.run();
    } finally {
      clearInterval(watch);
    }
    const trainEvaluate = seen.filter(s => s.phase.name === 'train' || s.phase.name === 'evaluate');
    expect(trainEvaluate.map(s => [s.phase.name, s.phase.run?.i, s.phase.run?.purpose])).toEqual([
      ['train', 1, 'measure'],
      ['evaluate', 1, 'measure'],
      ['train', 2, 'noise'],
      ['evaluate', 2, 'noise'],
    ]);
    const [, , second] = trainEvaluate;
    // The second run's countdown starts when it started, not when the experiment did.
    expect(Date.parse(second.phase.run!.started)).toBeGreaterThan(Date.parse(second.start) + 2000);
    expect(second.phase.run!.budget_s).toBe(1);
    // Evaluating came from the run's line, about 1.2 s into its run, not at once.
    const evaluate = trainEvaluate[1];
    expect(Date.parse(evaluate.phase.since) - Date.parse(evaluate.phase.run!.started)).toBeGreaterThan(1000);
    // Once recorded, nothing is in flight and no phase is left behind.
    const end = RunStateFile.parse(JSON.parse(fs.readFileSync(file, 'utf8')));
    expect(end.in_flight).toEqual([]);
  }, 60_000);
});

describe('LogCapture’s evaluating line', () => {
  it('is found at a line’s start even when the line comes in pieces, and only there', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-log-'));
    const calls: string[] = [];
    const log = new LogCapture(path.join(dir, 'a.log'));
    log.onEvaluating = () => calls.push('now');
    log.write(Buffer.from('step 1 | loss 3.2 | not evaluating yet\nstep 2'));
    expect(calls).toEqual([]);
    log.write(Buffer.from(' | loss 3.1\neval'));
    expect(calls).toEqual([]);
    log.write(Buffer.from('uating val_bpb\n'));
    expect(calls).toEqual(['now']);
    log.write(Buffer.from('evaluating again\n'));
    expect(calls).toEqual(['now']);
    log.close();
    // Cut inside the word, in a chunk of its own, and after a long line: still found, once.
    for (const pieces of [
      ['x'.repeat(200), '\nevaluatin', 'g\n'],
      ['step 9\nEVAL', 'UATING\n'],
      ['a long line '.repeat(20), 'evaluating is no line start here\n', 'done\n'],
    ]) {
      const found: number[] = [];
      const capture = new LogCapture(path.join(dir, 'b.log'));
      capture.onEvaluating = () => found.push(1);
      pieces.forEach(p => capture.write(Buffer.from(p)));
      capture.close();
      expect(found, JSON.stringify(pieces)).toEqual(pieces[0].startsWith('a long') ? [] : [1]);
    }
  });
});
