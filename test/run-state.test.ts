/**
 * state.json: deriveRunState, the one reading of a journal (best, in flight, counts, σ, status),
 * the engine writing it after every append, `autoresearch state`'s rewrite, and the tag rule
 * the engine and the server share (src/core/journal/layout.ts).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartRows } from '../src/core/views/chart-rows';
import type { ExperimentStartRecord, JournalRecord, RunEndRecord, RunRecord } from '../src/core/journal/journal';
import { layout, TAG_PATTERN, validTag } from '../src/core/journal/layout';
import { bestEstimate, Measurements } from '../src/core/rule/measurements';
import { deriveRunState, runActivity, RunStateFile } from '../src/core/journal/run-state';
import { trustReport } from '../src/core/rule/trust-cost';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import { JournalStore } from '../src/engine/store/journal-store';
import { Loop } from '../src/engine/run/setup';
import { resolvePython } from '../src/engine/workspace/python';
import { statusText } from '../src/engine/cli/report';
import { writeStateFromJournal } from '../src/engine/cli/state-command';
import { runPaths } from '../src/engine/workspace/workspace';
import { noisyJournal, RUN_START } from './helpers/noisy-journal';
import { record } from './helpers/records';
import { journal, makeWorkspace, ScriptedProposer, standInTrain, trainProposal } from './helpers/workspace';

const PY = path.join(__dirname, '..', '.venv', 'bin', 'python');

function loop(dir: string, proposals: ReturnType<typeof trainProposal>[], tag = 't1'): Loop {
  return new Loop({
    dir,
    tag,
    proposer: new ScriptedProposer(proposals),
    executor: new SubprocessExecutor(1),
    python: resolvePython(),
    signal: new AbortController().signal,
    overrides: { noise_runs: 1 },
  });
}

/** The chart's best line as [n, best] at each experiment where the best changed. */
function bestLine(records: JournalRecord[]): Array<[number, number | null]> {
  const rows = chartRows(records);
  return rows.filter((r, i) => i === 0 || r.best !== rows[i - 1].best).map(r => [r.n, r.best]);
}

function stateOnDisk(dir: string, tag: string): RunStateFile {
  return RunStateFile.parse(JSON.parse(fs.readFileSync(runPaths(dir, tag).state, 'utf8')));
}

function start(n: number, worker?: number): ExperimentStartRecord {
  return {
    type: 'experiment_start',
    ts: new Date(1000 * n).toISOString(),
    n,
    parent_commit: 'a'.repeat(40),
    description: `try ${n}`,
    ...(worker !== undefined ? { worker } : {}),
  };
}

function run(n: number, metric: number): RunRecord {
  return {
    type: 'run',
    ts: new Date(0).toISOString(),
    n,
    commit: 'c'.repeat(40),
    state: `s${n}`,
    purpose: 'measure',
    k: 1,
    seed: n * 1000 + 1,
    metric,
    summary: {},
    run_s: 1,
    exit_code: 0,
    signal: null,
    reason: null,
    memory_gb: 0,
    log_path: null,
    sandbox: 'off',
  };
}

const END: RunEndRecord = {
  type: 'run_end',
  ts: new Date(9e6).toISOString(),
  reason: 'stop',
  message: null,
  best_commit: null,
  best_metric: null,
};

describe('runActivity: state.json with whether an engine is alive', () => {
  const pending = { n: 3, description: 'try 3', since: '2026-01-01T00:00:00Z' };
  it('without a live engine: stopped when the journal ended, else died (resumable), a pending proposal or not', () => {
    expect(runActivity({ status: 'stopped', pending: null }, false)).toBe('stopped');
    expect(runActivity({ status: 'running', pending: null }, false)).toBe('died');
    expect(runActivity({ status: 'running', pending }, false)).toBe('died');
    // A reader that already said died (the server's state.json) says it again.
    expect(runActivity({ status: 'died' }, false)).toBe('died');
  });

  it('with one: running, awaiting review while the running state has a pending proposal', () => {
    expect(runActivity({ status: 'running', pending: null }, true)).toBe('running');
    expect(runActivity({ status: 'running' }, true)).toBe('running');
    expect(runActivity({ status: 'running', pending }, true)).toBe('awaiting-review');
    // An engine resumed on a stopped run works on it before its run_start lands; the old pending is not awaited yet.
    expect(runActivity({ status: 'stopped', pending }, true)).toBe('running');
  });
});

describe('deriveRunState', () => {
  it('an empty journal: nothing yet, running (a reader without a live engine says died)', () => {
    const s = deriveRunState([], 0, 't');
    expect(RunStateFile.parse(s)).toEqual(s);
    expect(s).toMatchObject({
      version: 1,
      tag: 't',
      records: 0,
      status: 'running',
      updated: null,
      run: null,
      experiments: 0,
      counts: {},
      best: null,
      baseline: null,
      in_flight: [],
      cost_usd: 0,
      tokens: 0,
      sigma: null,
      sigma_df: 0,
      sandbox: null,
      end: null,
      trust: null,
    });
    expect(s.noise).toBe('not measured (noise_runs 1: the strict rule keeps any improvement)');
  });

  it('several workers in flight: one entry each, by n, with its worker and the runs journaled for it', () => {
    const records: JournalRecord[] = [
      { ...RUN_START, config: { ...(RUN_START as { config: object }).config, workers: 2 } } as JournalRecord,
      start(0, 1),
      run(0, 1.0),
      record(0, { status: 'keep', metric: 1.0, worker: 1 }),
      start(2, 2),
      start(1, 1),
      run(1, 0.99),
    ];
    const s = deriveRunState(records, 123, 't');
    expect(s.in_flight.map(f => [f.n, f.worker, f.runs, f.description])).toEqual([
      [1, 1, 1, 'try 1'],
      [2, 2, 0, 'try 2'],
    ]);
    expect(s.run).toMatchObject({ workers: 2, branch: 'autoresearch/t', proposer: 'claude', direction: 'lower' });
    expect(s).toMatchObject({ journal_bytes: 123, records: 7, status: 'running', sandbox: 'off', experiments: 1 });
    // One worker: the worker is null.
    expect(deriveRunState([start(0)], 0).in_flight[0].worker).toBeNull();
  });

  it('repeats: the best is the mean of every run of its code, not the last keep’s own metric', () => {
    const records = noisyJournal();
    const s = deriveRunState(records, 0, 't');
    const m = Measurements.of(records);
    // #2 was kept at 0.982 on 2 runs; judging #3 re-measured it (0.983): 3 runs now.
    const kept = records.filter(r => r.type === 'experiment' && r.status === 'keep').at(-1);
    expect(kept).toMatchObject({ n: 2, metric: 0.982 });
    expect(s.best).toMatchObject({ n: 2, runs: 3 });
    expect(s.best!.metric).toBeCloseTo((0.98 + 0.984 + 0.983) / 3, 12);
    expect(s.best!.metric).not.toBe(0.982);
    expect(s.best!.metric).toBe(
      bestEstimate(
        records.filter(r => r.type === 'experiment'),
        m,
      )!.metric,
    );
    expect(s.sigma).toBe(m.sigma().sigma);
    expect(s.sigma_df).toBe(m.sigma().df);
    expect(s.sigma_df).toBeGreaterThan(0);
    expect(s.best!.stderr).toBeCloseTo(s.sigma! / Math.sqrt(3), 12);
    expect(s.baseline).toEqual({ n: 0, metric: 1 });
    // The best line (the chart's, from bestTimeline): the baseline, #2's keep, then #3's re-measure of #2.
    expect(bestLine(records)).toEqual([
      [0, 1],
      [2, 0.982],
      [3, s.best!.metric],
    ]);
    expect(s.counts).toEqual({ keep: 2, discard: 3, crash: 1 });
    expect(s.noise).toMatch(/^σ 0\.\d+ per run \(\d+ df\); a keep must beat the best by 2 standard errors/);
    // The chart, given the whole journal, draws that same line.
    const rows = chartRows(records);
    expect(rows.find(r => r.n === 3)?.best).toBe(s.best!.metric);
    expect(rows.find(r => r.n === 2)?.best).toBe(0.982);
  });

  it('trust: what trust cost, as trustReport says in the run’s direction, and what the file holds after JSON', () => {
    const records = noisyJournal();
    const s = deriveRunState(records, 0, 't');
    expect(s.trust).toEqual(trustReport(records, 'lower'));
    // 11 runs: 5 first runs (the crash's included), 2 noise, 3 confirmation, 1 re-measure of the best.
    expect(s.trust).toMatchObject({
      runs: 11,
      byPurpose: { measure: 5, noise: 2, confirm: 3, best: 1 },
      extraRuns: 6,
      keeps: 1,
    });
    expect(s.trust!.byProposer.map(p => p.proposer)).toEqual(['baseline', 'claude']);
    expect(RunStateFile.parse(JSON.parse(JSON.stringify(s)))).toEqual(s);
    // A gain is a gain in the run's direction: the same journal aimed higher gained nothing.
    const higher = records.map(r =>
      r.type === 'run_start' ? { ...r, config: { ...r.config, direction: 'higher' as const } } : r,
    );
    const up = deriveRunState(higher, 0, 't').trust!;
    expect(up).toEqual(trustReport(higher, 'higher'));
    expect(up.gain).toBeLessThan(0);
    expect(up.perMilli).toBeNull();
  });

  it('trust: null for a run from before repeats (no run records, no verdicts), as the panel shows none', () => {
    const records: JournalRecord[] = [
      RUN_START,
      start(0),
      record(0, { status: 'keep', metric: 1 }),
      start(1),
      record(1, { status: 'keep', metric: 0.9, delta: -0.1 }),
    ];
    const s = deriveRunState(records, 0, 't');
    expect(s.trust).toBeNull();
    expect(RunStateFile.parse(JSON.parse(JSON.stringify(s)))).toEqual(s);
    // One run record is enough to be a run with repeats.
    expect(deriveRunState([...records, run(2, 0.95)], 0, 't').trust).toMatchObject({ runs: 3 });
  });

  it('trust: a report JSON cannot hold (a sum of costs past the largest number) is null, not a file the schema refuses', () => {
    const records: JournalRecord[] = [
      RUN_START,
      run(0, 1),
      record(0, { status: 'keep', cost_usd: Number.MAX_VALUE }),
      run(1, 0.9),
      record(1, { cost_usd: Number.MAX_VALUE }),
    ];
    const s = deriveRunState(records, 0, 't');
    expect(s.trust).toBeNull();
    expect(RunStateFile.parse(JSON.parse(JSON.stringify(s)))).toEqual(s);
  });

  it('run_end: stopped, with its end; a resume after it is running again', () => {
    const records: JournalRecord[] = [RUN_START, start(0), record(0, { status: 'keep', metric: 1 }), END];
    const s = deriveRunState(records, 0);
    expect(s).toMatchObject({ status: 'stopped', tag: 't', end: { reason: 'stop', message: null, ts: END.ts } });
    expect(s.updated).toBe(END.ts);
    const resumed = deriveRunState([...records, { ...RUN_START, ts: new Date(1e7).toISOString() }], 0);
    expect(resumed).toMatchObject({ status: 'running', end: null });
    // started is the first run_start's.
    expect(resumed.run?.started).toBe(RUN_START.ts);
  });

  it('a cost that is not finite is null, not Infinity (JSON has none)', () => {
    const s = deriveRunState(
      [record(0, { status: 'keep', cost_usd: Number.MAX_VALUE }), record(1, { cost_usd: Number.MAX_VALUE })],
      0,
    );
    expect(s.cost_usd).toBeNull();
  });
});

describe('state.json, written by the engine', () => {
  it('after every append, atomically, as deriveRunState reads the journal; status and noise as `autoresearch status` says them', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const l = loop(dir, [
      trainProposal('better', { metric: '0.900000' }),
      trainProposal('worse', { metric: '0.950000' }),
    ]);
    const seen: Array<[number, number]> = [];
    // Each experiment event comes right after its record was journaled: state.json has it already.
    l.on('experiment', r => {
      const s = stateOnDisk(dir, 't1');
      seen.push([r.n, s.experiments]);
      expect(s.status).toBe('running');
      expect(s.journal_bytes).toBe(fs.statSync(runPaths(dir, 't1').journal).size);
    });
    await l.run();
    expect(seen).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
    ]);
    const file = runPaths(dir, 't1');
    const s = stateOnDisk(dir, 't1');
    expect(s).toEqual(deriveRunState(journal(dir, 't1'), fs.statSync(file.journal).size, 't1'));
    expect(s).toMatchObject({ status: 'stopped', experiments: 3, counts: { keep: 2, discard: 1 } });
    expect(s.best).toMatchObject({ n: 1, metric: 0.9, runs: 1 });
    expect(bestLine(journal(dir, 't1'))).toEqual([
      [0, 1],
      [1, 0.9],
    ]);
    expect(s.end?.reason).toBe('exhausted');
    // No temp file left beside it.
    expect(fs.readdirSync(file.root).filter(f => f.includes('.tmp'))).toEqual([]);
    const noise = statusText(dir, 't1')
      .split('\n')
      .find(line => line.startsWith('noise:'));
    expect(noise).toBe(`noise:       ${s.noise}`);

    // `autoresearch state` rebuilds the same file from the journal.
    fs.rmSync(file.state);
    expect(writeStateFromJournal(dir, 't1')).toBe(file.state);
    expect(stateOnDisk(dir, 't1')).toEqual(s);
    expect(writeStateFromJournal(dir)).toBe(file.state);
  });

  it('`autoresearch state` on a torn journal: the record cut short is not counted, its bytes are', () => {
    const dir = makeWorkspace();
    const p = runPaths(dir, 'x');
    fs.mkdirSync(p.root, { recursive: true });
    const text = [RUN_START, start(0)].map(r => JSON.stringify(r)).join('\n') + '\n{"type":"experi';
    fs.writeFileSync(p.journal, text);
    writeStateFromJournal(dir, 'x');
    expect(stateOnDisk(dir, 'x')).toMatchObject({ records: 2, journal_bytes: Buffer.byteLength(text), tag: 'x' });
    // The engine's store, on its first append, reads the journal once and keeps the records.
    const store = new JournalStore(p.journal, { file: p.state, tag: 'x' });
    store.append(record(0, { status: 'keep', metric: 1 }));
    expect(stateOnDisk(dir, 'x')).toMatchObject({ records: 3, experiments: 1, in_flight: [] });
    expect(stateOnDisk(dir, 'x').journal_bytes).toBe(fs.statSync(p.journal).size);
  });

  it('refuses a bad tag, and a run that does not exist', () => {
    const dir = makeWorkspace();
    expect(() => writeStateFromJournal(dir, '..')).toThrow(/tag "\.\." may only use letters/);
    expect(() => writeStateFromJournal(dir, 'nope')).toThrow(/no run tagged "nope"/);
  });
});

describe('the tag rule (src/core/journal/layout.ts), one for the engine and the server', () => {
  const tags = [
    'nov30',
    'nov30-2',
    'a.b',
    'A_b-c.9',
    '-x',
    'x.lock.y',
    'x'.repeat(100),
    'x'.repeat(101),
    '',
    '.',
    '..',
    'a..b',
    '.hidden',
    'x.',
    'x.lock',
    'a/b',
    'a b',
    'é',
    'a\n',
    '../x',
  ];

  it('accepts what names a folder and a branch, refuses the rest', () => {
    expect(tags.filter(validTag)).toEqual(['nov30', 'nov30-2', 'a.b', 'A_b-c.9', '-x', 'x.lock.y', 'x'.repeat(100)]);
  });

  it("means the same to Python's re (workspaces.py reads it from engine/layout.json)", () => {
    const code =
      'import json, re, sys\n' +
      'p, n, tags = json.loads(sys.stdin.read())\n' +
      'print(json.dumps([0 < len(t) <= n and re.fullmatch(p, t) is not None for t in tags]))';
    const out = execFileSync(PY, ['-c', code], { input: JSON.stringify([TAG_PATTERN, layout().tag_max, tags]) });
    expect(JSON.parse(out.toString())).toEqual(tags.map(validTag));
  });

  it('the engine refuses a tag with ".." before it touches anything', async () => {
    const dir = makeWorkspace();
    for (const tag of ['..', 'a..b', '.x']) {
      await expect(loop(dir, [], tag).run()).rejects.toThrow(/may only use letters, digits/);
    }
    expect(fs.existsSync(path.join(dir, '.autoresearch'))).toBe(false);
  });
});
