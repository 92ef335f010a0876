// @vitest-environment jsdom
/**
 * Every disabled control says why: the panel's command buttons (Start, Stop, Resume, Export,
 * Transfer Study…, Review each proposal) are walked in each state a run goes through, and each
 * disabled one must carry the reason in its tooltip; the transfer dialog says why Start study is
 * unavailable (runs 1) beside the field and on the button.
 */
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { CommandRegistry } from '@lumino/commands';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { describe, expect, it, vi } from 'vitest';
import type { JournalRecord } from '../../src/core/journal/journal';
import { deriveRunState } from '../../src/core/journal/run-state';
import type { AutoresearchPanel } from '../../src/lab/panel/panel';
import { ReviewController } from '../../src/lab/panel/review/review-controller';
import { RunController } from '../../src/lab/panel/run/run-controller';
import { RunToolbar } from '../../src/lab/panel/toolbar/run-toolbar';
import { TransferController } from '../../src/lab/panel/transfer/transfer-controller';
import { TransferDialogBody } from '../../src/lab/panel/transfer/transfer-dialog';
import { addRunCommands } from '../../src/lab/commands/run-commands';
import { RUN_START } from '../helpers/noisy-journal';
import { record } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

vi.mock('@jupyterlab/rendermime', () => ({ MimeModel: class {} }));
// JupyterLab's dialogs need a browser build; the dialog's body is built here without one.
vi.mock('@jupyterlab/apputils', () => ({
  Dialog: {},
  DOMUtils: { createDomID: () => `id-${Math.random().toString(36).slice(2)}` },
  showDialog: () => Promise.reject(new Error('no dialogs here')),
}));

const trans = nullTranslator.load('jupyterlab_autoresearch');

/**
 * The panel's controllers and commands as the panel wires them, on a server nobody answers (no
 * request is made: nothing here asks the server). The tracker holds a widget standing for the
 * panel with the parts the commands read.
 */
function wired() {
  const settings = ServerConnection.makeSettings({ baseUrl: 'http://127.0.0.1:9/' });
  const controller = new RunController({ path: 'ws', settings, trans });
  const run = controller.model;
  const review = new ReviewController({ path: 'ws', settings, trans, run });
  const transfer = new TransferController({ path: 'ws', settings, trans, run });
  const panel = Object.assign(new Widget(), { path: 'ws', controller, review, transfer });
  // The tracker's part the commands use (JupyterLab's WidgetTracker needs a browser build).
  const p = panel as unknown as AutoresearchPanel;
  const owner = {};
  const widgetAdded = new Signal<object, AutoresearchPanel>(owner);
  const tracker = {
    currentWidget: p,
    find: (fn: (x: AutoresearchPanel) => boolean) => (fn(p) ? p : undefined),
    currentChanged: new Signal<object, AutoresearchPanel | null>(owner),
    widgetAdded,
  };
  const commands = new CommandRegistry();
  addRunCommands(commands, tracker as never, trans);
  widgetAdded.emit(p);
  const bar = new RunToolbar({ trans, model: run, commands, args: () => ({ path: 'ws' }) });
  return { run, bar, commands };
}

/** The disabled buttons and what their tooltip says. */
function disabled(bar: RunToolbar): Array<[string, string]> {
  return [...bar.buttons.values()].filter(b => b.disabled).map(b => [b.textContent ?? '', b.title]);
}

function expectReasons(bar: RunToolbar, why: Record<string, RegExp>): void {
  const off = disabled(bar);
  expect(off.map(([label]) => label).sort()).toEqual(Object.keys(why).sort());
  for (const [label, title] of off) {
    expect(title, label).toMatch(/Unavailable now: .+\.$/);
    expect(title, label).toMatch(why[label]);
  }
}

describe('a disabled control says why', () => {
  it('in every state of a run: none yet, running, stopped', async () => {
    const { run, bar, commands } = wired();
    const refresh = () => [...bar.buttons.keys()].forEach(id => commands.notifyCommandChanged(id));
    expectReasons(bar, {
      Stop: /no run is going on/,
      Resume: /no run to resume/,
      Export: /no run to export/,
      'Transfer Study…': /no run to study/,
    });
    // A run going on, its baseline in flight.
    const records: JournalRecord[] = [
      RUN_START,
      {
        type: 'experiment_start',
        ts: new Date().toISOString(),
        n: 0,
        parent_commit: 'a'.repeat(40),
        description: 'baseline',
      },
    ];
    run.reset('t');
    run.handle({ type: 'records', start: 0, records });
    run.handle({
      type: 'state',
      tag: 't',
      state: 'running',
      pid: 1,
      stopping: false,
      engine_tag: 't',
      records: 2,
      in_flight: null,
    });
    run.handle({ type: 'run_state', run_state: deriveRunState(records, 0, 't') });
    refresh();
    expectReasons(bar, {
      Start: /a run is going on: stop it first/,
      Resume: /a run is going on/,
      Export: /no experiment of this run has finished yet/,
      'Transfer Study…': /the run is going on: a study replays its commits once it has stopped/,
    });
    // Stopped, with a finished experiment: only Stop is off.
    const done = [...records, record(0, { status: 'keep' })];
    run.handle({ type: 'records', start: 2, records: done.slice(2) });
    run.handle({
      type: 'state',
      tag: 't',
      state: 'stopped',
      pid: null,
      stopping: false,
      engine_tag: null,
      records: 3,
      in_flight: null,
    });
    run.handle({ type: 'run_state', run_state: deriveRunState(done, 0, 't') });
    refresh();
    expectReasons(bar, { Stop: /no run is going on/ });
    bar.dispose();
  });
});

describe('the transfer dialog', () => {
  it('says why Start study is unavailable at runs 1, beside the field and on the button', () => {
    const content = document.createElement('div');
    content.className = 'jp-Dialog-content';
    const accept = document.createElement('button');
    accept.className = 'jp-Dialog-button jp-mod-accept';
    const body = new TransferDialogBody(trans, { env: 'A=1', budget: '', runs: '', ablate: false }, null, '60');
    content.append(body.node, accept);
    document.body.appendChild(content);
    expect(body.invalid.hidden).toBe(true);
    body.runs.value = '1';
    body.runs.dispatchEvent(new Event('input', { bubbles: true }));
    expect(body.invalid.hidden).toBe(false);
    expect(body.invalid.textContent).toMatch(/Runs of each replay: a whole number of 2 or more/);
    expect(body.runs.title).toBe(body.invalid.textContent);
    expect(body.runs.getAttribute('aria-describedby')).toBe(body.invalid.id);
    expect(accept.title).toMatch(/^Unavailable until the fields are valid: Runs of each replay/);
    body.runs.value = '3';
    body.runs.dispatchEvent(new Event('input', { bubbles: true }));
    expect([body.invalid.hidden, body.runs.title, accept.title]).toEqual([true, '', '']);
    content.remove();
  });
});
