// @vitest-environment jsdom
/** The toolbar's run options: its fields, then the settings for every other run option. */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it, vi } from 'vitest';
import { PROPOSER_NAMES, runSettingDefaults } from '../../src/core/run-options';
import type { IRunDefaults } from '../../src/lab/panel/panel';
import { RunToolbar } from '../../src/lab/panel/run-toolbar';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');
const defaults: IRunDefaults = { ...runSettingDefaults(), openOnStart: true };

function toolbar(proposer: string, model = '', budget = '60'): RunToolbar {
  const bar = new RunToolbar(trans, () => undefined);
  bar.proposer.value = proposer;
  bar.model.value = model;
  bar.budget.value = budget;
  return bar;
}

describe('RunToolbar.runOptions', () => {
  it('lists the declared proposers', () => {
    expect(Array.from(toolbar('offline').proposer.options).map(o => o.value)).toEqual(PROPOSER_NAMES);
  });

  it('sends the settings left set, and leaves null ones to program.md', () => {
    const opts = toolbar('offline').runOptions({ ...defaults, noise_runs: 1, keep_sigma: 0.5, workers: 2 });
    expect(opts).toEqual({ proposer: 'offline', budget_s: 60, workers: 2, noise_runs: 1, keep_sigma: 0.5 });
    expect(opts).not.toHaveProperty('confirm_runs');
    expect(opts).not.toHaveProperty('timeout_s');
  });

  it('lets its own fields win over the settings, and sends a model only to a proposer with one', () => {
    const settings = { ...defaults, model: 'from-settings', budget_s: 300 };
    expect(toolbar('offline', 'm1', '30').runOptions(settings)).toEqual({
      proposer: 'offline',
      budget_s: 30,
      workers: 1,
    });
    expect(toolbar('claude', ' m1 ', '30').runOptions(settings)).toMatchObject({
      proposer: 'claude',
      model: 'm1',
      budget_s: 30,
    });
    expect(toolbar('claude', '', '30').runOptions(settings)).not.toHaveProperty('model');
  });
});
