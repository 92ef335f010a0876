/**
 * A workspace's runs, read with JupyterLab's Poll (@lumino/polling): at once when asked, then
 * every few seconds unless `quiet()` (the event stream is up and says itself when an engine
 * starts another run), backing off while the server does not answer, and not at all while the
 * page is hidden, as JupyterLab's own polls do.
 */
import type { ServerConnection } from '@jupyterlab/services';
import type { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { listRuns, type IRunsList } from '../../api/server';

/** How often the runs are read while nothing else says what changed. */
const POLL_MS = 5000;

export interface IRunsPollOptions {
  settings: ServerConnection.ISettings;
  path: string;
  /** True while reading is not needed. */
  quiet: () => boolean;
  read: (list: IRunsList) => void;
  /** asked: the read was asked for (refresh), not a periodic one. */
  failed: (error: Error, asked: boolean) => void;
}

export class RunsPoll implements IDisposable {
  private readonly poll: Poll;

  constructor(private readonly opts: IRunsPollOptions) {
    this.poll = new Poll({
      auto: false,
      factory: () => this.read(this.asked()),
      frequency: { interval: POLL_MS, backoff: true, max: 60_000 },
      standby: () => (this.asked() ? false : opts.quiet() || 'when-hidden'),
      name: `autoresearch:runs:${opts.path}`,
    });
  }

  get isDisposed(): boolean {
    return this.poll.isDisposed;
  }

  /** Reads the runs now, whatever `quiet()` says, and resolves once they are read; the first call starts the polling. */
  async refresh(): Promise<void> {
    await (this.poll.state.phase === 'constructed' ? this.poll.start() : this.poll.refresh());
    await this.poll.tick.catch(() => undefined);
  }

  dispose(): void {
    this.poll.dispose();
  }

  /** Whether the tick under way was asked for: the first (started) or a refresh. */
  private asked(): boolean {
    const phase = this.poll?.state.phase;
    return phase === 'started' || phase === 'refreshed';
  }

  private async read(asked: boolean): Promise<void> {
    let list: IRunsList;
    try {
      list = await listRuns(this.opts.settings, this.opts.path);
    } catch (error) {
      this.opts.failed(error as Error, asked);
      throw error; // the poll backs off
    }
    this.opts.read(list);
  }
}
