/**
 * The transfer study of the run a panel shows: GET transfer when the panel follows a run and then
 * every few seconds while a study runs (its summary.json grows with each replay), POST transfer to
 * start one, and a notification when one ends. It tells the run model whether a study goes on,
 * so the strip says so rather than "running".
 */
import { PathExt } from '@jupyterlab/coreutils';
import type { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { Signal, type ISignal } from '@lumino/signaling';
import { fetchTransfer, startTransfer, type ITransferRequest, type ITransferState } from '../../api/transfer';
import type { INotifier } from '../run/run-controller';
import type { RunModel, RunModelChange } from '../run/run-model';

/** How often GET transfer is read while a study runs. */
const POLL_MS = 3000;

export interface ITransferControllerOptions {
  path: string;
  settings: ServerConnection.ISettings;
  trans: TranslationBundle;
  run: RunModel;
  notify?: INotifier;
}

export class TransferController implements IDisposable {
  private _state: ITransferState | null = null;
  private _busy = false;
  private lastRunState = '';
  private readonly poll: Poll;
  private readonly _changed = new Signal<this, void>(this);

  constructor(private readonly opts: ITransferControllerOptions) {
    this.poll = new Poll({
      auto: false,
      factory: () => this.read(),
      frequency: { interval: POLL_MS, backoff: true, max: 30_000 },
      // Between studies nothing changes the file but a study, which this panel (or the CLI) starts;
      // a read asked for (the first, a refresh) happens whatever.
      standby: () => (this.asked() ? false : !this._state?.running || 'when-hidden'),
      name: `autoresearch:transfer:${opts.path}`,
    });
    opts.run.changed.connect(this.onRunChanged, this);
  }

  /** The study's state, the summary and the defaults changed, or an action began or ended. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }
  get isDisposed(): boolean {
    return this.poll.isDisposed;
  }
  /** GET transfer's last answer for the run shown; null before one came. */
  get state(): ITransferState | null {
    return this._state;
  }
  get busy(): boolean {
    return this._busy;
  }
  /** A study may start: a run with experiments is shown, and no engine works on the workspace's run. */
  get canStart(): boolean {
    return this.whyNot() === null;
  }

  /** Why a study cannot be started now, in words (the button's tooltip says it); null when it can. */
  whyNot(): string | null {
    const { run, trans } = this.opts;
    if (this._busy) {
      return trans.__('waiting for the server to answer the last request');
    }
    if (run.study) {
      return trans.__('a transfer study of this run is running');
    }
    if (run.state === 'running' || run.state === 'starting') {
      // One engine per workspace: the study replays commits in the folder the run trains in.
      return trans.__('the run is going on: a study replays its commits once it has stopped');
    }
    if (run.tag === null) {
      return trans.__('there is no run to study yet');
    }
    return run.experiments.length === 0 ? trans.__('no experiment of this run has finished yet') : null;
  }

  /** Reads the study's state now; resolves once read (or once reading failed). */
  async refresh(): Promise<void> {
    if (this.poll.state.phase === 'constructed') {
      await this.poll.start();
    } else {
      await this.poll.refresh();
    }
    await this.poll.tick.catch(() => undefined);
  }

  /** Starts a study of the run shown. */
  async start(request: ITransferRequest): Promise<void> {
    const tag = this.opts.run.tag;
    if (tag === null || !this.canStart) {
      return;
    }
    this.setBusy(true);
    try {
      await startTransfer(this.opts.settings, this.opts.path, tag, request);
      // Running from now: a study that ends before the next read is still announced.
      if (this._state) {
        this._state = { ...this._state, running: true, failure: null };
      }
      this.opts.run.setStudy(true);
      this.opts.notify?.success(this.opts.trans.__('Transfer study of %1 started', tag), { autoClose: 4000 });
    } catch (error) {
      this.opts.notify?.error((error as Error).message, { autoClose: 8000 });
    } finally {
      this.setBusy(false);
    }
    await this.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.poll.dispose();
    this.opts.run.changed.disconnect(this.onRunChanged, this);
    Signal.clearData(this);
  }

  /** Whether the tick under way was asked for: the first (started) or a refresh. */
  private asked(): boolean {
    const phase = this.poll?.state.phase;
    return phase === 'started' || phase === 'refreshed';
  }

  private setBusy(busy: boolean): void {
    this._busy = busy;
    this._changed.emit();
  }

  private onRunChanged(run: RunModel, change: RunModelChange): void {
    if (change === 'reset') {
      this._state = null;
      this._changed.emit();
      if (run.tag !== null) {
        void this.refresh();
      }
    } else if (change === 'state' || change === 'run-state' || change === 'study') {
      this._changed.emit(); // canStart follows the run's state
    }
    // An engine came or went (a study started from a terminal, say): ask whether it is a study.
    if (change === 'state' && run.state !== this.lastRunState && run.tag !== null) {
      this.lastRunState = run.state;
      void this.refresh();
    }
  }

  private async read(): Promise<void> {
    const tag = this.opts.run.tag;
    if (tag === null) {
      return;
    }
    const next = await fetchTransfer(this.opts.settings, this.opts.path, tag);
    if (this.opts.run.tag !== tag) {
      return; // the panel follows another run now
    }
    const ended = this._state?.running === true && !next.running;
    this._state = next;
    this.opts.run.setStudy(next.running);
    this._changed.emit();
    if (ended) {
      this.announceEnd(next);
    }
  }

  private announceEnd(s: ITransferState): void {
    const { trans, notify } = this.opts;
    const name = PathExt.basename(this.opts.path);
    if (s.failure) {
      notify?.error(trans.__('Autoresearch %1: the transfer study failed: %2', name, s.failure.message), {
        autoClose: false,
      });
    } else if (s.summary) {
      notify?.success(trans.__('Autoresearch %1: %2', name, s.summary.summary.line), { autoClose: 8000 });
    }
  }
}
