/**
 * The run's event stream: a WebSocket on `/autoresearch/events` that replays the journal from
 * `since` (in batches of records) and then follows it, with the running experiment's log lines. On a drop it reconnects
 * from the last record it got, so nothing is missed nor seen twice.
 */
import type { ServerConnection } from '@jupyterlab/services';
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
    private readonly handlers: IRunEventsHandlers
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
    socket.onopen = () => {
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
      this.timer = setTimeout(() => {
        this.timer = null;
        if (!this.closed) {
          this.connect();
        }
      }, delay);
    };
  }
}
