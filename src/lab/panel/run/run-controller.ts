/**
 * What one Autoresearch panel does with the server, apart from drawing: which run it follows
 * (the running one, else the one shown, else the latest), the workspace's runs read with
 * JupyterLab's Poll while the event stream is down, the stream itself, the actions (start, stop,
 * resume, export, show another run), the replayed experiments held back until the replay is
 * over, and the notifications. The panel lays out widgets that render its model and notices.
 */
import { PathExt } from '@jupyterlab/coreutils';
import type { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { IDisposable } from '@lumino/disposable';
import { Signal, type ISignal } from '@lumino/signaling';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { SETTINGS_REFUSAL } from '../../../core/config/security-settings';
import * as api from '../../api/server';
import { ExperimentBatch } from './experiment-batch';
import { type RunAction, whyNotAction } from './run-actions';
import { RunEvents } from './run-events';
import { RunModel, type INewBest } from './run-model';
import { RunsPoll } from './runs-poll';

export interface INotice {
  text: string;
  error: boolean;
}

export interface IRunControllerOptions {
  /** The workspace folder, relative to the server root. */
  path: string;
  settings: ServerConnection.ISettings;
  trans: TranslationBundle;
  /** Before every action: what the program cell holds is what the next proposal should read. */
  save?: () => Promise<void>;
  /** Opens a file in JupyterLab (the exported notebook). */
  openFile?: (path: string) => Promise<unknown>;
  /** Where notifications go: JupyterLab's Notification in the panel (apputils stays out of this file). */
  notify?: INotifier;
  /**
   * A resume refused for security settings changed since the run's last start (a run may have
   * rewritten program.md): shows the engine's message, true to resume accepting them. Without it
   * the refusal is only said.
   */
  confirmSettings?: (message: string) => Promise<boolean>;
}

/** The part of @jupyterlab/apputils' Notification the controller uses. */
export interface INotifier {
  success(message: string, options?: { autoClose?: number | false }): unknown;
  error(message: string, options?: { autoClose?: number | false }): unknown;
}

/** What a `changed` emission is about. */
export type RunControllerChange = 'runs' | 'busy' | 'notice' | 'actions';

export class RunController implements IDisposable {
  readonly model = new RunModel();
  readonly path: string;
  private readonly runs: RunsPoll;
  private events: RunEvents | null = null;
  private _tags: string[] = [];
  private _nextTag: string | null = null;
  private _busy = false;
  private _notice: INotice | null = null;
  private replayed: ExperimentRecord[] = [];
  /** The experiments asked for whole in this turn of the event loop (fetchExperiment). */
  private readonly experimentBatch: ExperimentBatch;
  private serverProblem = false;
  private diedNoticeFor: string | null = null;
  private actionsKey = '';
  private _isDisposed = false;
  private readonly _changed = new Signal<this, RunControllerChange>(this);
  private readonly _experimentsAdded = new Signal<this, readonly ExperimentRecord[]>(this);
  private readonly _cleared = new Signal<this, string>(this);

  constructor(private readonly opts: IRunControllerOptions) {
    this.path = opts.path;
    this.experimentBatch = new ExperimentBatch(
      async (tag, wanted) => (await api.fetchExperiments(opts.settings, opts.path, tag, wanted)).experiments,
    );
    this.runs = new RunsPoll({
      settings: opts.settings,
      path: opts.path,
      // While the stream is up it says when an engine starts another run (engine_tag).
      quiet: () => this.model.connected,
      read: list => this.onRuns(list),
      // What checkServer said of the server (asked for beside the first read) is the clearer notice.
      failed: (error, asked) => (asked && !this.serverProblem ? this.showNotice(error.message, true) : undefined),
    });
    // Replayed experiments wait until the replay is over and go in at once: adding them one by
    // one made each batch the newest, in view, and rendered (hundreds of outputs for nothing).
    this.model.experimentAdded.connect((_, { record, live }) =>
      live ? this._experimentsAdded.emit([record]) : this.replayed.push(record),
    );
    this.model.changed.connect(this.onModelChanged, this);
    this.model.newBest.connect((_, best) => this.announceBest(best));
  }

  /** Tags, busy, the notice or which actions apply changed. */
  get changed(): ISignal<this, RunControllerChange> {
    return this._changed;
  }
  /** Finished experiments to show, in journal order: the replay's in one batch, then each live one. */
  get experimentsAdded(): ISignal<this, readonly ExperimentRecord[]> {
    return this._experimentsAdded;
  }
  /** The panel follows another run (the tag): what it showed goes. */
  get cleared(): ISignal<this, string> {
    return this._cleared;
  }
  get isDisposed(): boolean {
    return this._isDisposed;
  }
  /** The workspace's runs, newest first. */
  /** The tag a Start without one would give the new run, as the server says (null: not known yet). */
  get nextTag(): string | null {
    return this._nextTag;
  }

  get tags(): readonly string[] {
    return this._tags;
  }
  /** An action is under way. */
  get busy(): boolean {
    return this._busy;
  }
  /** What the panel says above its content, if anything. */
  get notice(): INotice | null {
    return this._notice;
  }

  get canStart(): boolean {
    return this.whyNot('start') === null;
  }
  get canStop(): boolean {
    return this.whyNot('stop') === null;
  }
  get canResume(): boolean {
    return this.whyNot('resume') === null;
  }
  get canExport(): boolean {
    return this.whyNot('export') === null;
  }

  /** Why Start, Stop, Resume or Export is unavailable now, in words (its tooltip says it); null when it is available. */
  whyNot(action: RunAction): string | null {
    return whyNotAction(action, this.model, this._busy, this.opts.trans);
  }

  /** Says up front when the server host cannot run the engine (no Node.js ≥ 20.19, say). */
  async checkServer(): Promise<void> {
    try {
      const status = await api.fetchStatus(this.opts.settings);
      if (!status.node.ok) {
        this.serverProblem = true;
        this.showNotice(status.node.message ?? this.opts.trans.__('Node.js is not usable on the server host.'), true);
      }
    } catch (error) {
      this.serverProblem = true;
      this.showNotice(
        this.opts.trans.__(
          'The server extension jupyterlab_autoresearch does not answer: %1',
          (error as Error).message,
        ),
        true,
      );
    }
  }

  /** Reads the runs now and follows one; resolves once they are read. The first call starts the polling. */
  refresh(): Promise<void> {
    return this.runs.refresh();
  }

  /** Shows one run: clears the outputs and replays its journal over a fresh event stream. */
  follow(tag: string): void {
    this.events?.dispose();
    this.replayed = [];
    this._cleared.emit(tag);
    this.model.reset(tag);
    if (!this._tags.includes(tag)) {
      this._tags = [tag, ...this._tags];
      this._changed.emit('runs');
    }
    this.events = new RunEvents(this.opts.settings, this.path, tag, {
      onMessage: message => this.model.handle(message),
      onConnection: connected => this.model.setConnected(connected),
    });
  }

  /** Shows another of the workspace's runs. */
  selectRun(tag: string): void {
    if (tag && tag !== this.model.tag) {
      this.follow(tag);
    }
  }

  start(options: api.IRunOptions): Promise<void> {
    return this.act(async () => {
      this.begin(await api.startRun(this.opts.settings, this.path, options));
    });
  }

  resume(options: api.IRunOptions): Promise<void> {
    return this.act(async () => {
      const tag = this.model.tag ?? undefined;
      const resume = (o: api.IRunOptions) => api.resumeRun(this.opts.settings, this.path, { ...o, tag });
      let started: { tag: string };
      try {
        started = await resume(options);
      } catch (error) {
        // The engine's refusal names each changed setting; the person accepts them here, or it stands.
        const message = (error as Error).message;
        const confirm = this.opts.confirmSettings;
        if (!message.startsWith(SETTINGS_REFUSAL) || !confirm || !(await confirm(message))) throw error;
        started = await resume({ ...options, accept_settings: true });
      }
      this.begin(started);
    });
  }

  stop(): Promise<void> {
    return this.act(async () => {
      await api.stopRun(this.opts.settings, this.path);
      this.model.markStopping();
    });
  }

  exportNotebook(): Promise<void> {
    return this.act(async () => {
      const tag = this.model.tag;
      if (!tag) {
        return;
      }
      const done = await api.exportNotebook(this.opts.settings, this.path, tag);
      this.opts.notify?.success(this.opts.trans.__('Exported %1', done.notebook), { autoClose: 4000 });
      await this.opts.openFile?.(done.notebook);
    });
  }

  /**
   * Experiment n whole, as the journal holds it: the list asks for those it renders, which the
   * replay sent light. The numbers asked for in one turn of the event loop go in one request.
   */
  fetchExperiment(n: number): Promise<ExperimentRecord | null> {
    const tag = this.model.tag;
    if (!tag) {
      return Promise.resolve(null);
    }
    return this.experimentBatch.get(tag, n);
  }

  /** A finished experiment's log, for a crash's log tail. */
  async fetchLog(n: number): Promise<string | null> {
    if (!this.model.tag) {
      return null;
    }
    return (await api.fetchLog(this.opts.settings, this.path, this.model.tag, n)).text;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this.runs.dispose();
    this.events?.dispose();
    this.events = null;
    Signal.clearData(this);
    Signal.clearData(this.model);
  }

  private begin(started: { tag: string }): void {
    this.hideNotice();
    this.diedNoticeFor = null;
    this.follow(started.tag);
    this.model.markStarting();
  }

  /** Runs an action with the buttons disabled; a failure is said in the panel and as a notification. */
  private async act(action: () => Promise<void>): Promise<void> {
    this.setBusy(true);
    try {
      await this.opts.save?.();
      await action();
    } catch (error) {
      this.showNotice((error as Error).message, true);
      this.opts.notify?.error((error as Error).message, { autoClose: 8000 });
    } finally {
      this.setBusy(false);
    }
  }

  private setBusy(busy: boolean): void {
    this._busy = busy;
    this._changed.emit('busy');
    this.checkActions();
  }

  /** Follows the running run, else the one shown, else the latest. */
  private onRuns(list: api.IRunsList): void {
    const tags = list.runs.map(r => r.tag);
    const nextTag = list.next_tag ?? null;
    if (tags.join('\n') !== this._tags.join('\n') || nextTag !== this._nextTag) {
      this._tags = tags;
      this._nextTag = nextTag;
      this._changed.emit('runs');
    }
    const running = list.engine?.tag ?? null;
    const shown = this.model.tag;
    const want = running ?? (shown && tags.includes(shown) ? shown : (tags[0] ?? null));
    if (want !== null && (want !== shown || !this.events)) {
      this.follow(want);
    }
    if (list.last_failure && !running) {
      this.showNotice(list.last_failure, true);
    }
  }

  private onModelChanged(): void {
    const m = this.model;
    if (m.engineTag !== null && m.engineTag !== m.tag) {
      // An engine started another run on this workspace (the CLI, another browser): show it.
      void this.refresh();
    }
    if (m.caughtUp && this.replayed.length) {
      const replayed = this.replayed;
      this.replayed = [];
      this._experimentsAdded.emit(replayed);
    }
    if (m.error) {
      // A journal line the server cannot read: the records before it are shown, the rest is not.
      this.showNotice(m.error, true);
    }
    if (m.state === 'died' && m.caughtUp && this.diedNoticeFor !== m.tag && !this.serverProblem) {
      // The engine went away without ending the run (killed, machine restarted): offer the way on.
      this.diedNoticeFor = m.tag;
      this.showNotice(
        this.opts.trans.__(
          'Run %1 stopped without finishing (its engine is gone). Resume continues it where it left off.',
          m.tag ?? '',
        ),
      );
    }
    this.checkActions();
  }

  /** Says when which actions apply changed, for the toolbar and the commands' enabled states. */
  private checkActions(): void {
    const key = [this.canStart, this.canStop, this.canResume, this.canExport].join();
    if (key !== this.actionsKey) {
      this.actionsKey = key;
      this._changed.emit('actions');
    }
  }

  private announceBest(best: INewBest): void {
    const { trans } = this.opts;
    this.opts.notify?.success(
      trans.__(
        'Autoresearch %1: new best %2 %3 (#%4) — %5',
        PathExt.basename(this.path),
        this.model.metric,
        best.metric.toFixed(4),
        best.n,
        best.description,
      ),
      { autoClose: 6000 },
    );
  }

  private showNotice(text: string, error = false): void {
    this._notice = { text, error };
    this._changed.emit('notice');
  }

  private hideNotice(): void {
    this._notice = null;
    this._changed.emit('notice');
  }
}
