/**
 * The Autoresearch panel of one workspace: program.md as a markdown cell, the progress chart,
 * the transfer study's table and chart, the model's latest research notes, the experiments in
 * flight with their live log, the proposal awaiting review (step mode), and every finished
 * experiment as a notebook output. It
 * follows one run at a time over the event stream; reloading JupyterLab rebuilds it from the
 * journal, since the stream replays the journal before following it.
 *
 * Layout and wiring only: its RunController talks to the server and holds the RunModel, the
 * widgets render the model, and the toolbar's buttons run the commands of ../commands/run-commands.ts.
 * Which experiments are expanded is kept per run in JupyterLab's state database, so a reload
 * shows them as they were.
 */
import { MainAreaWidget, Notification } from '@jupyterlab/apputils';
import type { IEditorServices } from '@jupyterlab/codeeditor';
import { PageConfig, PathExt } from '@jupyterlab/coreutils';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { ServiceManager } from '@jupyterlab/services';
import type { IStateDB } from '@jupyterlab/statedb';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { CommandRegistry } from '@lumino/commands';
import type { Message } from '@lumino/messaging';
import { Debouncer } from '@lumino/polling';
import { Panel, Widget } from '@lumino/widgets';
import type { IRunOptions } from '../api/server';
import type { NotebookKernels } from '../notebooks/notebook-kernels';
import { ChartView } from './chart-view';
import { CompareControls } from './compare/compare-controls';
import { shownNumbers } from './list/experiment-filter';
import { ExperimentList } from './list/experiment-list';
import { parseExpansion } from './list/expansion';
import { frontMatterEntries, frontMatterFlag, frontMatterNumber } from './front-matter';
import { LiveView } from './run/live-view';
import { NotesSection } from './notes-section';
import { ProgramCell } from './program-cell';
import { RunController } from './run/run-controller';
import type { RunModel } from './run/run-model';
import { bestHeaderFigures, describeBest, describeState } from './run/state-words';
import type { IRunDefaults } from './run-defaults';
import { RunToolbar } from './toolbar/run-toolbar';
import { confirmChangedSettings } from './run/settings-dialog';
import { ReviewController } from './review/review-controller';
import { ReviewView } from './review/review-view';
import { TransferController } from './transfer/transfer-controller';
import { askTransfer } from './transfer/transfer-dialog';
import { TransferSection } from './transfer/transfer-section';
import { notePanelOpened } from './warm-up';

export interface IPanelOptions {
  /** The workspace folder, relative to the server root. */
  path: string;
  services: ServiceManager.IManager;
  rendermime: IRenderMimeRegistry;
  editorServices: IEditorServices;
  trans: TranslationBundle;
  /** What the toolbar's buttons execute (the commands of ../commands/run-commands.ts). */
  commands: CommandRegistry;
  defaults: () => IRunDefaults;
  /** Opens a file in JupyterLab (the exported notebook). */
  openFile: (path: string) => Promise<unknown>;
  /** The open notebooks' kernels, which the kernel picker offers (none without JupyterLab's notebooks). */
  notebooks?: NotebookKernels | null;
  /** Where which experiments are expanded is kept across reloads (JupyterLab's state database), if anywhere. */
  state?: Pick<IStateDB, 'fetch' | 'save' | 'remove'> | null;
}

/** The state database's key of a run's expanded experiments: one per workspace and run. */
export function expansionKey(path: string, tag: string): string {
  return `jupyterlab-autoresearch:expanded:${path}:${tag}`;
}

/** How long the expansion waits for the next click before it is saved (a burst of toggles, one write). */
const SAVE_EXPANSION_MS = 400;

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
  /** The model's latest research notes (claude proposer). */
  readonly notes: NotesSection;
  /** Filter and Compare: the filter bar, the compare picks and the comparison shown. */
  private readonly compare: CompareControls;
  private readonly bar: RunToolbar;
  private reviewView: ReviewView | null = null;
  private readonly notice = new Widget();
  private readonly ready: Promise<void>;
  private readonly saveExpansion: Debouncer;
  /** The run whose expansion the user changed and is not saved yet. */
  private unsavedExpansion: string | null = null;

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
      confirmSettings: message => confirmChangedSettings(trans, message),
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
      visible: () => this.isVisible,
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
    // Before the chart, whose first draw may come at once and asks the filter what is shown.
    const compare = (this.compare = new CompareControls({
      trans,
      settings,
      path: opts.path,
      tag: () => model.tag,
      listNode: () => this.list.node,
    }));
    this.chart = new ChartView(opts.rendermime, trans, () => ({
      experiments: model.experiments,
      metric: model.metric,
      direction: model.direction,
      model,
      shown: shownNumbers(this.compare.filter, model.experiments),
    }));
    const transfer = new TransferSection(this.transfer, opts.rendermime, trans);
    const notes = (this.notes = new NotesSection(trans));
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
      fetchExperiment: n => this.controller.fetchExperiment(n),
      metric: () => model.metric,
      direction: () => model.direction,
      shows: record => compare.filter.matches(record),
      decorateItem: (node, record) => compare.decorate(node, record),
    });
    compare.filter.changed.connect(() => {
      this.list.applyFilter();
      this.chart.schedule();
    });
    const parts = [
      this.bar.nextRunBar,
      this.bar.runStrip,
      this.notice,
      this.program,
      this.chart,
      transfer,
      notes,
      live,
    ];
    for (const w of [...parts, review, compare.filterBar, compare.slot, this.list]) {
      content.addWidget(w);
    }
    for (const [name, widget] of this.bar.items) {
      this.toolbar.addItem(name, widget);
    }

    this.program.loaded.connect((_, text) => {
      this.bar.suggestBudget(frontMatterNumber(text.frontMatter, 'budget_s'));
      // The engine runs as Slurm jobs where program.md has slurm: and no flag names an executor.
      this.bar.kernels.suggestSlurm(frontMatterEntries(text.frontMatter).some(([key]) => key === 'slurm'));
      this.review.model.suggestStep(frontMatterFlag(text.frontMatter, 'step'));
    });
    this.saveExpansion = new Debouncer(() => this.writeExpansion(), SAVE_EXPANSION_MS);
    this.controller.cleared.connect((_, tag) => {
      // What was changed on the run shown goes under its own key before the list forgets it.
      void this.writeExpansion();
      this.list.clear();
      this.notes.clear();
      this.compare.reset();
      this.compare.setRecords([]);
      void this.readExpansion(tag);
    });
    this.list.expansionChanged.connect(() => {
      this.unsavedExpansion = this.model.tag;
      void this.saveExpansion.invoke();
    });
    this.controller.experimentsAdded.connect((_, records) => {
      this.list.add([...records]);
      this.notes.add(records);
      this.compare.setRecords(this.model.experiments);
    });
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

  /** Opens program.md's cell for editing, its caret in the editor. */
  editProgram(): void {
    this.program.startEditing();
  }

  /** Whether the best experiment so far is listed, for *Jump to best experiment*. */
  get canJumpToBest(): boolean {
    const best = this.model.best;
    return best !== null && this.list.has(best.n);
  }

  /** Scrolls to the best experiment, expanded, and focuses its header; false when there is none listed. */
  jumpToBest(): boolean {
    const best = this.model.best;
    const record = best && this.model.experiments.find(e => e.n === best.n);
    if (record && !this.compare.filter.matches(record)) {
      this.compare.filter.clear(); // the best is what was asked for, whatever the filter hides
    }
    return best !== null && this.list.reveal(best.n);
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
      // notebook's kernel), or Slurm, since a study replays through the executor a run uses.
      await this.transfer.start({ ...request, ...this.bar.kernels.transferOptions() });
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.review.panelShown();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    void this.writeExpansion();
    this.saveExpansion.dispose();
    this.bar.dispose();
    this.compare.dispose();
    this.review.dispose();
    this.transfer.dispose();
    this.controller.dispose();
    super.dispose();
  }

  private async initialize(): Promise<void> {
    notePanelOpened(); // later pages of this browser warm up for it (./warm-up)
    this.bar.setDefaults(this.opts.defaults());
    const specs = this.opts.services.kernelspecs;
    const fillKernels = () => this.bar.setKernelSpecs(specs.specs, this.opts.defaults().kernel);
    specs.specsChanged.connect(fillKernels, this); // `this`: disconnected when the panel is disposed
    // The runs, and with them the event stream's replay (the longest wait on a long run), come
    // first, beside the server's status; program.md is read and rendered once the stream is
    // asked for. Rendering it (the markdown cell, its editor's languages) holds the main thread
    // for a few hundred milliseconds on a page's first open, and the runs' answer or the stream's
    // connection waited behind it: the replay then started half a second late.
    await Promise.all([
      this.controller.refresh().finally(() => this.program.load()),
      this.controller.checkServer(),
      specs.ready.then(fillKernels).catch(() => fillKernels()),
    ]);
  }

  /** Shows the run's experiments expanded as they were saved, if they were. */
  private async readExpansion(tag: string): Promise<void> {
    const state = this.opts.state;
    if (!state) {
      return;
    }
    try {
      const saved = parseExpansion(await state.fetch(expansionKey(this.path, tag)));
      if (saved && this.model.tag === tag) {
        this.list.restoreExpansion(saved);
      }
    } catch (error) {
      console.warn('autoresearch: could not read which experiments were expanded.', error);
    }
  }

  /** Saves the expansion the user changed, if any is unsaved; the default is saved as no entry at all. */
  private async writeExpansion(): Promise<void> {
    const tag = this.unsavedExpansion;
    const state = this.opts.state;
    this.unsavedExpansion = null;
    if (tag === null || !state || tag !== this.model.tag) {
      return;
    }
    const key = expansionKey(this.path, tag);
    const expansion = this.list.expansionState;
    try {
      await (expansion ? state.save(key, { ...expansion }) : state.remove(key));
    } catch (error) {
      console.warn('autoresearch: could not save which experiments are expanded.', error);
    }
  }

  private onModelChanged(): void {
    if (this.model.caughtUp) {
      this.chart.schedule();
    }
    // The best's header says what the strip, the chart and the status bar say, from the same state.
    this.list.setBestNow(bestHeaderFigures(this.model));
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
    this.bar.setNextTag(this.controller.nextTag);
  }
}
