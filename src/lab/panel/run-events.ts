/**
 * The run's event stream: a WebSocket on `/autoresearch/events` that replays the journal from
 * `since` (in batches of records) and then follows it, with the running experiment's log lines. On a drop it reconnects
 * from the last record it got, so nothing is missed nor seen twice. A socket refused before it
 * opened (a browser is never told the status) is followed by one REST request for the run: a
 * lasting refusal there (400 a bad path, 403 a link out, 409 a damaged journal) ends the retries
 * with its message.
 */
import { ServerConnection } from '@jupyterlab/services';
import type { JournalRecord } from '../../core/journal';
import { eventsUrl } from '../api';

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

export type EventMessage =
  | { type: 'records'; start: number; records: JournalRecord[] }
  | { type: 'log'; n: number; path: string; reset: boolean; lines: string[] }
  | IStateMessage
  | { type: 'error'; message: string };

export interface IRunEventsHandlers {
  onMessage(message: EventMessage): void;
  /** Connected or not, for the toolbar; a drop is followed by reconnect attempts. */
  onConnection?(connected: boolean): void;
}

const RETRY_MS = [500, 1000, 2000, 5000, 10000];

export class RunEvents {
  private socket: WebSocket | null = null;
  private since = 0;
  private attempt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;

  constructor(
    private readonly settings: ServerConnection.ISettings,
    private readonly path: string,
    readonly tag: string,
    private readonly handlers: IRunEventsHandlers,
  ) {
    this.connect();
  }

  /** Stops listening for good. */
  dispose(): void {
    this.closed = true;
    if (this.timer !== null) {
      clearTimeout(this.timer);
    }
    this.socket?.close();
    this.socket = null;
  }

  private connect(): void {
    const url = eventsUrl(this.settings, this.path, this.tag, this.since);
    const socket = new this.settings.WebSocket(url);
    this.socket = socket;
    let opened = false;
    socket.onerror = () => undefined; // a close follows, which decides what comes next
    socket.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.handlers.onConnection?.(true);
    };
    socket.onmessage = event => {
      let message = JSON.parse(String(event.data)) as EventMessage;
      if (message.type === 'records') {
        // Records already had before a reconnect are dropped; `since` moves past the rest.
        const skip = Math.max(0, this.since - message.start);
        if (skip >= message.records.length) {
          return;
        }
        message = { type: 'records', start: message.start + skip, records: message.records.slice(skip) };
        this.since = message.start + message.records.length;
      }
      this.handlers.onMessage(message);
    };
    socket.onclose = () => {
      if (this.socket !== socket || this.closed) {
        return;
      }
      this.socket = null;
      this.handlers.onConnection?.(false);
      const delay = RETRY_MS[Math.min(this.attempt, RETRY_MS.length - 1)];
      this.attempt += 1;
      const refused = opened ? Promise.resolve(null) : this.refusal();
      void refused.then(message => {
        if (this.closed) return;
        if (message !== null) {
          // The server will refuse every retry alike: say why once, instead of filling its log.
          this.closed = true;
          this.handlers.onMessage({ type: 'error', message });
          return;
        }
        this.timer = setTimeout(() => {
          this.timer = null;
          if (!this.closed) {
            this.connect();
          }
        }, delay);
      });
    };
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
