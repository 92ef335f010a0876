/**
 * Step mode and the transfer study from the panel's controllers, against a real `jupyter server`
 * with the server extension and a real engine: a run started with step mode, a proposal rejected
 * with a note, one approved with the reviewer's version of train.py, one approved with "all"
 * (which ends step mode), the journal recording each as the panel's; then a transfer study of the
 * run, followed until its summary is complete.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ReviewController } from '../../src/lab/panel/review/review-controller';
import { RunController } from '../../src/lab/panel/run/run-controller';
import { describeState } from '../../src/lab/panel/run/state-words';
import { TransferController } from '../../src/lab/panel/transfer/transfer-controller';
import { startJupyterServer, type JupyterServer } from '../helpers/jupyter-server';
import { experiments, journal, makeWorkspace, STAND_IN_PROGRAM, waitFor } from '../helpers/workspace';

const trans = nullTranslator.load('jupyterlab_autoresearch');
let server: JupyterServer;
let ws: string;

beforeAll(async () => {
  server = await startJupyterServer();
  ws = path.join(server.root, 'ws');
  fs.cpSync(makeWorkspace({ program: STAND_IN_PROGRAM }), ws, { recursive: true });
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

describe('ReviewController and TransferController', () => {
  it('reviews a step-mode run from the panel, then studies its transfer', async () => {
    const settings = ServerConnection.makeSettings({
      baseUrl: server.url,
      wsUrl: server.url.replace(/^http/, 'ws'),
      token: server.token,
      WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    const notes: string[] = [];
    const notify = {
      success: (m: string) => void notes.push(m),
      error: (m: string) => void notes.push(`error: ${m}`),
      warning: (m: string) => {
        notes.push(`warning: ${m}`);
        return `toast-${notes.length}`;
      },
      dismiss: (id?: string) => void notes.push(`dismiss: ${id}`),
    };
    const controller = new RunController({ path: 'ws', settings, trans, notify });
    const run = controller.model;
    const review = new ReviewController({ path: 'ws', settings, trans, run, notify });
    const transfer = new TransferController({ path: 'ws', settings, trans, run, notify });
    const awaiting = (n: number) => run.pending?.n === n && review.model.proposal?.n === n && review.canDecide;
    try {
      await controller.refresh();
      expect(review.step).toBe(false);
      await review.toggleStep(); // no run yet: the choice for Start
      expect(review.step).toBe(true);
      expect(review.startOptions()).toEqual({ step: true });
      await controller.start({ tag: 's1', proposer: 'offline', budget_s: 1, noise_runs: 1, ...review.startOptions() });
      expect(notes.filter(n => n.startsWith('error'))).toEqual([]);

      await waitFor(() => awaiting(1), 60_000, '#1 to await review');
      expect(describeState(run, trans)).toBe('#1 awaiting review');
      expect(review.step).toBe(true);
      expect(review.model.proposal).toMatchObject({ n: 1, proposer: 'offline', editable: ['train.py'] });
      expect(review.model.proposal?.why).toMatch(/^offline move: /);
      expect(notes).toContainEqual(expect.stringMatching(/^warning: Autoresearch ws: #1 awaits review — /));
      await review.reject(1, 'not this direction');
      await waitFor(() => awaiting(2), 60_000, '#2 to await review');
      expect(notes).toContain('dismiss: toast-1');

      const proposed = review.model.proposal!.files['train.py'];
      const edited = `${proposed}\n# edited in the panel\n`;
      await review.approve(2, { 'train.py': edited });
      await waitFor(() => awaiting(3), 90_000, '#3 to await review');
      await review.approveAll(3);
      await waitFor(() => !run.step && run.experiments.some(e => e.n >= 4), 90_000, 'an unreviewed #4');
      expect(review.step).toBe(false);
      await controller.stop();
      await waitFor(() => run.state === 'stopped', 60_000, 'the run to stop');

      const done = experiments(ws, 's1');
      const byN = new Map(done.map(e => [e.n, e]));
      expect(byN.get(1)).toMatchObject({ status: 'rejected', reason: 'rejected by reviewer: not this direction' });
      expect(byN.get(1)?.review).toMatchObject({ action: 'reject', source: 'panel' });
      expect(byN.get(2)?.review).toMatchObject({ action: 'edit', source: 'panel' });
      expect(byN.get(3)?.review).toMatchObject({ action: 'approve', source: 'panel' });
      expect(byN.get(4)?.review).toBeUndefined();
      const decisions = journal(ws, 's1').filter(r => r.type === 'review' && r.event === 'decision');
      expect(decisions.map(r => (r.type === 'review' ? [r.n, r.action, r.source, r.all ?? false] : null))).toEqual([
        [1, 'reject', 'panel', false],
        [2, 'edit', 'panel', false],
        [3, 'approve', 'panel', true],
      ]);
      const edit = decisions.find(r => r.type === 'review' && r.n === 2);
      expect(edit?.type === 'review' && edit.edit_diff).toContain('+# edited in the panel');

      // The transfer study of the run: the stand-in ignores the scale, which is all this needs.
      await transfer.refresh();
      expect(transfer.canStart).toBe(true);
      await transfer.start({ env: { AUTORESEARCH_SCALE: '2' }, runs: 2 });
      expect(notes.filter(n => n.startsWith('error'))).toEqual([]);
      await waitFor(
        () => transfer.state?.running === false && !!transfer.state.summary?.summary.complete,
        120_000,
        'the study',
      );
      expect(run.study).toBe(false);
      const summary = transfer.state!.summary!;
      expect(summary.env).toEqual({ AUTORESEARCH_SCALE: '2' });
      expect(summary.changes.map(c => c.n)).toEqual(done.filter(e => e.status === 'keep' && e.n > 0).map(e => e.n));
      expect(notes).toContainEqual(`Autoresearch ws: ${summary.summary.line}`);
    } finally {
      review.dispose();
      transfer.dispose();
      controller.dispose();
    }
  }, 400_000);
});
