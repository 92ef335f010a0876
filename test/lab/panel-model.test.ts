/**
 * The panel's models: the run model fed by event-stream messages (records, then the engine's
 * state file for them, built by deriveRunState as the engine writes it), and program.md's front matter.
 */
import { describe, expect, it } from 'vitest';
import type { ExperimentStartRecord, JournalRecord } from '../../src/core/journal/journal';
import { frontMatterEntries, frontMatterNumber, joinProgram, splitProgram } from '../../src/lab/panel/front-matter';
import type { EventMessage } from '../../src/lab/panel/run/run-events';
import { LIVE_LOG_LINES, RunModel } from '../../src/lab/panel/run/run-model';
import { describeBest, describeNoise, describeSandbox, describeState } from '../../src/lab/panel/run/state-words';
import { deriveRunState } from '../../src/core/journal/run-state';
import { trustReport } from '../../src/core/rule/trust-cost';
import { noisyJournal } from '../helpers/noisy-journal';
import { nullTranslator } from '@jupyterlab/translation';
import { record, runStartRecord } from '../helpers/records';

const trans = nullTranslator.load('jupyterlab_autoresearch');

const runStart = runStartRecord({ metric: 'loss' });
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

/**
 * The server's side of the stream for one journal: appended records go out as a records
 * message followed by the engine's state file for every record so far (deriveRunState, as the
 * engine writes it after each append), as the run follower sends them.
 */
class Journal {
  readonly records: JournalRecord[] = [];

  constructor(private readonly tag = 't1') {}

  /** The messages for these records appended; `status` stands for the server's liveness ("died"). */
  append(records: JournalRecord[], status?: 'died'): EventMessage[] {
    const start = this.records.length;
    this.records.push(...records);
    return [{ type: 'records', start, records }, this.runState(status)];
  }

  /** Each record appended on its own, as an engine appends them. */
  appendEach(records: JournalRecord[]): EventMessage[] {
    return records.flatMap(r => this.append([r]));
  }

  runState(status?: 'died'): EventMessage {
    const file = deriveRunState(this.records, 0, this.tag);
    return { type: 'run_state', run_state: status ? { ...file, status } : file };
  }
}

const state = (s: 'running' | 'stopped' | 'died', records: number, stopping = false): EventMessage => ({
  type: 'state',
  tag: 't1',
  state: s,
  pid: s === 'running' ? 1 : null,
  stopping,
  engine_tag: s === 'running' ? 't1' : null,
  records,
  in_flight: null,
});
const END: JournalRecord = {
  type: 'run_end',
  ts: 'x',
  reason: 'stop',
  message: null,
  best_commit: null,
  best_metric: null,
};

describe('RunModel', () => {
  it('replays a journal quietly, then announces what happens live', () => {
    const model = new RunModel();
    model.reset('t1');
    const journal = new Journal();
    const added: Array<[number, boolean]> = [];
    const bests: number[] = [];
    model.experimentAdded.connect((_, e) => added.push([e.record.n, e.live]));
    model.newBest.connect((_, r) => bests.push(r.n));
    feed(
      model,
      journal.appendEach([
        runStart,
        start(0),
        record(0, { status: 'keep', cost_usd: 0.01 }),
        start(1),
        record(1, { status: 'keep', metric: 0.5, cost_usd: 0.02 }),
        start(2),
      ]),
    );
    // Backlog: nothing is news yet, the best and cost are known.
    expect(model.caughtUp).toBe(false);
    expect(model.best?.n).toBe(1);
    expect(model.costUsd).toBeCloseTo(0.03, 9);
    expect(model.metric).toBe('loss');
    expect(model.budgetS).toBe(30);
    expect(model.current?.n).toBe(2);
    feed(model, [state('running', journal.records.length)]);
    expect(model.caughtUp).toBe(true);
    expect(model.state).toBe('running');

    feed(
      model,
      journal.appendEach([
        record(2, { status: 'discard', metric: 0.7 }),
        start(3),
        record(3, { status: 'keep', metric: 0.4 }),
      ]),
    );
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

  it('before the first run_state its figures are empty: the records alone are not read for them', () => {
    const model = new RunModel();
    model.reset('t1');
    const records = [...noisyJournal(), start(6)];
    feed(model, [{ type: 'records', start: 0, records }, state('running', records.length)]);
    expect(model.experiments).toHaveLength(6);
    expect([model.best, model.sigma, model.trust, model.sandbox, model.runState]).toEqual([
      null,
      null,
      null,
      null,
      null,
    ]);
    expect([model.costUsd, model.experimentCount, model.counts, model.inFlight.size]).toEqual([0, 0, {}, 0]);
    expect(describeBest(model, trans)).toBe('');
    expect(describeNoise(model, trans)).toEqual([]);
    expect(describeState(model, trans)).toBe('proposing #0');
    const file = deriveRunState(records, 0, 't1');
    feed(model, [{ type: 'run_state', run_state: file }]);
    const { n, metric, runs, stderr } = file.best!;
    expect(model.best).toEqual({ n, metric, runs, stderr });
    expect(model.sigma).toBe(file.sigma);
    expect(model.trust).toEqual(file.trust);
    expect(model.costUsd).toBe(file.cost_usd);
    expect(model.counts).toEqual(file.counts);
    expect(model.experimentCount).toBe(6);
    expect([...model.inFlight.keys()]).toEqual([6]);
    expect(describeState(model, trans)).toBe('#6 training');
  });

  it('follows the live log of the experiment in flight, bounded, and drops it when it ends', () => {
    const model = new RunModel();
    model.reset('t1');
    const journal = new Journal();
    feed(model, [...journal.append([runStart, start(0)]), state('running', 2)]);
    const many = Array.from({ length: LIVE_LOG_LINES + 50 }, (_, i) => `step ${i}`);
    feed(model, [{ type: 'log', n: 0, path: 'x', reset: true, lines: many }]);
    expect(model.liveLogN).toBe(0);
    expect(model.liveLog).toHaveLength(LIVE_LOG_LINES);
    expect(model.liveLog.at(-1)).toBe(`step ${LIVE_LOG_LINES + 49}`);
    feed(model, journal.append([record(0, { status: 'keep' })]));
    expect(model.liveLogN).toBeNull();
    expect(model.liveLog).toEqual([]);
  });

  it('clears what was in flight when the engine died or the run ended', () => {
    const model = new RunModel();
    model.reset('t1');
    feed(model, [...new Journal().append([runStart, start(0)]), state('running', 2)]);
    expect(model.inFlight.size).toBe(1);
    feed(model, [state('died', 2)]);
    expect(model.state).toBe('died');
    expect(model.inFlight.size).toBe(0);
    model.reset('t2');
    feed(model, [...new Journal('t2').append([runStart, start(0), END]), state('stopped', 3)]);
    expect(model.runEnd?.reason).toBe('stop');
    expect(model.current).toBeNull();
  });

  it('lists the state file’s experiments in flight again once the stream says an engine works on the run', () => {
    const model = new RunModel();
    model.reset('t1');
    const journal = new Journal();
    feed(model, [...journal.append([runStart, start(0)]), state('stopped', 2)]);
    expect(model.inFlight.size).toBe(0);
    feed(model, [state('running', 2)]);
    expect([...model.inFlight.keys()]).toEqual([0]);
  });
});

describe('describeState', () => {
  it('says what the run is doing, each worker’s experiment included', () => {
    const model = new RunModel();
    expect(describeState(model, trans)).toBe('no runs yet');
    model.reset('t1');
    const journal = new Journal();
    feed(model, [...journal.append([runStart, start(0)]), state('running', 2)]);
    expect(describeState(model, trans)).toBe('#0 training');
    feed(model, journal.append([record(0, { status: 'keep' }), start(1), start(2)]));
    expect(describeState(model, trans)).toBe('#1, #2 training');
    feed(model, journal.append([record(1), record(2)]));
    expect(describeState(model, trans)).toBe('proposing #3');
    feed(model, [...journal.append([END]), state('stopped', journal.records.length)]);
    expect(describeState(model, trans)).toBe('stopped (stop)');
  });
});

describe('describeSandbox', () => {
  it('says whether the last run was sandboxed, and nothing before a run says', () => {
    const model = new RunModel();
    model.reset('t1');
    const journal = new Journal();
    const runs = noisyJournal().filter(r => r.type === 'run');
    feed(model, journal.append([runStart, runs[0]])); // a journal from before the run guard
    expect(describeSandbox(model, trans)).toBeNull();
    feed(model, journal.append([{ ...runs[1], sandbox: 'on' } as JournalRecord]));
    expect(describeSandbox(model, trans)).toMatchObject({ words: 'sandboxed', on: true });
    feed(model, journal.append([{ ...runs[2], sandbox: 'off' } as JournalRecord]));
    expect(describeSandbox(model, trans)).toMatchObject({
      words: 'not sandboxed',
      on: false,
      title: expect.stringMatching(/first line of each run's log says why/),
    });
  });
});

describe('describeSandbox with changed settings', () => {
  it('says loudly that a run started with security settings nobody accepted, and names each change', () => {
    const model = new RunModel();
    model.reset('t2');
    const journal = new Journal();
    const runs = noisyJournal().filter(r => r.type === 'run');
    const changed = {
      since: 't1',
      accepted: false,
      changes: [{ setting: 'sandbox' as const, before: 'auto', after: 'off', from: 'program.md' as const }],
    };
    feed(model, journal.append([{ ...runStart, settings_changed: changed } as JournalRecord]));
    expect(describeSandbox(model, trans)).toMatchObject({ words: 'settings changed', on: false });
    feed(model, journal.append([{ ...runs[0], sandbox: 'off' } as JournalRecord]));
    const said = describeSandbox(model, trans);
    expect(said?.words).toBe('not sandboxed · settings changed');
    expect(said?.changed).toMatch(/^Security settings differ from run t1: sandbox auto → off \(from program\.md\)\./);
    // Accepted (a flag, the panel's confirmation): nothing to say beyond the sandbox itself.
    const quiet = new RunModel();
    quiet.reset('t2');
    feed(
      quiet,
      new Journal().append([{ ...runStart, settings_changed: { ...changed, accepted: true } } as JournalRecord]),
    );
    expect(describeSandbox(quiet, trans)).toBeNull();
  });
});

describe('RunModel with run records (the noise-aware engine)', () => {
  it('keeps run records apart from experiments: they neither finish one nor count as one', () => {
    const model = new RunModel();
    model.reset('t1');
    const journal = new Journal();
    const records = noisyJournal();
    const added: number[] = [];
    model.experimentAdded.connect((_, e) => added.push(e.record.n));
    // #2 in flight: its first run is journaled, the experiment is not finished yet.
    const firstRunOf2 = records.findIndex(r => r.type === 'run' && r.n === 2);
    feed(model, [
      ...journal.append([...records.slice(0, firstRunOf2), start(2), records[firstRunOf2]]),
      state('running', firstRunOf2 + 2),
    ]);
    expect(model.experiments.map(e => e.n)).toEqual([0, 1]);
    expect(model.inFlight.has(2)).toBe(true);
    expect(describeState(model, trans)).toBe('#2 training');
    feed(model, journal.appendEach(records.slice(firstRunOf2 + 1)));
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
    const records = noisyJournal();
    feed(model, [...new Journal().append(records), state('stopped', records.length)]);
    // #2's code ran 3 times (0.980, 0.984, 0.983): σ pooled over #0, #2 and #3's runs.
    expect(model.best).toMatchObject({ n: 2, runs: 3 });
    expect(model.best!.metric).toBeCloseTo(0.982333, 6);
    expect(model.trust).toEqual(trustReport(records, 'lower'));
    expect(describeBest(model, trans)).toMatch(/^best 0\.9823\d\d ± 0\.00\d\d · σ 0\.00\d\d \(6 df\)$/);
    const [head, trust] = describeNoise(model, trans);
    expect(head).toMatch(/^σ 0\.00\d\d \(6 df\) · best val_bpb 0\.982333 ± 0\.00\d\d \(3 runs\) \(#2\)$/);
    // 11 runs of 60 s (5 first runs, the crash's included, 2 noise, 3 confirmation, 1 re-measure
    // of the best); one keep gained 0.018 for $0.05 of proposals: 11 min / 18 and $0.05 / 18.
    expect(trust).toBe(
      'trust: 6 of 11 runs on measurement and confirmation (2 noise, 3 confirmation, 1 re-measuring the best) · 0.6 accelerator-min and $0.0028 per 0.001 gained',
    );
  });

  it('a run under the strict rule (noise_runs 1) says so, with no σ to wait for and no trust cost', () => {
    const model = new RunModel();
    model.reset('t1');
    const strict = noisyJournal().map(r =>
      r.type === 'run_start' ? { ...r, config: { ...r.config, noise_runs: 1 } } : r,
    );
    feed(model, [...new Journal().append(strict), state('stopped', strict.length)]);
    expect(model.trust).not.toBeNull();
    const lines = describeNoise(model, trans);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^strict rule \(noise_runs 1\): any improvement counts, σ is not measured · best val_bpb /,
    );
  });

  it('a config without noise_runs is the strict rule, as noiseRuleOf says for the engine', () => {
    const model = new RunModel();
    model.reset('t1');
    const before = noisyJournal().map(r => {
      if (r.type !== 'run_start') return r;
      const { noise_runs: _dropped, ...config } = r.config;
      return { ...r, config };
    });
    feed(model, [...new Journal().append(before), state('stopped', before.length)]);
    expect(model.runStart?.config.noise_runs).toBeUndefined();
    expect(describeNoise(model, trans)).toEqual([
      expect.stringMatching(/^strict rule \(noise_runs 1\): any improvement/),
    ]);
  });

  it('a run from before repeats shows what it always did', () => {
    const model = new RunModel();
    model.reset('t1');
    feed(model, [
      ...new Journal().append([runStart, record(0, { status: 'keep', metric: 0.99 })]),
      state('stopped', 2),
    ]);
    expect(model.sigma).toBeNull();
    expect(model.trust).toBeNull();
    expect(model.best).toEqual({ n: 0, metric: 0.99, runs: 1, stderr: null });
    expect(describeBest(model, trans)).toBe('best 0.990000');
    expect(describeNoise(model, trans)).toEqual([]);
  });
});

describe('RunModel and the new best', () => {
  it('announces a best when the state file’s changes, not on a kept record, and not the baseline', () => {
    const model = new RunModel();
    model.reset('t1');
    const journal = new Journal();
    const bests: Array<[number, string]> = [];
    model.newBest.connect((_, b) => bests.push([b.n, b.description]));
    feed(model, [...journal.append([runStart]), state('running', 1)]);
    // The baseline is not news: there was no best before it.
    feed(model, journal.append([start(0), record(0, { status: 'keep', metric: 0.9 })]));
    expect(bests).toEqual([]);
    // A kept record the file has not counted yet (the engine writes it just after the append):
    // no news until the file says so.
    const kept = record(1, { status: 'keep', metric: 0.8, cost_usd: 0.5 });
    const [appended, file] = journal.append([start(1), kept]);
    feed(model, [appended]);
    expect(bests).toEqual([]);
    expect(model.best?.n).toBe(0);
    expect(model.costUsd).toBe(0);
    feed(model, [file]);
    expect(bests).toEqual([[1, kept.description]]);
    expect(model.best).toMatchObject({ n: 1, metric: 0.8 });
    expect(model.costUsd).toBe(0.5);
  });

  it('lists nothing in flight for a run no engine works on', () => {
    const model = new RunModel();
    model.reset('t1');
    feed(model, [...new Journal().append([runStart, start(0)], 'died'), state('died', 2)]);
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

  it('shows a key whose value is a block under it on one line, a list as its items', () => {
    const fm =
      '---\nbudget_s: 60\n# a comment\ntransfer:\n  env:\n    # why\n    AUTORESEARCH_SCALE: 2\neditable:\n  - train.py\n  - model.py\nempty:\nstep: true\n---\n';
    expect(frontMatterEntries(fm)).toEqual([
      ['budget_s', '60'],
      ['transfer', 'env: AUTORESEARCH_SCALE: 2'],
      ['editable', 'train.py, model.py'],
      ['empty', ''],
      ['step', 'true'],
    ]);
  });

  it('leaves a program without front matter as it is', () => {
    expect(splitProgram('# Just prose\n')).toEqual({ frontMatter: '', body: '# Just prose\n' });
    expect(joinProgram({ frontMatter: '', body: '# Just prose\n' })).toBe('# Just prose\n');
    // A horizontal rule later in the text is not front matter.
    expect(splitProgram('# T\n---\nx: 1\n---\n').frontMatter).toBe('');
  });
});
