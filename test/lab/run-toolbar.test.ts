// @vitest-environment jsdom
/** The toolbar's run options: its fields, then the settings for every other run option. */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it, vi } from 'vitest';
import { CommandRegistry } from '@lumino/commands';
import type { JournalRecord } from '../../src/core/journal/journal';
import { PROPOSER_INFO } from '../../src/core/config/run-options';
import { runSettingDefaults } from '../../src/core/config/run-option-schemas';
import { PROPOSER_NAMES } from '../../src/core/config/proposers';
import { deriveRunState } from '../../src/core/journal/run-state';
import type { IRunDefaults } from '../../src/lab/panel/run-defaults';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { RunToolbar } from '../../src/lab/panel/toolbar/run-toolbar';
import { RunCommandIDs } from '../../src/lab/commands/command-ids';
import { record, runStartRecord } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');
const defaults: IRunDefaults = { ...runSettingDefaults(), openOnStart: true };

function toolbar(proposer: string, model = '', budget = '60', commands = new CommandRegistry()): RunToolbar {
  const bar = new RunToolbar({ trans, model: new RunModel(), commands, args: () => ({ path: 'ws' }) });
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
    // No kernelspecs listed: the picker's no kernel, said as the subprocess executor.
    expect(opts).toEqual({
      proposer: 'offline',
      budget_s: 60,
      workers: 2,
      noise_runs: 1,
      keep_sigma: 0.5,
      executor: 'subprocess',
    });
    expect(opts).not.toHaveProperty('confirm_runs');
    expect(opts).not.toHaveProperty('timeout_s');
  });

  it('lets its own fields win over the settings, and sends a model only to a proposer with one', () => {
    const settings = { ...defaults, model: 'from-settings', budget_s: 300 };
    expect(toolbar('offline', 'm1', '30').runOptions(settings)).toEqual({
      proposer: 'offline',
      budget_s: 30,
      workers: 1,
      executor: 'subprocess',
    });
    expect(toolbar('claude', ' m1 ', '30').runOptions(settings)).toMatchObject({
      proposer: 'claude',
      model: 'm1',
      budget_s: 30,
    });
    expect(toolbar('claude', '', '30').runOptions(settings)).not.toHaveProperty('model');
  });
});

describe('RunToolbar', () => {
  it('gives each strip item its whole text as its tooltip, for a narrow panel that cuts it short', () => {
    const records: JournalRecord[] = [
      runStartRecord({}),
      { type: 'experiment_start', ts: '2026-11-30T00:00:01Z', n: 0, parent_commit: 'a'.repeat(40), description: 'b' },
      record(0, { status: 'keep', metric: 1.25 }),
    ];
    const model = new RunModel();
    model.reset('t1');
    model.handle({ type: 'records', start: 0, records });
    model.handle({ type: 'run_state', run_state: { ...deriveRunState(records, 0, 't1'), status: 'stopped' } });
    const bar = new RunToolbar({ trans, model, commands: new CommandRegistry(), args: () => ({ path: 'ws' }) });
    expect(bar.best.textContent).toMatch(/1\.25/);
    expect(bar.state.textContent).not.toBe('');
    for (const item of [bar.state, bar.best, bar.cost]) {
      expect(item.title).toBe(item.textContent);
    }
    bar.dispose();
  });

  it('labels the proposers and shows the model field as their declaration says', () => {
    const bar = toolbar('offline');
    const options = Array.from(bar.proposer.options);
    expect(options.map(o => o.textContent)).toEqual(PROPOSER_NAMES.map(n => PROPOSER_INFO[n].label));
    expect(options.map(o => o.title)).toEqual(PROPOSER_NAMES.map(n => PROPOSER_INFO[n].description));
    const host = document.createElement('div');
    host.append(bar.model);
    for (const name of PROPOSER_NAMES) {
      bar.proposer.value = name;
      bar.syncModelField();
      expect(host.classList.contains('jp-mod-hidden')).toBe(!PROPOSER_INFO[name].hasModel);
    }
  });

  it('keeps a budget the user typed over program.md’s', () => {
    const bar = toolbar('offline', '', '300');
    bar.suggestBudget(3);
    expect(bar.budget.value).toBe('3');
    bar.budget.value = '45';
    bar.budget.dispatchEvent(new Event('input'));
    bar.suggestBudget(5);
    expect(bar.budget.value).toBe('45');
  });

  it('runs its commands with its panel’s path, labelled and enabled as the commands are', async () => {
    const commands = new CommandRegistry();
    const calls: unknown[] = [];
    let canStart = false;
    commands.addCommand(RunCommandIDs.start, {
      label: 'Start it',
      caption: 'starts',
      isEnabled: () => canStart,
      execute: args => void calls.push(args),
    });
    commands.addCommand(RunCommandIDs.selectRun, { label: 'Show', execute: args => void calls.push(args) });
    const bar = toolbar('offline', '', '60', commands);
    const start = bar.buttons.get(RunCommandIDs.start)!;
    expect(start.dataset.command).toBe('autoresearch:start');
    expect(start.textContent).toBe('Start it');
    expect(start.disabled).toBe(true);
    canStart = true;
    commands.notifyCommandChanged(RunCommandIDs.start);
    expect(start.disabled).toBe(false);
    start.click();
    bar.setRuns(['t2', 't1'], 't2');
    bar.runs.value = 't1';
    bar.runs.dispatchEvent(new Event('change'));
    await Promise.resolve();
    expect(calls).toEqual([{ path: 'ws' }, { path: 'ws', tag: 't1' }]);
    bar.dispose();
  });
});
