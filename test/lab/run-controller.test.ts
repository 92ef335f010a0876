/**
 * The panel's controller against a real `jupyter server` with the server extension: it reads the
 * workspace's runs, follows the latest over the event stream, hands the replayed experiments on in
 * one batch, then starts a run of its own, sees its experiments arrive one by one, and stops it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { RunController } from '../../src/lab/panel/run/run-controller';
import { describeState } from '../../src/lab/panel/run/state-words';
import { startJupyterServer, type JupyterServer } from '../helpers/jupyter-server';
import { cli, experiments, makeWorkspace, STAND_IN_PROGRAM, waitFor } from '../helpers/workspace';

const trans = nullTranslator.load('jupyterlab_autoresearch');
let server: JupyterServer;
let ws: string;

beforeAll(async () => {
  server = await startJupyterServer();
  ws = path.join(server.root, 'ws');
  fs.cpSync(makeWorkspace({ program: STAND_IN_PROGRAM }), ws, { recursive: true });
  const run = await cli([
    'run',
    ws,
    '--tag',
    't1',
    '--max-experiments',
    '2',
    '--proposer',
    'offline',
    '--noise-runs',
    '1',
  ]);
  expect(run.code, run.stderr).toBe(0);
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

describe('RunController', () => {
  it('follows the latest run, replays it in one batch, then starts, follows and stops a run', async () => {
    const settings = ServerConnection.makeSettings({
      baseUrl: server.url,
      wsUrl: server.url.replace(/^http/, 'ws'),
      token: server.token,
      WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    const notes: string[] = [];
    const notify = { success: (m: string) => notes.push(m), error: (m: string) => notes.push(`error: ${m}`) };
    const controller = new RunController({ path: 'ws', settings, trans, notify });
    const batches: number[][] = [];
    controller.experimentsAdded.connect((_, records) => batches.push(records.map(r => r.n)));
    const m = controller.model;
    try {
      await controller.checkServer();
      expect(controller.notice).toBeNull();
      await controller.refresh();
      expect(controller.tags).toEqual(['t1']);
      await waitFor(() => m.caughtUp && batches.length > 0, 20_000, 'the replay');
      const done = experiments(ws, 't1');
      expect(batches).toEqual([done.map(e => e.n)]);
      expect(m.state).toBe('stopped');
      expect(describeState(m, trans)).toMatch(/^stopped \(/);
      const lastKeep = done.filter(e => e.status === 'keep').at(-1)!;
      expect(m.best).toMatchObject({ n: lastKeep.n, metric: lastKeep.metric });
      // The server sends the engine's state file: the figures are the file's, and agree with the journal.
      expect(m.runState).toMatchObject({ tag: 't1', status: 'stopped', experiments: done.length });
      expect(m.best?.n).toBe(m.runState?.best?.n);
      expect([controller.canStart, controller.canStop, controller.canResume, controller.canExport]).toEqual([
        true,
        false,
        true,
        true,
      ]);

      await controller.start({ tag: 't2', proposer: 'offline', budget_s: 1, noise_runs: 1, max_experiments: 500 });
      expect(notes.filter(n => n.startsWith('error'))).toEqual([]);
      expect(m.tag).toBe('t2');
      expect(controller.tags).toEqual(['t2', 't1']);
      await waitFor(() => m.state === 'running', 30_000, 'the run to start');
      expect(controller.canStart).toBe(false);
      await waitFor(() => m.experiments.length >= 2, 60_000, 'two experiments');
      // After the cleared list, each experiment of the live run came on its own.
      expect(batches.slice(1).every(b => b.length === 1)).toBe(true);
      await controller.stop();
      await waitFor(() => m.state === 'stopped', 60_000, 'the run to stop');
      expect(m.runEnd?.reason).toBe('stop');
      expect(m.inFlight.size).toBe(0);
    } finally {
      controller.dispose();
    }
  }, 180_000);
});
