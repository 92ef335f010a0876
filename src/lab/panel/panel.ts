/**
 * The Autoresearch panel of one workspace: program.md as a markdown cell, the progress chart,
 * the transfer study's table and chart, the experiments in flight with their live log, the
 * proposal awaiting review (step mode), and every finished experiment as a notebook output. It
 * follows one run at a time over the event stream; reloading JupyterLab rebuilds it from the
 * journal, since the stream replays the journal before following it.
 *
 * Layout and wiring only: its RunController talks to the server and holds the RunModel, the
 * widgets render the model, and the toolbar's buttons run the commands of ../run-commands.ts.
 */
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import type { IEditorServices } from '@jupyterlab/codeeditor';
import { PageConfig, PathExt } from '@jupyterlab/coreutils';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { ServiceManager } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { CommandRegistry } from '@lumino/commands';
import { Panel, Widget } from '@lumino/widgets';
import type { RunSettings } from '../../core/run-options';
import type { IRunOptions } from '../api';
import type { NotebookKernels } from '../notebook-kernels';
import { ChartView } from './chart-view';
import { ExperimentList } from './experiment-list';
import { frontMatterFlag, frontMatterNumber } from './front-matter';
import { LiveView } from './live-view';
import { ProgramCell } from './program-cell';
import { RunController } from './run-controller';
import type { RunModel } from './run-model';
import { describeBest, describeState } from './run-state';
import { RunToolbar } from './run-toolbar';
import { ReviewController } from './review-controller';
import { ReviewView } from './review-view';
import { TransferController } from './transfer-controller';
import { askTransfer } from './transfer-dialog';
import { TransferSection } from './transfer-section';

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
  /** What the toolbar's buttons execute (the commands of ../run-commands.ts). */
  commands: CommandRegistry;
  defaults: () => IRunDefaults;
  /** Opens a file in JupyterLab (the exported notebook). */
  openFile: (path: string) => Promise<unknown>;
  /** The open notebooks' kernels, which the kernel picker offers (none without JupyterLab's notebooks). */
  notebooks?: NotebookKernels | null;
}

export class AutoresearchPanel extends MainAreaWidget<Panel> {
  readonly path: string;
  readonly controller: RunController;
  /** Step mode: the proposal awaiting review and the decisions on it. */
  readonly review: ReviewController;
  /** The transfer study of the run shown. */
  readonly transfer: TransferController;
  readonly program: ProgramCell;
  readonly chart: ChartView;
  readonly list: ExperimentList;
  private readonly bar: RunToolbar;
  private reviewView: ReviewView | null = null;
  private readonly notice = new Widget();
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

    const programPath = PathExt.join(opts.path, 'program.md');
    this.program = new ProgramCell(opts.services.contents, programPath, opts.rendermime, opts.editorServices, trans);
    this.controller = new RunController({
      path: opts.path,
      settings: opts.services.serverSettings,
      trans,
      save: () => this.program.save(),
      openFile: opts.openFile,
      notify: Notification,
    });
    const model = this.model;
    const settings = opts.services.serverSettings;
    this.review = new ReviewController({
      path: opts.path,
      settings,
      trans,
      run: model,
      notify: Notification,
      // The notification's action: the panel in front, its pending proposal in view.
      reveal: () =>
        void opts.commands
          .execute('autoresearch:open', { path: this.path })
          .then(() => this.reviewView?.node.scrollIntoView({ block: 'start' })),
    });
    this.transfer = new TransferController({ path: opts.path, settings, trans, run: model, notify: Notification });
    const args = () => ({ path: this.path });
    this.bar = new RunToolbar({ trans, model, commands: opts.commands, args, workers: () => opts.defaults().workers });
    const notebooks = opts.notebooks;
    if (notebooks) {
      this.bar.setNotebooks(notebooks.notebooks);
      notebooks.changed.connect((_, list) => this.bar.setNotebooks(list), this); // `this`: disconnected on dispose
    }
    this.notice.addClass('jp-AutoresearchPanel-notice');
    this.notice.setHidden(true);
    this.chart = new ChartView(opts.rendermime, trans, () => ({
      experiments: model.experiments,
      metric: model.metric,
      direction: model.direction,
      model,
    }));
    const transfer = new TransferSection(this.transfer, opts.rendermime, trans);
    const live = new LiveView(model, trans);
    const review = (this.reviewView = new ReviewView({
      review: this.review,
      run: model,
      trans,
      commands: opts.commands,
      editorServices: opts.editorServices,
      args,
    }));
    this.list = new ExperimentList({
      rendermime: opts.rendermime,
      trans,
      scroller: () => content.node,
      fetchLog: n => this.controller.fetchLog(n),
      metric: () => model.metric,
      direction: () => model.direction,
    });
    for (const w of [this.bar.runStrip, this.notice, this.program, this.chart, transfer, live, review, this.list]) {
      content.addWidget(w);
    }
    for (const [name, widget] of this.bar.items) {
      this.toolbar.addItem(name, widget);
    }

    this.program.loaded.connect((_, text) => {
      this.bar.suggestBudget(frontMatterNumber(text.frontMatter, 'budget_s'));
      this.review.model.suggestStep(frontMatterFlag(text.frontMatter, 'step'));
    });
    this.controller.cleared.connect(() => this.list.clear());
    this.controller.experimentsAdded.connect((_, records) => this.list.add([...records]));
    this.controller.changed.connect(this.onControllerChanged, this);
    model.changed.connect(this.onModelChanged, this);
    this.ready = this.initialize();
  }

  /** The run this panel shows. */
  get model(): RunModel {
    return this.controller.model;
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

  /** The options a Start or Resume sends: the toolbar's fields (step mode included), then the settings. */
  runOptions(): IRunOptions {
    return { ...this.bar.runOptions(this.opts.defaults()), ...this.review.startOptions() };
  }

  /** Chooses the kernel of the open notebook at `path` in the toolbar's picker (*Autoresearch with this kernel*). */
  useNotebookKernel(path: string): void {
    this.bar.kernels.chooseNotebook(path);
  }

  /** The settings changed: the kernel setting, and whether *this very kernel* can be offered (workers). */
  settingsChanged(): void {
    this.bar.setKernelSpecs(this.opts.services.kernelspecs.specs, this.opts.defaults().kernel);
  }

  /** Asks for a transfer study's settings (program.md's prefilled) and starts it on the run shown. */
  async askTransfer(): Promise<void> {
    const tag = this.model.tag;
    if (tag === null) {
      return;
    }
    await this.transfer.refresh();
    const state = this.transfer.state;
    const defaults = state?.defaults ?? { env: {}, budget_s: null };
    const request = await askTransfer(this.opts.trans, tag, defaults, state?.defaults_problem ?? null);
    if (request) {
      // The same kernelspec as a run from this toolbar (a notebook's too: a study never takes over a
      // notebook's kernel), since a study replays through the executor a run uses.
      const kernel = this.bar.kernels.kernelSpec();
      await this.transfer.start(kernel ? { ...request, kernel } : request);
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.bar.dispose();
    this.review.dispose();
    this.transfer.dispose();
    this.controller.dispose();
    super.dispose();
  }

  private async initialize(): Promise<void> {
    this.bar.setDefaults(this.opts.defaults());
    const specs = this.opts.services.kernelspecs;
    const fillKernels = () => this.bar.setKernelSpecs(specs.specs, this.opts.defaults().kernel);
    specs.specsChanged.connect(fillKernels, this); // `this`: disconnected when the panel is disposed
    await Promise.all([
      this.program.load(),
      specs.ready.then(fillKernels).catch(() => fillKernels()),
      this.controller.checkServer(),
    ]);
    await this.controller.refresh();
  }

  private onModelChanged(): void {
    if (this.model.caughtUp) {
      this.chart.schedule();
    }
    this.bar.setRuns([...this.controller.tags], this.model.tag);
    this.node.dataset.state = this.model.state;
    this.node.dataset.review = this.model.pending ? String(this.model.pending.n) : '';
    this.node.dataset.experiments = String(this.model.experiments.length);
  }

  private onControllerChanged(): void {
    const notice = this.controller.notice;
    this.notice.node.textContent = notice?.text ?? '';
    this.notice.node.classList.toggle('jp-mod-error', !!notice?.error);
    this.notice.setHidden(notice === null);
    this.bar.setRuns([...this.controller.tags], this.model.tag);
  }
}
