/**
 * The Autoresearch panel of one workspace: program.md as a markdown cell, the progress chart,
 * the experiments in flight with their live log, and every finished experiment as a notebook
 * output. It follows one run at a time over the event stream; reloading JupyterLab rebuilds it
 * from the journal, since the stream replays the journal before following it.
 */
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import type { IEditorServices } from '@jupyterlab/codeeditor';
import { PageConfig, PathExt } from '@jupyterlab/coreutils';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { ServiceManager } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Panel, Widget } from '@lumino/widgets';
import type { ExperimentRecord } from '../../core/journal';
import type { RunSettings } from '../../core/run-options';
import * as api from '../api';
import { ChartView } from './chart-view';
import { ExperimentList } from './experiment-list';
import { frontMatterNumber } from './front-matter';
import { LiveView } from './live-view';
import { ProgramCell } from './program-cell';
import { RunEvents } from './run-events';
import { RunModel } from './run-model';
import { describeBest, describeState } from './run-state';
import { RunToolbar, type ToolbarAction } from './run-toolbar';

/**
 * The settings of schema/plugin.json the panel reads: the run options' values for new runs (which
 * options, their types and defaults: src/core/run-options.ts), and openOnStart (open the root's
 * panel when JupyterLab starts in a workspace).
 */
export type IRunDefaults = RunSettings & { openOnStart: boolean };

export interface IPanelOptions {
  /** The workspace folder, relative to the server root. */
  path: string;
  services: ServiceManager.IManager;
  rendermime: IRenderMimeRegistry;
  editorServices: IEditorServices;
  trans: TranslationBundle;
  defaults: () => IRunDefaults;
  /** Opens a file in JupyterLab (the exported notebook). */
  openFile: (path: string) => Promise<unknown>;
}

const POLL_MS = 5000;

export class AutoresearchPanel extends MainAreaWidget<Panel> {
  readonly path: string;
  readonly model = new RunModel();
  readonly program: ProgramCell;
  readonly chart: ChartView;
  readonly list: ExperimentList;
  private readonly bar: RunToolbar;
  private readonly notice = new Widget();
  private events: RunEvents | null = null;
  private readonly tick: ReturnType<typeof setInterval>;
  private readonly poll: ReturnType<typeof setInterval>;
  private busy = false;
  private replayed: ExperimentRecord[] = [];
  private serverProblem = false;
  private diedNoticeFor: string | null = null;
  private tags: string[] = [];
  private readonly ready: Promise<void>;

  constructor(private readonly opts: IPanelOptions) {
    const content = new Panel();
    super({ content });
    const { trans } = opts;
    this.path = opts.path;
    this.id = `autoresearch-${opts.path || 'root'}`;
    // The root folder has no name in its API path: use the server root's own.
    const name = PathExt.basename(opts.path) || PathExt.basename(PageConfig.getOption('serverRoot')) || '/';
    this.title.label = trans.__('Autoresearch: %1', name);
    this.title.caption = trans.__('Autoresearch workspace %1', opts.path || '/');
    this.title.closable = true;
    this.addClass('jp-AutoresearchPanel');
    content.addClass('jp-AutoresearchPanel-content');

    this.bar = new RunToolbar(trans, action => void this.act(action));
    this.notice.addClass('jp-AutoresearchPanel-notice');
    this.notice.setHidden(true);
    const programPath = PathExt.join(opts.path, 'program.md');
    this.program = new ProgramCell(opts.services.contents, programPath, opts.rendermime, opts.editorServices, trans);
    this.chart = new ChartView(opts.rendermime, trans, () => ({
      experiments: this.model.experiments,
      metric: this.model.metric,
      direction: this.model.direction,
      model: this.model,
    }));
    const live = new LiveView(this.model, trans);
    this.list = new ExperimentList({
      rendermime: opts.rendermime,
      trans,
      scroller: () => content.node,
      fetchLog: n => this.fetchLog(n),
      metric: () => this.model.metric,
      direction: () => this.model.direction,
    });
    for (const w of [this.bar.runStrip, this.notice, this.program, this.chart, live, this.list]) {
      content.addWidget(w);
    }

    for (const [name, widget] of this.bar.items) {
      this.toolbar.addItem(name, widget);
    }
    this.program.loaded.connect((_, text) => {
      const budget = frontMatterNumber(text.frontMatter, 'budget_s');
      if (budget !== null && !this.bar.budget.dataset.touched) {
        this.bar.budget.value = String(budget);
      }
    });
    this.bar.budget.addEventListener('input', () => (this.bar.budget.dataset.touched = '1'));

    // Replayed experiments wait until the replay is over and go in at once: adding them one by
    // one made each batch the newest, in view, and rendered (hundreds of outputs for nothing).
    this.model.experimentAdded.connect((_, { record, live }) =>
      live ? this.list.add([record]) : this.replayed.push(record),
    );
    this.model.changed.connect(this.onModelChanged, this);
    this.model.newBest.connect((_, record) => this.announceBest(record));
    this.tick = setInterval(() => this.updateStatus(), 1000);
    this.poll = setInterval(() => void this.pollRuns(), POLL_MS);
    this.ready = this.initialize();
  }

  /** Resolves once program.md, the kernels and the runs have been loaded. */
  get initialized(): Promise<void> {
    return this.ready;
  }

  /** The run state in a few words, for the status bar. */
  statusText(): string {
    const { trans } = this.opts;
    // The best as mean ± se with σ once runs are repeated; as before for older runs.
    const best = describeBest(this.model, trans);
    return `${describeState(this.model, trans)}${best ? ` · ${best}` : ''}`;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    clearInterval(this.tick);
    clearInterval(this.poll);
    this.events?.dispose();
    super.dispose();
  }

  private async initialize(): Promise<void> {
    const defaults = this.opts.defaults();
    this.bar.proposer.value = defaults.proposer;
    this.bar.model.value = defaults.model;
    this.bar.budget.value = String(defaults.budget_s);
    this.bar.syncModelField();
    const specs = this.opts.services.kernelspecs;
    const fillKernels = () => this.bar.setKernelSpecs(specs.specs, this.opts.defaults().kernel);
    specs.specsChanged.connect(fillKernels, this); // `this`: disconnected when the panel is disposed
    await Promise.all([
      this.program.load(),
      specs.ready.then(fillKernels).catch(() => fillKernels()),
      this.checkServer(),
    ]);
    await this.pollRuns(true);
  }

  /** Says up front when the server host cannot run the engine (no Node.js ≥ 20, say). */
  private async checkServer(): Promise<void> {
    try {
      const status = await api.fetchStatus(this.opts.services.serverSettings);
      if (!status.node.ok) {
        this.showNotice(status.node.message ?? this.opts.trans.__('Node.js is not usable on the server host.'), true);
        this.serverProblem = true;
      }
    } catch (error) {
      this.showNotice(
        this.opts.trans.__(
          'The server extension jupyterlab_autoresearch does not answer: %1',
          (error as Error).message,
        ),
        true,
      );
      this.serverProblem = true;
    }
  }

  /** Reads the workspace's runs (when the stream is down, or forced); follows the running one, else the one shown, else the latest. */
  private async pollRuns(force = false): Promise<void> {
    // While the stream is up it says when an engine starts another run (engine_tag): no polling.
    if (this.model.connected && !force) {
      return;
    }
    let list: api.IRunsList;
    try {
      list = await api.listRuns(this.opts.services.serverSettings, this.path);
    } catch (error) {
      if (force) {
        this.showNotice((error as Error).message, true);
      }
      return;
    }
    this.tags = list.runs.map(r => r.tag);
    const running = list.engine?.tag ?? null;
    const want =
      running ?? (this.model.tag && this.tags.includes(this.model.tag) ? this.model.tag : (this.tags[0] ?? null));
    if (want !== null && (want !== this.model.tag || !this.events)) {
      this.follow(want);
    } else {
      this.onModelChanged();
    }
    if (list.last_failure && !running) {
      this.showNotice(list.last_failure, true);
    }
  }

  /** Shows one run: clears the outputs and replays its journal over a fresh event stream. */
  private follow(tag: string): void {
    this.events?.dispose();
    this.list.clear();
    this.replayed = [];
    this.model.reset(tag);
    if (!this.tags.includes(tag)) {
      this.tags.unshift(tag);
    }
    this.events = new RunEvents(this.opts.services.serverSettings, this.path, tag, {
      onMessage: message => this.model.handle(message),
      onConnection: connected => this.model.setConnected(connected),
    });
  }

  private onModelChanged(): void {
    const engineTag = this.model.engineTag;
    if (engineTag !== null && engineTag !== this.model.tag) {
      // An engine started another run on this workspace (the CLI, another browser): show it.
      void this.pollRuns(true);
    }
    if (this.model.caughtUp) {
      if (this.replayed.length) {
        this.list.add(this.replayed);
        this.replayed = [];
      }
      this.chart.schedule();
    }
    if (this.model.error) {
      // A journal line the server cannot read: the records before it are shown, the rest is not.
      this.showNotice(this.model.error, true);
    }
    if (
      this.model.state === 'died' &&
      this.model.caughtUp &&
      this.diedNoticeFor !== this.model.tag &&
      !this.serverProblem
    ) {
      // The engine went away without ending the run (killed, machine restarted): offer the way on.
      this.diedNoticeFor = this.model.tag;
      this.showNotice(
        this.opts.trans.__(
          'Run %1 stopped without finishing (its engine is gone). Resume continues it where it left off.',
          this.model.tag ?? '',
        ),
      );
    }
    this.bar.setRuns(this.tags, this.model.tag);
    this.updateStatus();
  }

  /** The toolbar's state strip and which buttons apply. */
  private updateStatus(): void {
    this.bar.show(this.model, this.busy);
    this.node.dataset.state = this.model.state;
    this.node.dataset.experiments = String(this.model.experiments.length);
  }

  private async act(action: ToolbarAction): Promise<void> {
    const settings = this.opts.services.serverSettings;
    const { trans } = this.opts;
    if (action === 'select-run') {
      const tag = this.bar.runs.value;
      if (tag && tag !== this.model.tag) {
        this.follow(tag);
      }
      return;
    }
    this.busy = true;
    this.updateStatus();
    try {
      // What the cell holds is what the next proposal should read.
      await this.program.save();
      if (action === 'start' || action === 'resume') {
        const options = this.bar.runOptions(this.opts.defaults());
        const started =
          action === 'start'
            ? await api.startRun(settings, this.path, options)
            : await api.resumeRun(settings, this.path, { ...options, tag: this.model.tag ?? undefined });
        this.hideNotice();
        this.diedNoticeFor = null;
        this.follow(started.tag);
        this.model.state = 'starting';
      } else if (action === 'stop') {
        await api.stopRun(settings, this.path);
        this.model.stopping = true;
      } else if (action === 'export' && this.model.tag) {
        const done = await api.exportNotebook(settings, this.path, this.model.tag);
        Notification.success(trans.__('Exported %1', done.notebook), { autoClose: 4000 });
        await this.opts.openFile(done.notebook);
      }
    } catch (error) {
      this.showNotice((error as Error).message, true);
      Notification.error((error as Error).message, { autoClose: 8000 });
    } finally {
      this.busy = false;
      this.updateStatus();
    }
  }

  private announceBest(record: ExperimentRecord): void {
    const { trans } = this.opts;
    if (record.best_before === null) {
      return; // the baseline is not news
    }
    Notification.success(
      trans.__(
        'Autoresearch %1: new best %2 %3 (#%4) — %5',
        PathExt.basename(this.path),
        this.model.metric,
        record.metric?.toFixed(4) ?? '',
        record.n,
        record.description,
      ),
      { autoClose: 6000 },
    );
  }

  private async fetchLog(n: number): Promise<string | null> {
    if (!this.model.tag) {
      return null;
    }
    const log = await api.fetchLog(this.opts.services.serverSettings, this.path, this.model.tag, n);
    return log.text;
  }

  private showNotice(text: string, error = false): void {
    this.notice.node.textContent = text;
    this.notice.node.classList.toggle('jp-mod-error', error);
    this.notice.setHidden(false);
  }

  private hideNotice(): void {
    this.notice.setHidden(true);
  }
}
