/** The panel's models: the run model fed by event-stream messages, and program.md's front matter. */
import { describe, expect, it } from 'vitest';
import type { ExperimentStartRecord, JournalRecord, RunStartRecord } from '../../src/core/journal';
import { frontMatterEntries, frontMatterNumber, joinProgram, splitProgram } from '../../src/lab/panel/front-matter';
import type { EventMessage } from '../../src/lab/panel/run-events';
import { LIVE_LOG_LINES, RunModel } from '../../src/lab/panel/run-model';
import { describeBest, describeNoise, describeSandbox, describeState } from '../../src/lab/panel/run-state';
import { deriveRunState } from '../../src/core/run-state';
import type { IRunStateFile } from '../../src/lab/panel/run-events';
import { noisyJournal } from '../helpers/noisy-journal';
import { nullTranslator } from '@jupyterlab/translation';

const trans = nullTranslator.load('jupyterlab_autoresearch');
import { record } from '../helpers/records';

const runStart: RunStartRecord = {
  type: 'run_start',
  ts: '2026-11-30T00:00:00Z',
  tag: 't1',
  branch: 'autoresearch/t1',
  resume: false,
  base_commit: 'a'.repeat(40),
  proposer: 'offline',
  seed: 0,
  readonly_hashes: {},
  engine_version: '0.1.0',
  pid: 1,
  config: {
    metric: 'loss',
    direction: 'lower',
    budget_s: 30,
    timeout_s: 90,
    run: 'python train.py',
    editable: ['train.py'],
    readonly: [],
  },
};
const start = (n: number): ExperimentStartRecord => ({
  type: 'experiment_start',
  ts: '2026-11-30T00:00:01Z',
  n,
  parent_commit: 'a'.repeat(40),
  description: `try ${n}`,
});

function feed(model: RunModel, messages: EventMessage[]): void {
  messages.forEach(m => model.handle(m));
}
let index = 0;
const rec = (r: JournalRecord): EventMessage => ({ type: 'records', start: index++, records: [r] });
const state = (s: 'running' | 'stopped' | 'died', stopping = false): EventMessage => ({
  type: 'state',
  tag: 't1',
  state: s,
  pid: s === 'running' ? 1 : null,
  stopping,
  engine_tag: s === 'running' ? 't1' : null,
  records: index,
  in_flight: null,
});

describe('RunModel', () => {
  it('replays a journal quietly, then announces what happens live', () => {
    const model = new RunModel();
    model.reset('t1');
    const added: Array<[number, boolean]> = [];
    const bests: number[] = [];
    model.experimentAdded.connect((_, e) => added.push([e.record.n, e.live]));
    model.newBest.connect((_, r) => bests.push(r.n));
    feed(model, [
      rec(runStart),
      rec(start(0)),
      rec(record(0, { status: 'keep', cost_usd: 0.01 })),
      rec(start(1)),
      rec(record(1, { status: 'keep', metric: 0.5, cost_usd: 0.02 })),
      rec(start(2)),
    ]);
    // Backlog: nothing is news yet, the best and cost are known.
    expect(model.caughtUp).toBe(false);
    expect(model.best?.n).toBe(1);
    expect(model.costUsd).toBeCloseTo(0.03, 9);
    expect(model.metric).toBe('loss');
    expect(model.budgetS).toBe(30);
    expect(model.current?.n).toBe(2);
    feed(model, [state('running')]);
    expect(model.caughtUp).toBe(true);
    expect(model.state).toBe('running');

    feed(model, [
      rec(record(2, { status: 'discard', metric: 0.7 })),
      rec(start(3)),
      rec(record(3, { status: 'keep', metric: 0.4 })),
    ]);
    expect(added).toEqual([
      [0, false],
      [1, false],
      [2, true],
      [3, true],
    ]);
    expect(bests).toEqual([3]);
    expect(model.best?.n).toBe(3);
    expect(model.inFlight.size).toBe(0);
  });

  it('follows the live log of the experiment in flight, bounded, and drops it when it ends', () => {
    const model = new RunModel();
    model.reset('t1');
    feed(model, [rec(runStart), rec(start(0)), state('running')]);
    const many = Array.from({ length: LIVE_LOG_LINES + 50 }, (_, i) => `step ${i}`);
    feed(model, [{ type: 'log', n: 0, path: 'x', reset: true, lines: many }]);
    expect(model.liveLogN).toBe(0);
    expect(model.liveLog).toHaveLength(LIVE_LOG_LINES);
    expect(model.liveLog.at(-1)).toBe(`step ${LIVE_LOG_LINES + 49}`);
    feed(model, [rec(record(0, { status: 'keep' }))]);
    expect(model.liveLogN).toBeNull();
    expect(model.liveLog).toEqual([]);
  });

  it('clears what was in flight when the engine died or the run ended', () => {
    const model = new RunModel();
    model.reset('t1');
    feed(model, [rec(runStart), rec(start(0)), state('died')]);
    expect(model.state).toBe('died');
    expect(model.inFlight.size).toBe(0);
    model.reset('t2');
    feed(model, [
      rec(runStart),
      rec(start(0)),
      rec({ type: 'run_end', ts: 'x', reason: 'stop', message: null, best_commit: null, best_metric: null }),
      state('stopped'),
    ]);
    expect(model.runEnd?.reason).toBe('stop');
    expect(model.current).toBeNull();
  });
});

describe('describeState', () => {
  it('says what the run is doing, each worker’s experiment included', () => {
    const model = new RunModel();
    expect(describeState(model, trans)).toBe('no runs yet');
    model.reset('t1');
    feed(model, [rec(runStart), rec(start(0)), state('running')]);
    expect(describeState(model, trans)).toBe('#0 training');
    feed(model, [rec(record(0, { status: 'keep' })), rec(start(1)), rec(start(2))]);
    expect(describeState(model, trans)).toBe('#1, #2 training');
    feed(model, [rec(record(1)), rec(record(2))]);
    expect(describeState(model, trans)).toBe('proposing #3');
    feed(model, [
      rec({ type: 'run_end', ts: 'x', reason: 'stop', message: null, best_commit: null, best_metric: null }),
      state('stopped'),
    ]);
    expect(describeState(model, trans)).toBe('stopped (stop)');
  });
});

describe('describeSandbox', () => {
  it('says whether the last run was sandboxed, and nothing before a run says', () => {
    const model = new RunModel();
    model.reset('t1');
    const runs = noisyJournal().filter(r => r.type === 'run');
    feed(model, [rec(runStart), rec(runs[0])]); // a journal from before the run guard
    expect(describeSandbox(model, trans)).toBeNull();
    feed(model, [rec({ ...runs[1], sandbox: 'on' } as JournalRecord)]);
    expect(describeSandbox(model, trans)).toMatchObject({ words: 'sandboxed', on: true });
    feed(model, [rec({ ...runs[2], sandbox: 'off' } as JournalRecord)]);
    expect(describeSandbox(model, trans)).toMatchObject({
      words: 'not sandboxed',
      on: false,
      title: expect.stringMatching(/first line of each run's log says why/),
    });
  });
});

describe('RunModel with run records (the noise-aware engine)', () => {
  it('keeps run records apart from experiments: they neither finish one nor count as one', () => {
    const model = new RunModel();
    model.reset('t1');
    const records = noisyJournal();
    const added: number[] = [];
    model.experimentAdded.connect((_, e) => added.push(e.record.n));
    // #2 in flight: its first run is journaled, the experiment is not finished yet.
    const firstRunOf2 = records.findIndex(r => r.type === 'run' && r.n === 2);
    feed(model, [
      ...records.slice(0, firstRunOf2).map(rec),
      rec(start(2)),
      rec(records[firstRunOf2]),
      state('running'),
    ]);
    expect(model.experiments.map(e => e.n)).toEqual([0, 1]);
    expect(model.inFlight.has(2)).toBe(true);
    expect(describeState(model, trans)).toBe('#2 training');
    feed(model, records.slice(firstRunOf2 + 1).map(rec));
    expect(added).toEqual([0, 1, 2, 3, 4, 5]);
    expect(model.runs).toHaveLength(records.filter(r => r.type === 'run').length);
    expect(model.inFlight.size).toBe(0);
    model.reset('t2');
    expect(model.runs).toEqual([]);
    expect(model.sigma).toBeNull();
    expect(model.trust).toBeNull();
  });

  it('the status gives the best as mean ± se and σ; the line above the chart the trust cost', () => {
    const model = new RunModel();
    model.reset('t1');
    feed(model, [...noisyJournal().map(rec), state('stopped')]);
    // #2's code ran 3 times (0.980, 0.984, 0.983): σ pooled over #0, #2 and #3's runs.
    expect(model.best).toMatchObject({ n: 2, runs: 3 });
    expect(model.best!.metric).toBeCloseTo(0.982333, 6);
    expect(model.sigma!.df).toBe(2 + 2 + 2);
    expect(describeBest(model, trans)).toMatch(/^best 0\.9823 ± 0\.00\d\d · σ 0\.00\d\d \(6 df\)$/);
    const [head, trust] = describeNoise(model, trans);
    expect(head).toMatch(/^σ 0\.00\d\d \(6 df\) · best val_bpb 0\.982333 ± 0\.00\d\d \(3 runs\) \(#2\)$/);
    // 11 runs of 60 s (5 first runs, the crash's included, 2 noise, 3 confirmation, 1 re-measure
    // of the best); one keep gained 0.018 for $0.05 of proposals: 11 min / 18 and $0.05 / 18.
    expect(trust).toBe(
      'trust: 6 of 11 runs on measurement and confirmation (2 noise, 3 confirmation, 1 re-measuring the best) · 0.6 accelerator-min and $0.0028 per 0.001 gained',
    );
  });

  it('a run from before repeats shows what it always did', () => {
    const model = new RunModel();
    model.reset('t1');
    feed(model, [rec(runStart), rec(record(0, { status: 'keep', metric: 0.99 })), state('stopped')]);
    expect(model.sigma).toBeNull();
    expect(model.trust).toBeNull();
    expect(model.best).toEqual({ n: 0, metric: 0.99, runs: null, stderr: null });
    expect(describeBest(model, trans)).toBe('best 0.9900');
    expect(describeNoise(model, trans)).toEqual([]);
  });
});

/** What the server sends after the replay and on every change: the engine's state file for these records. */
const runState = (records: JournalRecord[], over: Partial<IRunStateFile> = {}): EventMessage => ({
  type: 'run_state',
  run_state: { ...deriveRunState(records, 0, 't1'), ...over },
});

describe('RunModel with the engine’s run_state', () => {
  it('shows the best, σ, counts, cost and what is in flight as the state file says', () => {
    const model = new RunModel();
    model.reset('t1');
    const records = noisyJournal();
    const firstRunOf2 = records.findIndex(r => r.type === 'run' && r.n === 2);
    const replay = [...records.slice(0, firstRunOf2), start(2), records[firstRunOf2]];
    feed(model, [...replay.map(rec), state('running')]);
    const before = { best: model.best, sigma: model.sigma };
    feed(model, [runState(replay)]);
    const file = deriveRunState(replay, 0, 't1');
    expect(model.runState?.best?.n).toBe(file.best?.n);
    expect(model.best).toEqual({
      n: file.best!.n,
      metric: file.best!.metric,
      runs: file.best!.runs,
      stderr: file.best!.stderr,
    });
    // The same figures the records gave before it came (the engine reads its journal as the panel did)…
    expect(model.best?.n).toBe(before.best?.n);
    expect(model.sigma).toEqual({ sigma: file.sigma, df: null });
    expect(model.sigma?.sigma).toBeCloseTo(before.sigma!.sigma!, 12);
    expect(model.counts).toEqual(file.counts);
    expect([...model.inFlight.keys()]).toEqual([2]);
    expect(describeState(model, trans)).toBe('#2 training');
    // …with σ's degrees of freedom left to the trust line, which the file does not carry.
    expect(describeBest(model, trans)).toMatch(/^best \d\.\d{4}( ± \S+)? · σ \S+$/);
    expect(describeNoise(model, trans)[1]).toMatch(/^trust: /);
  });

  it('takes the file’s word over the records, and announces a best when the file’s changes', () => {
    const model = new RunModel();
    model.reset('t1');
    const bests: number[] = [];
    model.newBest.connect((_, b) => bests.push(b.n));
    const replay = [runStart, record(0, { status: 'keep', metric: 0.9 })];
    feed(model, [...replay.map(rec), state('running'), runState(replay)]);
    // A keep the file has not counted as the best (a noise-aware engine may keep and still
    // estimate another best): no news from the record, the file decides.
    feed(model, [rec(start(1)), rec(record(1, { status: 'keep', metric: 0.8, cost_usd: 0.5 }))]);
    expect(bests).toEqual([]);
    expect(model.best?.n).toBe(0);
    expect(model.costUsd).toBe(0);
    expect(model.inFlight.size).toBe(0); // the file listed nothing in flight
    feed(model, [
      runState([...replay, start(1), record(1, { status: 'keep', metric: 0.8, cost_usd: 0.5 })], { cost_usd: 0.5 }),
    ]);
    expect(bests).toEqual([1]);
    expect(model.best).toMatchObject({ n: 1, metric: 0.8 });
    expect(model.costUsd).toBe(0.5);
  });

  it('lists nothing in flight for a run no engine works on', () => {
    const model = new RunModel();
    model.reset('t1');
    const replay = [runStart, start(0)];
    feed(model, [...replay.map(rec), state('died'), runState(replay, { status: 'died' })]);
    expect(model.runState?.in_flight).toHaveLength(1);
    expect(model.inFlight.size).toBe(0);
    expect(describeState(model, trans)).toBe('died (resumable)');
  });
});

describe('program.md front matter', () => {
  const text = '---\nbudget_s: 60\nmetric: val_bpb\n---\n\n# Goal\n\nLower is better.\n';

  it('splits the settings from the prose and joins them back byte for byte', () => {
    const parts = splitProgram(text);
    expect(parts.frontMatter).toBe('---\nbudget_s: 60\nmetric: val_bpb\n---\n');
    expect(parts.body).toBe('# Goal\n\nLower is better.\n');
    expect(joinProgram(parts)).toBe(text);
    expect(joinProgram({ ...parts, body: '# New goal\n' })).toBe(
      '---\nbudget_s: 60\nmetric: val_bpb\n---\n\n# New goal\n',
    );
    expect(frontMatterEntries(parts.frontMatter)).toEqual([
      ['budget_s', '60'],
      ['metric', 'val_bpb'],
    ]);
    expect(frontMatterNumber(parts.frontMatter, 'budget_s')).toBe(60);
    expect(frontMatterNumber(parts.frontMatter, 'metric')).toBeNull();
  });

  it('leaves a program without front matter as it is', () => {
    expect(splitProgram('# Just prose\n')).toEqual({ frontMatter: '', body: '# Just prose\n' });
    expect(joinProgram({ frontMatter: '', body: '# Just prose\n' })).toBe('# Just prose\n');
    // A horizontal rule later in the text is not front matter.
    expect(splitProgram('# T\n---\nx: 1\n---\n').frontMatter).toBe('');
  });
});
