/**
 * The panel's event stream client over a real WebSocket (the `ws` server on 127.0.0.1): batches of
 * records are handed on in order, and after a dropped connection it reconnects with `since` = the
 * records it has, dropping any the server sends again.
 */
import { ServerConnection } from '@jupyterlab/services';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import type { JournalRecord } from '../../src/core/journal/journal';
import { deriveRunState } from '../../src/core/journal/run-state';
import { RunEvents, type EventMessage } from '../../src/lab/panel/run/run-events';
import { waitFor } from '../helpers/workspace';

const end = (i: number): JournalRecord => ({
  type: 'run_end',
  ts: 't',
  reason: 'stop',
  message: String(i),
  best_commit: null,
  best_metric: null,
});

let server: WebSocketServer | null = null;
afterEach(() => server?.close());

/** Settings for a client of `wss` (a `ws` server on 127.0.0.1), once it listens. */
async function settingsFor(wss: WebSocketServer, token?: string): Promise<ServerConnection.ISettings> {
  await new Promise(resolve => wss.on('listening', resolve));
  const port = (wss.address() as { port: number }).port;
  return ServerConnection.makeSettings({
    baseUrl: `http://127.0.0.1:${port}/`,
    wsUrl: `ws://127.0.0.1:${port}/`,
    ...(token ? { token } : {}),
    WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
  });
}

describe('RunEvents', () => {
  it('hands on record batches in order and reconnects from where it was, without repeats', async () => {
    const connections: URL[] = [];
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    server.on('connection', (socket, request) => {
      const url = new URL(request.url ?? '/', 'ws://x');
      connections.push(url);
      if (connections.length === 1) {
        socket.send(JSON.stringify({ type: 'records', start: 0, records: [end(0), end(1), end(2)] }));
        socket.send(
          JSON.stringify({
            type: 'state',
            tag: 't1',
            state: 'running',
            pid: 1,
            stopping: false,
            engine_tag: 't1',
            records: 3,
            in_flight: null,
          }),
        );
        setTimeout(() => socket.terminate(), 50); // the connection drops
      } else {
        // A server that replays a little too much after the reconnect: 2 is sent again.
        socket.send(JSON.stringify({ type: 'records', start: 2, records: [end(2), end(3)] }));
        socket.send(JSON.stringify({ type: 'records', start: 4, records: [end(4)] }));
      }
    });
    const settings = await settingsFor(server, 'tok');
    const got: string[] = [];
    const links: boolean[] = [];
    const events = new RunEvents(settings, 'ws dir', 't1', {
      onMessage: (m: EventMessage) => {
        if (m.type === 'records') got.push(...m.records.map(r => (r as { message: string }).message));
      },
      onConnection: up => links.push(up),
    });
    try {
      await waitFor(() => got.length >= 5, 10_000, 'five records');
      expect(got).toEqual(['0', '1', '2', '3', '4']);
      expect(links).toEqual([true, false, true]);
      expect(
        connections.map(u => [
          u.pathname,
          u.searchParams.get('path'),
          u.searchParams.get('tag'),
          u.searchParams.get('since'),
          u.searchParams.get('token'),
        ]),
      ).toEqual([
        ['/autoresearch/events', 'ws dir', 't1', '0', 'tok'],
        ['/autoresearch/events', 'ws dir', 't1', '3', 'tok'],
      ]);
    } finally {
      events.dispose();
    }
  });
});

describe('RunEvents and a light replay in rows', () => {
  it('hands on the records the rows carry, and an error (nothing taken) for a row of no shape', async () => {
    const shapes = [
      ['experiment_start', 'n'],
      ['run_end', 'ts', 'reason', 'message', 'best_commit', 'best_metric'],
    ];
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    server.on('connection', socket => {
      socket.send(
        JSON.stringify({
          type: 'records',
          start: 0,
          shapes,
          rows: [
            [0, 4],
            [1, 't', 'stop', '0', null, null],
          ],
        }),
      );
      socket.send(JSON.stringify({ type: 'records', start: 2, shapes, rows: [[2, 5]] }));
      socket.send(JSON.stringify({ type: 'records', start: 2, shapes, rows: [[0, 5, 'extra']] }));
      socket.send(JSON.stringify({ type: 'records', start: 2, records: [end(1)] }));
    });
    const settings = await settingsFor(server);
    const got: EventMessage[] = [];
    const events = new RunEvents(settings, 'ws', 't1', { onMessage: m => got.push(m) });
    try {
      await waitFor(() => got.length >= 4, 10_000, 'four messages');
      expect(got).toEqual([
        { type: 'records', start: 0, records: [{ type: 'experiment_start', n: 4 }, end(0)] },
        { type: 'error', message: 'row 0 of a records message matches none of its 2 shapes: reload the page' },
        { type: 'error', message: 'row 0 of a records message matches none of its 2 shapes: reload the page' },
        // The bad messages moved nothing on: the next records are still counted from 2.
        { type: 'records', start: 2, records: [end(1)] },
      ]);
    } finally {
      events.dispose();
    }
  });
});

describe('RunEvents refused for good', () => {
  it('stops reconnecting once the server says why (a damaged journal: 409), and hands the message on', async () => {
    const http = await import('node:http');
    let upgrades = 0;
    const web = http.createServer((req, res) => {
      expect(req.url).toMatch(/^\/autoresearch\/runs\/status\?path=ws&tag=t1(&|$)/);
      res.writeHead(409, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({ message: 'ws/.autoresearch/t1/journal.jsonl line 2 is not JSON; repair or delete that line' }),
      );
    });
    web.on('upgrade', (_req, socket) => {
      upgrades += 1;
      socket.end('HTTP/1.1 409 Conflict\r\nContent-Length: 0\r\n\r\n');
    });
    await new Promise<void>(resolve => web.listen(0, '127.0.0.1', resolve));
    const port = (web.address() as { port: number }).port;
    const settings = ServerConnection.makeSettings({
      baseUrl: `http://127.0.0.1:${port}/`,
      wsUrl: `ws://127.0.0.1:${port}/`,
      token: 'tok',
      WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    const errors: string[] = [];
    const events = new RunEvents(settings, 'ws', 't1', {
      onMessage: m => m.type === 'error' && errors.push(m.message),
    });
    try {
      await waitFor(() => errors.length > 0, 10_000, 'the refusal');
      expect(errors).toEqual(['ws/.autoresearch/t1/journal.jsonl line 2 is not JSON; repair or delete that line']);
      await new Promise(r => setTimeout(r, 2500)); // past the first retries' delays
      expect(upgrades).toBe(1);
    } finally {
      events.dispose();
      web.close();
    }
  });
});

describe('RunEvents while the server is away', () => {
  it('keeps trying, further apart, and connects once the server answers', async () => {
    const { freePort } = await import('../helpers/jupyter-server');
    const port = await freePort();
    const settings = ServerConnection.makeSettings({
      baseUrl: `http://127.0.0.1:${port}/`,
      wsUrl: `ws://127.0.0.1:${port}/`,
      WebSocket: WebSocket as unknown as typeof globalThis.WebSocket,
    });
    const links: boolean[] = [];
    const got: string[] = [];
    const events = new RunEvents(settings, 'ws', 't1', {
      onMessage: m => m.type === 'records' && got.push(...m.records.map(r => (r as { message: string }).message)),
      onConnection: up => links.push(up),
    });
    try {
      await new Promise(r => setTimeout(r, 2000));
      const failures = links.length;
      // Refused attempts, each followed by a longer wait: a handful in two seconds, not dozens.
      expect(failures).toBeGreaterThanOrEqual(2);
      expect(failures).toBeLessThanOrEqual(8);
      expect(links.every(up => !up)).toBe(true);
      server = new WebSocketServer({ host: '127.0.0.1', port });
      server.on('connection', socket => socket.send(JSON.stringify({ type: 'records', start: 0, records: [end(0)] })));
      await waitFor(() => got.length > 0, 15_000, 'the connection');
      expect(links.at(-1)).toBe(true);
      expect(got).toEqual(['0']);
    } finally {
      events.dispose();
    }
  });
});

describe('RunEvents and the run_state message', () => {
  it('hands on a state file it can read and leaves out one it cannot', async () => {
    const good = { ...deriveRunState([end(0)], 10, 't1'), status: 'died' };
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    // An older engine's file, from before the trust report: the server rewrites one, and the
    // panel, which reads its trust line from it, leaves one that slipped through out.
    const { trust: _trust, ...older } = good;
    server.on('connection', socket => {
      socket.send(JSON.stringify({ type: 'run_state', run_state: { ...good, best: { n: 'seven' } } }));
      socket.send(JSON.stringify({ type: 'run_state', run_state: older }));
      socket.send(JSON.stringify({ type: 'run_state', run_state: good }));
    });
    const settings = await settingsFor(server);
    const got: EventMessage[] = [];
    const warn = console.warn;
    const warnings: string[] = [];
    console.warn = (m: string) => warnings.push(m);
    const events = new RunEvents(settings, 'ws', 't1', { onMessage: m => got.push(m) });
    try {
      await waitFor(() => got.length > 0, 10_000, 'the state file');
      expect(got).toEqual([{ type: 'run_state', run_state: good }]);
      expect(warnings).toEqual([
        expect.stringMatching(/^autoresearch: a run_state the panel cannot read was left out/),
        expect.stringMatching(/^autoresearch: a run_state the panel cannot read was left out.*trust/s),
      ]);
    } finally {
      console.warn = warn;
      events.dispose();
    }
  });
});
