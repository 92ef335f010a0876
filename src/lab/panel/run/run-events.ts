/**
 * The run's event stream: a WebSocket on `/autoresearch/events` that replays the journal from
 * `since` (in batches of records) and then follows it, with the running experiment's log lines. On a drop it reconnects
 * from the last record it got, so nothing is missed nor seen twice, backing off as JupyterLab's
 * polls do (@lumino/polling's Poll) while the server does not answer. A socket refused before it
 * opened (a browser is never told the status) is followed by one REST request for the run: a
 * lasting refusal there (400 a bad path, 403 a link out, 409 a damaged journal) ends the retries
 * with its message.
 */
import { ServerConnection } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import type { JournalRecord } from '../../../core/journal/journal';
import { type IRecordRows, recordsFromRows } from '../../../core/journal/light-record';
import * as z from 'zod/mini';
import { RunStateFile } from '../../../core/journal/run-state';
import { englishMessages } from '../../../core/journal/zod-english';
import { eventsUrl } from '../../api/server';

englishMessages();

export interface IStateMessage {
  type: 'state';
  tag: string;
  state: 'running' | 'stopped' | 'died';
  pid: number | null;
  stopping: boolean;
  /** The run the workspace's engine works on, if one does (maybe not this one). */
  engine_tag: string | null;
  records: number;
  in_flight: { n: number; description: string; ts: string } | null;
}

/**
 * `.autoresearch/<tag>/state.json`, the engine's own reading of its journal (src/core/journal/run-state.ts),
 * as the server sends it: `status` already "died" when no engine works on the run. Checked on
 * arrival like everything read from the network: one the panel cannot read is left out (with a
 * warning), and the panel keeps showing the last one it could.
 */
const SentRunState = z.extend(RunStateFile, {
  status: z.enum([...RunStateFile.shape.status.options, 'died']),
  /** Step mode now (absent from engines before it could be switched during a run). */
  step: z.optional(z.boolean()),
});
export type IRunStateFile = z.infer<typeof SentRunState>;

/** An experiment in flight: the state file's entry for it. */
export type IInFlight = Pick<RunStateFile['in_flight'][number], 'n' | 'description' | 'ts' | 'phase'> & {
  /** null (or absent) with one worker. */
  worker?: number | null;
};

export interface IRunStateMessage {
  type: 'run_state';
  run_state: IRunStateFile;
}

export type EventMessage =
  | { type: 'records'; start: number; records: JournalRecord[] }
  | { type: 'log'; n: number; path: string; reset: boolean; lines: string[] }
  | IStateMessage
  | IRunStateMessage
  | { type: 'error'; message: string };

/** A light replay's `records` message as it comes, before recordsFromRows. */
type WireRows = { type: 'records'; start: number } & IRecordRows;

export interface IRunEventsHandlers {
  onMessage(message: EventMessage): void;
  /** Connected or not, for the toolbar; a drop is followed by reconnect attempts. */
  onConnection?(connected: boolean): void;
}

/**
 * Reconnection as JupyterLab's own polls back off: each connection is one tick of a Poll; a tick
 * ends when its socket closes, resolved if it had opened (reconnect soon), rejected if it never
 * did (wait longer each time, up to `max`).
 */
const RECONNECT = { interval: 500, backoff: 2, max: 10_000 };

export class RunEvents implements IDisposable {
  private socket: WebSocket | null = null;
  private since = 0;
  private readonly poll: Poll;

  constructor(
    private readonly settings: ServerConnection.ISettings,
    private readonly path: string,
    readonly tag: string,
    private readonly handlers: IRunEventsHandlers,
  ) {
    this.poll = new Poll({
      auto: false,
      factory: () => this.connect(),
      frequency: RECONNECT,
      // A hidden page still follows its run: the notifications and the status bar read it.
      standby: 'never',
      name: `autoresearch:events:${tag}`,
    });
    void this.poll.start();
  }

  get isDisposed(): boolean {
    return this.poll.isDisposed;
  }

  /** Stops listening for good. */
  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.poll.dispose();
    const socket = this.socket;
    this.socket = null;
    socket?.close();
  }

  /** One connection: settles when its socket closes. */
  private connect(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // Light: the replay's experiments as src/core/journal/light-record.ts says, without what only an output shows.
      const url = eventsUrl(this.settings, this.path, this.tag, this.since, true);
      const socket = new this.settings.WebSocket(url);
      this.socket = socket;
      let opened = false;
      socket.onerror = () => undefined; // a close follows, which decides what comes next
      socket.onopen = () => {
        opened = true;
        this.handlers.onConnection?.(true);
      };
      socket.onmessage = event => {
        if (this.socket !== socket) {
          return;
        }
        let message = JSON.parse(String(event.data)) as EventMessage | WireRows;
        if (message.type === 'records' && 'rows' in message) {
          // A light replay's rows (core/light-record.ts) are records again before anything reads them.
          try {
            message = { type: 'records', start: message.start, records: recordsFromRows(message) };
          } catch (err) {
            // A server from another build than this page: nothing of the message is taken.
            this.handlers.onMessage({ type: 'error', message: `${(err as Error).message}: reload the page` });
            return;
          }
        }
        if (message.type === 'records') {
          // Records already had before a reconnect are dropped; `since` moves past the rest.
          const skip = Math.max(0, this.since - message.start);
          if (skip >= message.records.length) {
            return;
          }
          message = { type: 'records', start: message.start + skip, records: message.records.slice(skip) };
          this.since = message.start + message.records.length;
        } else if (message.type === 'run_state') {
          const sent = SentRunState.safeParse(message.run_state);
          if (!sent.success) {
            console.warn(`autoresearch: a run_state the panel cannot read was left out: ${sent.error.message}`);
            return;
          }
          message = { type: 'run_state', run_state: sent.data };
        }
        this.handlers.onMessage(message);
      };
      socket.onclose = () => {
        if (this.socket !== socket || this.isDisposed) {
          resolve();
          return;
        }
        this.socket = null;
        this.handlers.onConnection?.(false);
        if (opened) {
          resolve();
          return;
        }
        void this.refusal().then(message => {
          if (message !== null && !this.isDisposed) {
            // The server will refuse every retry alike: say why once, instead of filling its log.
            this.dispose();
            this.handlers.onMessage({ type: 'error', message });
          }
          reject(new Error(`the event stream of ${this.tag} did not open`));
        });
      };
    });
  }

  /** The server's 4xx message for this run, or null when it answers otherwise (or not at all: a retry may work). */
  private async refusal(): Promise<string | null> {
    const url = `${this.settings.baseUrl}autoresearch/runs/status?${new URLSearchParams({ path: this.path, tag: this.tag })}`;
    try {
      const response = await ServerConnection.makeRequest(url, {}, this.settings);
      // 404 may only mean the run's journal is not written yet (a run that is starting): retried.
      if (![400, 403, 409].includes(response.status)) return null;
      const body = (await response.json().catch(() => ({}))) as { message?: string };
      return body.message ?? `the server refused the run's event stream (${response.status})`;
    } catch {
      return null;
    }
  }
}
