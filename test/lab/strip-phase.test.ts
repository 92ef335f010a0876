// @vitest-environment jsdom
/**
 * The strip's phase comes from the run's own events, as the engine writes them into state.json
 * (LivePhase): training counted down from that training run's start, evaluating only when the
 * run said so; no phase guessed from the clock since the experiment started.
 */
import { nullTranslator } from '@jupyterlab/translation';
import { CommandRegistry } from '@lumino/commands';
import { describe, expect, it, vi } from 'vitest';
import type { JournalRecord } from '../../src/core/journal/journal';
import { deriveRunState, type LivePhase } from '../../src/core/journal/run-state';
import { LiveView } from '../../src/lab/panel/run/live-view';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { RunToolbar } from '../../src/lab/panel/toolbar/run-toolbar';
import { RUN_START } from '../helpers/noisy-journal';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');
const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString();

/** A run model whose experiment #n started `startedS` ago and now does `phase`. */
function runModel(phase: LivePhase | undefined, startedS = 600, n = 0): RunModel {
  const records: JournalRecord[] = [
    RUN_START,
    { type: 'experiment_start', ts: ago(startedS), n, parent_commit: 'a'.repeat(40), description: 'baseline' },
  ];
  const file = deriveRunState(records, 0, 't');
  const model = new RunModel();
  model.reset('t');
  model.handle({ type: 'records', start: 0, records });
  model.handle({
    type: 'state',
    tag: 't',
    state: 'running',
    pid: 1,
    stopping: false,
    engine_tag: 't',
    records: 2,
    in_flight: null,
  });
  model.handle({
    type: 'run_state',
    run_state: { ...file, in_flight: file.in_flight.map(f => (phase ? { ...f, phase } : f)) },
  });
  return model;
}

/** A strip following a run whose experiment #n started `startedS` ago and now does `phase`. */
function strip(phase: LivePhase | undefined, startedS = 600, n = 0): RunToolbar {
  const model = runModel(phase, startedS, n);
  return new RunToolbar({ trans, model, commands: new CommandRegistry(), args: () => ({ path: 'ws' }) });
}

const run = (i: number, purpose: 'measure' | 'noise' | 'best', startedS: number) => ({
  i,
  purpose,
  started: ago(startedS),
  budget_s: 60,
});

describe('the strip’s phase', () => {
  it('counts a noise run down from its own start, though its experiment began minutes ago', () => {
    const bar = strip({ name: 'train', since: ago(20), run: run(2, 'noise', 20) });
    expect(bar.state.textContent).toMatch(/^#0 training, noise run 2 · (40|41) s left$/);
    expect(bar.progress.hidden).toBe(false);
    expect(bar.progress.value).toBeCloseTo(20 / 60, 1);
    bar.dispose();
  });

  it('says evaluating only when the run said so, and nothing of the clock then', () => {
    const training = strip({ name: 'train', since: ago(70), run: run(1, 'measure', 70) });
    // Past the budget and not yet said: still training (its start-up is not on its clock).
    expect(training.state.textContent).toMatch(/^#0 training · (9|10) s past the budget$/);
    training.dispose();
    const evaluating = strip({ name: 'evaluate', since: ago(1), run: run(1, 'measure', 61) });
    expect(evaluating.state.textContent).toBe('#0 evaluating');
    expect(evaluating.progress.hidden).toBe(true);
    evaluating.dispose();
  });

  it('has no countdown before its run starts (just approved: committing) nor after (judging)', () => {
    for (const [phase, words] of [
      [{ name: 'commit', since: ago(0) }, '#9 committing'],
      [{ name: 'judge', since: ago(0) }, '#9 judging'],
      [{ name: 'train', since: ago(5), run: run(1, 'best', 5) }, '#9 re-measuring the best · 55 s left'],
    ] as const) {
      const bar = strip(phase as LivePhase, 900, 9);
      expect(bar.state.textContent).toBe(words);
      expect(bar.progress.hidden).toBe(!words.includes('left'));
      bar.dispose();
    }
  });

  it('says queued with the Slurm job while Slurm holds the run, with no countdown, then counts down once it trains', () => {
    const queued = strip({ name: 'queue', since: ago(400), job: { scheduler: 'slurm', id: '4242' } }, 900, 5);
    expect(queued.state.textContent).toBe('#5 queued, Slurm job 4242');
    expect(queued.progress.hidden).toBe(true);
    queued.dispose();
    // The run's budget counts from its own start on the node, not from its submission.
    const started = strip({ name: 'train', since: ago(10), run: run(1, 'measure', 10) }, 900, 5);
    expect(started.state.textContent).toMatch(/^#5 training · (50|51) s left$/);
    started.dispose();
  });

  it('marks a queued experiment in the in-flight list, its job id in the badge’s title', () => {
    const live = new LiveView(
      runModel({ name: 'queue', since: ago(3), job: { scheduler: 'slurm', id: '77' } }, 5, 2),
      trans,
    );
    const badge = live.node.querySelector<HTMLElement>(
      '.jp-AutoresearchLive-item[data-n="2"] .jp-AutoresearchLive-badge',
    )!;
    expect(badge.textContent).toBe('queued');
    expect(badge.title).toBe('queued, Slurm job 77');
    expect(badge.classList).toContain('jp-mod-queued');
    live.dispose();
    const training = new LiveView(runModel({ name: 'train', since: ago(3), run: run(1, 'measure', 3) }, 5, 2), trans);
    const running = training.node.querySelector<HTMLElement>('.jp-AutoresearchLive-badge')!;
    expect(running.textContent).toBe('running');
    expect(running.title).toBe('');
    expect(running.classList).not.toContain('jp-mod-queued');
    training.dispose();
  });

  it('says training, with no countdown, for an engine from before phases', () => {
    const bar = strip(undefined);
    expect(bar.state.textContent).toBe('#0 training');
    expect(bar.progress.hidden).toBe(true);
    bar.dispose();
  });
});
