/**
 * Step mode's side of the server for one panel: it reads the proposal the run's state says is
 * pending (GET review), hands the engine the reviewer's decision (POST review), switches step
 * mode on the running engine (POST runs/step), and says once per proposal, as a notification
 * with a way to the panel, that one awaits review. After an edit it watches for the engine's
 * refusal, which changes no journal record and so reaches the panel only through GET review.
 *
 * The notification never covers the card's buttons: JupyterLab shows toasts at the bottom right,
 * over the panel, where Reject and Approve all often lie. So while the panel is in view its card
 * is the notice and the notification goes to the notification center alone (the status bar's bell
 * counts it) with no toast; a toast (with *Review*) is raised only while the panel is out of
 * view, and it gives way to that quiet entry as soon as the panel is shown. One notification per
 * pending proposal, dismissed once it is decided.
 */
import { PathExt } from '@jupyterlab/coreutils';
import type { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { Signal, type ISignal } from '@lumino/signaling';
import { decideReview, fetchReview, setStepMode, type IDecision } from '../../api/review';
import type { INotifier } from '../run/run-controller';
import type { RunModel } from '../run/run-model';
import { ReviewModel } from './review-model';

/** How often GET review is read while a decision waits for the engine. */
const WATCH_MS = 1000;

/** The part of @jupyterlab/apputils' Notification the review uses, besides success and error. */
export interface IReviewNotifier extends INotifier {
  /** autoClose 0: listed in the notification center, no toast (JupyterLab's Notification). */
  warning(
    message: string,
    options?: { autoClose?: number | false; actions?: Array<{ label: string; callback: () => void }> },
  ): unknown;
  dismiss?(id?: string): void;
}

export interface IReviewControllerOptions {
  path: string;
  settings: ServerConnection.ISettings;
  trans: TranslationBundle;
  /** The run the panel shows (its state.json says which proposal is pending, and the step mode). */
  run: RunModel;
  notify?: IReviewNotifier;
  /** Brings the panel to the front (the notification's action). */
  reveal?: () => void;
  /** Whether the panel is in view now, its card with it (then no toast: see above). Default: not. */
  visible?: () => boolean;
}

/** The notification of the pending proposal: its id, words, and whether it shows as a toast. */
interface INotice {
  id: string;
  message: string;
  toast: boolean;
}

export class ReviewController implements IDisposable {
  readonly model = new ReviewModel();
  /** `tag#n` of the pending proposal read (or being read). */
  private loadedFor: string | null = null;
  private readonly notified = new Set<string>();
  private notice: INotice | null = null;
  private watch: Poll | null = null;
  private actionsKey = '';
  private _isDisposed = false;
  private readonly _changed = new Signal<this, void>(this);

  constructor(private readonly opts: IReviewControllerOptions) {
    opts.run.changed.connect(this.sync, this);
    this.model.changed.connect(this.checkActions, this);
  }

  /** Which review actions apply (or the toggle's state) changed. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }
  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** An engine works on the run now, so a switch goes to it rather than to the next Start. */
  get live(): boolean {
    const run = this.opts.run;
    return run.state === 'running' && !run.stopping && !run.study;
  }
  /**
   * What the *Review each proposal* toggle shows: the running engine's mode (or the switch asked
   * of it), else the choice for the next Start.
   */
  get step(): boolean {
    return this.live ? (this.model.stepWanted ?? this.opts.run.step) : this.model.stepChoice;
  }
  get canToggleStep(): boolean {
    return this.whyNotToggleStep() === null;
  }
  /** A proposal is read, awaits its decision, and none is on its way. */
  get canDecide(): boolean {
    return this.whyNotDecide() === null;
  }

  /** Why *Review each proposal* cannot be switched now, in words; null when it can. */
  whyNotToggleStep(): string | null {
    const { trans, run } = this.opts;
    if (this.model.busy) {
      return trans.__('waiting for the server to answer the last request');
    }
    if (run.study) {
      return trans.__('a transfer study is running');
    }
    if (run.state === 'starting') {
      return trans.__('the run is starting: switch once it runs');
    }
    return run.stopping ? trans.__('the run is stopping') : null;
  }

  /** Why Approve, Edit, Reject and Approve all are unavailable now, in words; null when they are available. */
  whyNotDecide(): string | null {
    const { trans } = this.opts;
    const p = this.model.proposal;
    if (p === null) {
      return trans.__('no proposal awaits review');
    }
    if (this.model.busy) {
      return trans.__('waiting for the server to answer the last request');
    }
    if (this.model.sent !== null) {
      return trans.__('your decision on #%1 is on its way to the engine', this.model.sent);
    }
    return this.opts.run.pending?.n === p.n ? null : trans.__('the engine no longer waits on #%1', p.n);
  }

  /** The run option a Start or Resume adds: step mode when the toggle is on. */
  startOptions(): { step?: true } {
    return this.model.stepChoice ? { step: true } : {};
  }

  /** Flips step mode: on the running engine (POST runs/step), else for the next Start. */
  async toggleStep(): Promise<void> {
    const next = !this.step;
    const tag = this.opts.run.tag;
    if (!this.live || tag === null) {
      this.model.setStepChoice(next);
      return;
    }
    await this.request(async () => {
      const answer = await setStepMode(this.opts.settings, this.opts.path, tag, next);
      this.model.setStepWanted(answer.step);
      this.model.setStepChoice(answer.step);
    });
  }

  /** Approves proposal n as proposed, or with the reviewer's version of its files; a note goes with it. */
  approve(n: number, files?: Record<string, string>, note?: string): Promise<void> {
    const edited = files && Object.keys(files).length ? { files } : {};
    const text = note?.trim();
    return this.decide({ n, decision: 'approve', ...edited, ...(text ? { note: text } : {}) });
  }

  reject(n: number, note?: string): Promise<void> {
    const text = note?.trim();
    return this.decide({ n, decision: 'reject', ...(text ? { note: text } : {}) });
  }

  /** Approves n and reviews nothing more in this run. */
  approveAll(n: number): Promise<void> {
    return this.decide({ n, decision: 'approve', all: true });
  }

  /** Opens (or closes) the proposed files in editors. */
  setEditing(editing: boolean): void {
    this.model.setEditing(editing && this.model.proposal !== null);
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this.stopWatch();
    this.dismissNotice();
    this.opts.run.changed.disconnect(this.sync, this);
    Signal.clearData(this);
    Signal.clearData(this.model);
  }

  private async decide(decision: IDecision): Promise<void> {
    const tag = this.opts.run.tag;
    if (tag === null || !this.canDecide || this.model.proposal?.n !== decision.n) {
      return;
    }
    await this.request(async () => {
      await decideReview(this.opts.settings, this.opts.path, tag, decision);
      this.model.setSent(decision.n);
      if (decision.all) {
        this.model.setStepWanted(false);
        this.model.setStepChoice(false);
      }
      this.watchDecision(tag, decision.n);
    });
  }

  /** Runs a request with the buttons disabled; a refusal is said in the review output and as a notification. */
  private async request(action: () => Promise<void>): Promise<void> {
    this.model.setBusy(true);
    this.model.setError(null);
    try {
      await action();
    } catch (error) {
      const message = (error as Error).message;
      this.model.setError(message);
      this.opts.notify?.error(message, { autoClose: 8000 });
    } finally {
      this.model.setBusy(false);
    }
  }

  /** Reads GET review until the engine takes decision n (the file goes) or refuses it (refused changes). */
  private watchDecision(tag: string, n: number): void {
    this.stopWatch();
    const before = this.model.proposal?.refused?.ts ?? null;
    const poll = new Poll({
      factory: async () => {
        const pending = await fetchReview(this.opts.settings, this.opts.path, tag);
        if (poll !== this.watch) {
          return;
        }
        if (pending === null || pending.n !== n) {
          this.stopWatch();
        } else if ((pending.refused?.ts ?? null) !== before) {
          this.stopWatch();
          this.model.setProposal(pending);
          this.model.setSent(null);
        }
      },
      frequency: { interval: WATCH_MS, backoff: true, max: 10_000 },
      standby: 'never',
      name: `autoresearch:review:${tag}`,
    });
    this.watch = poll;
  }

  private stopWatch(): void {
    this.watch?.dispose();
    this.watch = null;
  }

  /** Follows the run's pending proposal: reads it when another is pending, says so once, forgets it when decided. */
  private sync(): void {
    const run = this.opts.run;
    const pending = run.pending;
    const key = pending && run.tag !== null ? `${run.tag}#${pending.n}` : null;
    if (key !== this.loadedFor) {
      this.loadedFor = key;
      this.stopWatch();
      this.dismissNotice();
      this.model.setProposal(null);
      if (pending && run.tag !== null) {
        void this.load(key!, run.tag, pending.n);
      }
    }
    if (key && pending && run.caughtUp && !this.notified.has(key)) {
      this.notified.add(key);
      this.announce(pending.n, pending.description);
    }
    // The engine applied the switch asked of it (or another run is shown): its own word is what counts.
    if (this.model.stepWanted !== null && (!this.live || run.step === this.model.stepWanted)) {
      this.model.setStepWanted(null);
    }
    this.checkActions();
  }

  private async load(key: string, tag: string, n: number): Promise<void> {
    try {
      const pending = await fetchReview(this.opts.settings, this.opts.path, tag);
      if (this.loadedFor === key && pending?.n === n) {
        this.model.setProposal(pending);
      }
    } catch (error) {
      if (this.loadedFor === key) {
        this.model.setError((error as Error).message);
      }
    }
  }

  /**
   * The panel came into view (its onAfterShow): a toast of its pending proposal gives way to a
   * quiet entry in the notification center, so it does not cover the card it points to.
   */
  panelShown(): void {
    if (this.notice?.toast) {
      const { message } = this.notice;
      this.dismissNotice();
      this.post(message, false);
    }
  }

  private announce(n: number, description: string): void {
    const { trans, path } = this.opts;
    const message = trans.__('Autoresearch %1: #%2 awaits review — %3', PathExt.basename(path), n, description);
    this.post(message, !(this.opts.visible?.() ?? false));
  }

  /** The notification, as a toast or (autoClose 0) in the notification center alone. */
  private post(message: string, toast: boolean): void {
    const { trans, notify } = this.opts;
    if (!notify) {
      return;
    }
    const id = notify.warning(message, {
      autoClose: toast ? false : 0,
      actions: [{ label: trans.__('Review'), callback: () => this.opts.reveal?.() }],
    });
    this.notice = typeof id === 'string' ? { id, message, toast } : null;
  }

  private dismissNotice(): void {
    if (this.notice !== null) {
      this.opts.notify?.dismiss?.(this.notice.id);
      this.notice = null;
    }
  }

  private checkActions(): void {
    const key = [this.canDecide, this.canToggleStep, this.step, this.model.editing, this.model.busy].join();
    if (key !== this.actionsKey) {
      this.actionsKey = key;
      this._changed.emit();
    }
  }
}
