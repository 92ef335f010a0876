/**
 * The Autoresearch panel of one workspace: program.md as a markdown cell, the progress chart,
 * the experiments in flight with their live log, and every finished experiment as a notebook
 * output. It follows one run at a time over the event stream; reloading JupyterLab rebuilds it
 * from the journal, since the stream replays the journal before following it.
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
import { ChartView } from './chart-view';
import { ExperimentList } from './experiment-list';
import { frontMatterNumber } from './front-matter';
import { LiveView } from './live-view';
import { ProgramCell } from './program-cell';
import { RunController } from './run-controller';
import type { RunModel } from './run-model';
import { describeBest, describeState } from './run-state';
import { RunToolbar } from './run-toolbar';

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
}

export class AutoresearchPanel extends MainAreaWidget<Panel> {
  readonly path: string;
  readonly controller: RunController;
  readonly program: ProgramCell;
  readonly chart: ChartView;
  readonly list: ExperimentList;
  private readonly bar: RunToolbar;
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
    this.bar = new RunToolbar({ trans, model, commands: opts.commands, args: () => ({ path: this.path }) });
    this.notice.addClass('jp-AutoresearchPanel-notice');
    this.notice.setHidden(true);
    this.chart = new ChartView(opts.rendermime, trans, () => ({
      experiments: model.experiments,
      metric: model.metric,
      direction: model.direction,
      model,
    }));
    const live = new LiveView(model, trans);
    this.list = new ExperimentList({
      rendermime: opts.rendermime,
      trans,
      scroller: () => content.node,
      fetchLog: n => this.controller.fetchLog(n),
      metric: () => model.metric,
      direction: () => model.direction,
    });
    for (const w of [this.bar.runStrip, this.notice, this.program, this.chart, live, this.list]) {
      content.addWidget(w);
    }
    for (const [name, widget] of this.bar.items) {
      this.toolbar.addItem(name, widget);
    }

    this.program.loaded.connect((_, text) => this.bar.suggestBudget(frontMatterNumber(text.frontMatter, 'budget_s')));
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

  /** The options a Start or Resume sends: the toolbar's fields, then the settings. */
  runOptions(): IRunOptions {
    return this.bar.runOptions(this.opts.defaults());
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.bar.dispose();
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
