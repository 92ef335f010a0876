// @vitest-environment jsdom
/**
 * The proposal awaiting review as the panel draws it: number, badge, description, who proposed it
 * and why, the rationale, the engine's refusal of an edit, the diff; and its buttons, which run the
 * panel's commands with the proposal's number (and the note), enabled as the commands are. The
 * toolbar's *Review each proposal* button shows its command's toggled state as aria-pressed.
 */
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { CommandRegistry } from '@lumino/commands';
import { describe, expect, it, vi } from 'vitest';
import type { JournalRecord } from '../../src/core/journal/journal';
import type { PendingReview } from '../../src/core/step-mode/review';
import { deriveRunState } from '../../src/core/journal/run-state';
import { ReviewController } from '../../src/lab/panel/review/review-controller';
import { firstChangedLine } from '../../src/lab/panel/review/review-editor';
import { ReviewView } from '../../src/lab/panel/review/review-view';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { RunToolbar } from '../../src/lab/panel/toolbar/run-toolbar';
import { renderExperiment } from '../../src/lab/renderer/experiment-view';
import { RunCommandIDs } from '../../src/lab/commands/command-ids';
import { record, runStartRecord } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

// The real module pulls in JupyterLab's web components, which need a browser build; these tests
// never open the editors (the Galata spec does, in Chromium).
vi.mock('@jupyterlab/codeeditor', () => ({ CodeEditor: {}, CodeEditorWrapper: class {} }));

const trans = nullTranslator.load('jupyterlab_autoresearch');

const records: JournalRecord[] = [
  runStartRecord({ step: true }),

  {
    type: 'experiment_start',
    ts: '2026-11-30T00:00:01Z',
    n: 0,
    parent_commit: 'a'.repeat(40),
    description: 'baseline',
  },
  record(0, { status: 'keep' }),
  { type: 'experiment_start', ts: '2026-11-30T00:00:05Z', n: 1, parent_commit: 'a'.repeat(40), description: 'LR up' },
  { type: 'review', ts: '2026-11-30T00:00:06Z', n: 1, event: 'pending' },
];

const PROPOSAL: PendingReview = {
  n: 1,
  since: '2026-11-30T00:00:06Z',
  description: 'LR up',
  rationale: 'the loss was still falling fast',
  diff: '--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-LEARNING_RATE = 0.001\n+LEARNING_RATE = 0.002\n',
  files: { 'train.py': 'LEARNING_RATE = 0.002\n' },
  editable: ['train.py'],
  proposer: 'offline',
  // As the engine words it for the offline proposer: the move, then the rationale again.
  why: 'offline move: LEARNING_RATE up, step level 1; the loss was still falling fast',
};

function setUp() {
  const run = new RunModel();
  run.reset('t1');
  run.handle({ type: 'records', start: 0, records });
  run.handle({ type: 'run_state', run_state: deriveRunState(records, 0, 't1') });
  run.handle({
    type: 'state',
    tag: 't1',
    state: 'running',
    pid: 1,
    stopping: false,
    engine_tag: 't1',
    records: records.length,
    in_flight: null,
  });
  // Nothing listens there: the test sets the proposal itself, as GET review would.
  const settings = ServerConnection.makeSettings({ baseUrl: 'http://127.0.0.1:9/' });
  const review = new ReviewController({ path: 'ws', settings, trans, run });
  const calls: Array<[string, unknown]> = [];
  const commands = new CommandRegistry();
  for (const id of [RunCommandIDs.approve, RunCommandIDs.reject, RunCommandIDs.approveAll]) {
    commands.addCommand(id, {
      label: id.replace('autoresearch:', ''),
      isEnabled: () => review.canDecide,
      execute: args => void calls.push([id, args]),
    });
  }
  commands.addCommand(RunCommandIDs.editProposal, { label: 'edit', execute: () => undefined });
  const view = new ReviewView({
    review,
    run,
    trans,
    commands,
    editorServices: {} as never,
    args: () => ({ path: 'ws' }),
  });
  review.changed.connect(() =>
    [RunCommandIDs.approve, RunCommandIDs.reject].forEach(id => commands.notifyCommandChanged(id)),
  );
  return { run, review, view, calls };
}

describe('ReviewView', () => {
  it('shows the pending proposal and runs the decisions with its number and the note', async () => {
    const { review, view, calls } = setUp();
    expect(view.isHidden).toBe(false);
    expect(view.node.dataset.n).toBe('1');
    // Before GET review answers: the state file's words, and the buttons wait.
    expect(view.card.node.textContent).toContain('Reading the proposal');
    expect(view.buttons.get(RunCommandIDs.approve)!.disabled).toBe(true);

    review.model.setProposal(PROPOSAL);
    const text = view.card.node.textContent ?? '';
    expect(text).toContain('#1');
    expect(text).toContain('awaiting review');
    expect(text).toContain('offline — offline move: LEARNING_RATE up, step level 1');
    expect(text).not.toContain('step level 1;');
    expect(text).toContain('the loss was still falling fast');
    const diff = [...view.card.node.querySelectorAll('.jp-AutoresearchExperiment-diffLine')].map(l => l.className);
    expect(diff.filter(c => c.includes('jp-mod-add'))).toHaveLength(1);
    expect(view.card.node.querySelector('details')?.open).toBe(true);

    const reject = view.buttons.get(RunCommandIDs.reject)!;
    expect(reject.disabled).toBe(false);
    expect(reject.textContent).toBe('reject');
    view.note.value = 'too big a step';
    reject.click();
    view.buttons.get(RunCommandIDs.approveAll)!.click();
    await Promise.resolve();
    expect(calls).toEqual([
      [RunCommandIDs.reject, { path: 'ws', n: 1, note: 'too big a step' }],
      [RunCommandIDs.approveAll, { path: 'ws', n: 1 }],
    ]);

    // A decision on its way: no second one.
    review.model.setSent(1);
    expect(reject.disabled).toBe(true);
    expect(view.card.node.textContent).toContain('Decision sent');
  });

  it('shows the engine’s refusal of an edit', () => {
    const { review, view } = setUp();
    review.model.setProposal({ ...PROPOSAL, refused: { ts: 'x', message: 'train.py: SyntaxError line 3' } });
    expect(view.card.node.querySelector('.jp-AutoresearchReview-refused')?.textContent).toBe(
      'The edited version was refused: train.py: SyntaxError line 3',
    );
  });

  it('says which knobs the offline proposer leaves alone, and whose note said so', () => {
    const plain = setUp();
    plain.review.model.setProposal(PROPOSAL);
    expect(plain.view.card.node.querySelector('.jp-AutoresearchReview-rule')).toBeNull();
    const { review, view } = setUp();
    const leave_alone = [
      { name: 'HEAD_DIM', n: 7 },
      { name: 'DEPTH', n: 9 },
    ];
    review.model.setProposal({ ...PROPOSAL, meta: { kind: 'offline', leave_alone } });
    const lines = [...view.card.node.querySelectorAll('.jp-AutoresearchReview-rule')].map(l => l.textContent);
    expect(lines).toEqual([
      'Leaving HEAD_DIM alone (from your note on #7)',
      'Leaving DEPTH alone (from your note on #9)',
    ]);
  });

  it('sends the note with an approval too (a knob it names is left alone)', async () => {
    const { review, view, calls } = setUp();
    review.model.setProposal(PROPOSAL);
    view.buttons.get(RunCommandIDs.approve)!.click();
    view.note.value = "don't touch HEAD_DIM";
    view.buttons.get(RunCommandIDs.approve)!.click();
    await Promise.resolve();
    expect(calls).toEqual([
      [RunCommandIDs.approve, { path: 'ws', n: 1 }],
      [RunCommandIDs.approve, { path: 'ws', n: 1, note: "don't touch HEAD_DIM" }],
    ]);
  });

  it('hides once nothing awaits review', () => {
    const { run, view } = setUp();
    run.handle({
      type: 'state',
      tag: 't1',
      state: 'stopped',
      pid: null,
      stopping: false,
      engine_tag: null,
      records: records.length,
      in_flight: null,
    });
    expect(view.isHidden).toBe(true);
  });
});

describe('RunToolbar’s step toggle', () => {
  it('is pressed as its command is toggled', () => {
    const commands = new CommandRegistry();
    let on = false;
    commands.addCommand(RunCommandIDs.reviewEach, {
      label: 'Review each proposal',
      isToggleable: true,
      isToggled: () => on,
      execute: () => void (on = !on),
    });
    const bar = new RunToolbar({ trans, model: new RunModel(), commands, args: () => ({ path: 'ws' }) });
    const toggle = bar.buttons.get(RunCommandIDs.reviewEach)!;
    expect(toggle.textContent).toBe('Review each proposal');
    expect(toggle.getAttribute('aria-pressed')).toBe('false');
    on = true;
    commands.notifyCommandChanged(RunCommandIDs.reviewEach);
    expect(toggle.getAttribute('aria-pressed')).toBe('true');
    bar.dispose();
  });
});

describe('an experiment’s output in step mode', () => {
  it('says how its reviewer decided, and where', () => {
    const data = (review: {
      action: 'approve' | 'edit' | 'reject';
      source: 'panel' | 'cli' | 'tty';
      waited_s: number;
    }) => ({ ...record(2, { review }), metric_name: 'val_bpb', direction: 'lower', log_tail: null }) as const;
    const line = (d: ReturnType<typeof data>) =>
      renderExperiment(d, trans).querySelector('.jp-AutoresearchExperiment-review') as HTMLElement;
    const edited = line(data({ action: 'edit', source: 'panel', waited_s: 12 }));
    expect(edited.textContent).toBe('Review: edited and approved in the panel after 12.0 s');
    expect(edited.dataset.action).toBe('edit');
    expect(line(data({ action: 'approve', source: 'cli', waited_s: 120 })).textContent).toBe(
      'Review: approved from the command line after 2.0 min',
    );
    expect(
      renderExperiment(
        { ...record(3), metric_name: 'val_bpb', direction: 'lower', log_tail: null },
        trans,
      ).querySelector('.jp-AutoresearchExperiment-review'),
    ).toBeNull();
  });
});

describe('the review editor', () => {
  it('opens each file at the first line the proposal changed', () => {
    const diff = [
      'diff --git a/prep.py b/prep.py',
      '--- a/prep.py',
      '+++ b/prep.py',
      '@@ -1,2 +1,2 @@',
      '-A = 1',
      '+A = 2',
      'diff --git a/train.py b/train.py',
      '--- a/train.py',
      '+++ b/train.py',
      '@@ -30,7 +30,7 @@ from prepare import X',
      ' # context',
      ' # context',
      '-LEARNING_RATE = 0.0002',
      '+LEARNING_RATE = 4e-4',
      '',
    ].join('\n');
    expect(firstChangedLine(diff, 'train.py')).toBe(31);
    expect(firstChangedLine(diff, 'prep.py')).toBe(0);
    expect(firstChangedLine(diff, 'other.py')).toBeNull();
  });
});
