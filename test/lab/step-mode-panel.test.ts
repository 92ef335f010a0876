/**
 * Step mode in the panel's model: the proposal awaiting review and the mode as the engine's state
 * file says them (deriveRunState of a real journal's records), only while an engine waits; the
 * strip's words for it; a study's; and program.md's `step:` as the toggle's first choice.
 */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it } from 'vitest';
import type { JournalRecord, ReviewRecord } from '../../src/core/journal/journal';
import { deriveRunState } from '../../src/core/journal/run-state';
import { frontMatterFlag } from '../../src/lab/panel/front-matter';
import { ReviewModel } from '../../src/lab/panel/review/review-model';
import type { EventMessage } from '../../src/lab/panel/run/run-events';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { describeState } from '../../src/lab/panel/run/state-words';
import { record, runStartRecord } from '../helpers/records';

const trans = nullTranslator.load('jupyterlab_autoresearch');

const runStart = (step: boolean) => runStartRecord({ step });
const start = (n: number): JournalRecord => ({
  type: 'experiment_start',
  ts: '2026-11-30T00:00:01Z',
  n,
  parent_commit: 'a'.repeat(40),
  description: `try ${n}`,
});
const review = (n: number, over: Partial<ReviewRecord>): ReviewRecord => ({
  type: 'review',
  ts: '2026-11-30T00:00:02Z',
  n,
  event: 'pending',
  ...over,
});

/** The model after these records, with the state file the engine writes for them and the stream's liveness. */
function modelOf(records: JournalRecord[], live: 'running' | 'stopped' = 'running'): RunModel {
  const model = new RunModel();
  model.reset('t1');
  const file = deriveRunState(records, 0, 't1');
  const messages: EventMessage[] = [
    { type: 'records', start: 0, records },
    { type: 'run_state', run_state: live === 'stopped' ? { ...file, status: 'stopped' } : file },
    {
      type: 'state',
      tag: 't1',
      state: live,
      pid: live === 'stopped' ? null : 1,
      stopping: false,
      engine_tag: live === 'stopped' ? null : 't1',
      records: records.length,
      in_flight: null,
    },
  ];
  messages.forEach(m => model.handle(m));
  return model;
}

const waiting = [runStart(true), start(0), record(0, { status: 'keep' }), start(1), review(1, { event: 'pending' })];

describe('RunModel in step mode', () => {
  it('says which proposal awaits review while the engine waits on it', () => {
    const model = modelOf(waiting);
    expect(model.state).toBe('running');
    expect(model.step).toBe(true);
    expect(model.pending).toMatchObject({ n: 1, description: 'try 1' });
    expect(describeState(model, trans)).toBe('#1 awaiting review');
  });

  it('has nothing to decide once the reviewer decided, nor for a run no engine works on', () => {
    const decided = modelOf([...waiting, review(1, { event: 'decision', action: 'approve', source: 'panel' })]);
    expect(decided.pending).toBeNull();
    expect(describeState(decided, trans)).toBe('#1 training');
    const stopped = modelOf(waiting, 'stopped');
    expect(stopped.pending).toBeNull();
    expect(describeState(stopped, trans)).toBe('stopped');
  });

  it('follows the mode as switched during the run, and Approve all ending it', () => {
    const plain = [runStart(false), start(0), record(0, { status: 'keep' }), start(1)];
    expect(modelOf(plain).step).toBe(false);
    const on = [...plain, review(2, { event: 'mode', step: true, source: 'panel' })];
    expect(modelOf(on).step).toBe(true);
    const all = [...waiting, review(1, { event: 'decision', action: 'approve', source: 'panel', all: true })];
    expect(modelOf(all).step).toBe(false);
  });

  it('says a transfer study runs rather than what the run did', () => {
    const model = modelOf([runStart(false), start(0), record(0, { status: 'keep' })], 'stopped');
    const changes: string[] = [];
    model.changed.connect((_, c) => changes.push(c));
    model.setStudy(true);
    model.setStudy(true);
    expect(changes).toEqual(['study']);
    expect(describeState(model, trans)).toBe('transfer study running');
    model.reset('t2');
    expect(model.study).toBe(false);
  });
});

describe('ReviewModel', () => {
  it('takes program.md’s step: as the first choice, and keeps the reviewer’s own after', () => {
    expect(frontMatterFlag('---\nbudget_s: 3\nstep: true\n---\n', 'step')).toBe(true);
    expect(frontMatterFlag('---\nstep: false\n---\n', 'step')).toBe(false);
    expect(frontMatterFlag('---\nbudget_s: 3\n---\n', 'step')).toBe(false);
    const m = new ReviewModel();
    m.suggestStep(true);
    expect(m.stepChoice).toBe(true);
    m.setStepChoice(false);
    m.suggestStep(true);
    expect(m.stepChoice).toBe(false);
  });

  it('forgets the editing, a decision sent and an error when another proposal comes', () => {
    const m = new ReviewModel();
    const p = (n: number) => ({
      n,
      since: 'x',
      description: `try ${n}`,
      rationale: '',
      diff: '',
      files: { 'train.py': 'A = 1\n' },
      editable: ['train.py'],
      proposer: 'offline',
      why: null,
    });
    m.setProposal(p(1));
    m.setEditing(true);
    m.setSent(1);
    m.setError('no');
    m.setProposal({ ...p(1), refused: { ts: 'y', message: 'syntax error' } });
    expect([m.editing, m.sent, m.error]).toEqual([true, 1, 'no']);
    m.setProposal(p(2));
    expect([m.editing, m.sent, m.error]).toEqual([false, null, null]);
  });
});
