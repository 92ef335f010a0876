// @vitest-environment jsdom
/**
 * Step mode's notification, which must never cover the review card's buttons: one per pending
 * proposal; a toast only while the panel is out of view; in view, the card is the notice and the
 * notification sits in the notification center alone (autoClose 0: no toast); a toast gives way
 * to that quiet entry when the panel is shown; dismissed once the proposal is decided. The
 * notifier records what JupyterLab's Notification would be asked.
 */
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it, vi } from 'vitest';
import type { JournalRecord } from '../../src/core/journal/journal';
import { deriveRunState } from '../../src/core/journal/run-state';
import { ReviewController, type IReviewNotifier } from '../../src/lab/panel/review/review-controller';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { record, runStartRecord } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');

const waiting: JournalRecord[] = [
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

/** A notification as asked of the notifier, and whether it is still up. */
interface IAsked {
  id: string;
  message: string;
  autoClose: number | false | undefined;
  dismissed: boolean;
}

function notifier(): { notify: IReviewNotifier; asked: IAsked[] } {
  const asked: IAsked[] = [];
  const notify: IReviewNotifier = {
    success: () => undefined,
    error: () => undefined,
    warning: (message, options) => {
      const id = `n${asked.length + 1}`;
      asked.push({ id, message, autoClose: options?.autoClose, dismissed: false });
      return id;
    },
    dismiss: id => asked.filter(a => a.id === id).forEach(a => (a.dismissed = true)),
  };
  return { notify, asked };
}

/** A step-mode run whose engine waits on #1 (or has stopped), as the server's stream says it. */
function handle(run: RunModel, live: 'running' | 'stopped'): void {
  run.handle({ type: 'records', start: 0, records: waiting });
  const file = deriveRunState(waiting, 0, 't1');
  run.handle({ type: 'run_state', run_state: live === 'stopped' ? { ...file, status: 'stopped' } : file });
  run.handle({
    type: 'state',
    tag: 't1',
    state: live,
    pid: live === 'stopped' ? null : 1,
    stopping: false,
    engine_tag: live === 'stopped' ? null : 't1',
    records: waiting.length,
    in_flight: null,
  });
}

function setUp(visible: () => boolean) {
  const run = new RunModel();
  run.reset('t1');
  const { notify, asked } = notifier();
  // Nothing listens there: GET review fails quietly; the notification comes from the run's state.
  const settings = ServerConnection.makeSettings({ baseUrl: 'http://127.0.0.1:9/' });
  const review = new ReviewController({ path: 'ws', settings, trans, run, notify, visible });
  return { run, review, asked, up: () => asked.filter(a => !a.dismissed) };
}

describe('the step-mode notification', () => {
  it('is a toast while the panel is out of view, and gives way to a quiet entry once it is shown', () => {
    let visible = false;
    const { run, review, asked, up } = setUp(() => visible);
    handle(run, 'running');
    expect(up()).toEqual([
      { id: 'n1', message: 'Autoresearch ws: #1 awaits review — LR up', autoClose: false, dismissed: false },
    ]);

    // The panel comes into view (the toast's Review, or its tab): the toast would cover the card.
    visible = true;
    review.panelShown();
    expect(up()).toEqual([{ id: 'n2', message: asked[0].message, autoClose: 0, dismissed: false }]);
    // Shown again (a theme swap hides and shows the shell): nothing more.
    review.panelShown();
    handle(run, 'running');
    expect(asked).toHaveLength(2);

    // Decided (the engine moved on; here it stopped): nothing is left up.
    handle(run, 'stopped');
    expect(up()).toEqual([]);
    review.dispose();
  });

  it('never raises a toast while the panel with the card is in view: the card is the notice', () => {
    const { run, review, asked, up } = setUp(() => true);
    handle(run, 'running');
    expect(asked.map(a => a.autoClose)).toEqual([0]);
    review.panelShown();
    expect(up()).toHaveLength(1);
    review.dispose();
    expect(up()).toEqual([]);
  });
});
