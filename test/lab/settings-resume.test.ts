/**
 * The panel's resume of a run whose program.md a training run rewrote (`sandbox: off`): the
 * server relays the engine's refusal, the controller asks (confirmSettings) with the engine's
 * words, and resumes accepting them only when told; a real `jupyter server`, a real engine.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { RunStartRecord } from '../../src/core/journal/journal';
import { RunController } from '../../src/lab/panel/run/run-controller';
import { startJupyterServer, type JupyterServer } from '../helpers/jupyter-server';
import { cli, journal, makeWorkspace, STAND_IN_PROGRAM, waitFor } from '../helpers/workspace';

const trans = nullTranslator.load('jupyterlab_autoresearch');
let server: JupyterServer;
let ws: string;

beforeAll(async () => {
  server = await startJupyterServer();
  ws = path.join(server.root, 'ws');
  fs.cpSync(makeWorkspace({ program: STAND_IN_PROGRAM }), ws, { recursive: true });
  const run = await cli(['run', ws, '--tag', 't1', '--max-experiments', '0', '--proposer', 'offline']);
  expect(run.code, run.stderr).toBe(0);
  // What the attack left: the front matter with the sandbox off.
  const program = path.join(ws, 'program.md');
  fs.writeFileSync(program, fs.readFileSync(program, 'utf8').replace('budget_s: 1\n', 'budget_s: 1\nsandbox: off\n'));
}, 120_000);

afterAll(async () => {
  await server?.stop();
});

const starts = () => journal(ws, 't1').filter((r): r is RunStartRecord => r.type === 'run_start');

describe('the panel resumes a run whose security settings a run changed', () => {
  it('front matter `sandbox: off` written by a run: the panel shows the refusal, and resumes accepting it only once confirmed', async () => {
    const settings = ServerConnection.makeSettings({
      baseUrl: server.url,
      wsUrl: server.url.replace(/^http/, 'ws'),
      token: server.token,
      WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    const asked: string[] = [];
    let answer = false;
    const confirmSettings = (message: string) => (asked.push(message), Promise.resolve(answer));
    const controller = new RunController({ path: 'ws', settings, trans, confirmSettings });
    try {
      await controller.refresh();
      await waitFor(() => controller.model.state === 'stopped', 20_000, 'the run to show');
      const options = { proposer: 'offline' as const, more_experiments: 0 };

      await controller.resume(options);
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatch(
        /^security settings changed since run t1 last started: sandbox auto → off \(from program\.md\); /,
      );
      expect(controller.notice).toEqual({ text: asked[0], error: true });
      expect(starts()).toHaveLength(1);

      answer = true;
      await controller.resume(options);
      expect(asked).toHaveLength(2);
      await waitFor(() => starts().length === 2, 30_000, 'the resumed run to start');
      expect(starts()[1]).toMatchObject({
        resume: true,
        settings_from: { sandbox: 'program.md' },
        settings_changed: { since: 't1', accepted: true, changes: [{ setting: 'sandbox', after: 'off' }] },
      });
      await waitFor(() => controller.model.state === 'stopped', 60_000, 'the resumed run to end');
    } finally {
      controller.dispose();
    }
  }, 180_000);
});
