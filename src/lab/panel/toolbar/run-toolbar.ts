/**
 * The panel's toolbar controls: kernel (./kernel-controls.ts: a kernelspec, or an open notebook's
 * kernel used for its environment or as that very kernel), proposer and model, budget, the *Review each proposal*
 * toggle, Start / Stop / Resume, Export, Transfer Study…, the run being shown, and the run's
 * state with a budget progress bar and the cost.
 * Plain form controls styled by JupyterLab's classes, so themes apply. The buttons and the run
 * picker execute the panel's commands (src/lab/commands/run-commands.ts), take their labels from them and are
 * enabled as the commands are, like JupyterLab's command toolbar buttons (and carry the command
 * id as data-command, as those do). The proposers, their labels and which take a model come
 * from their declaration (PROPOSER_INFO): the toolbar names none.
 */
import type { KernelSpec } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { CommandRegistry } from '@lumino/commands';
import type { ReadonlyJSONObject, ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';
import { TAG_RULE_WORDS, validTag } from '../../../core/journal/layout';
import { PROPOSER_INFO, type SettingKey } from '../../../core/config/run-options';
import { settingKeys } from '../../../core/config/run-option-schemas';
import { orList, PROPOSER_NAMES, proposersWith, type ProposerName } from '../../../core/config/proposers';
import type { IRunOptions } from '../../api/server';
import type { INotebookKernel } from '../../notebooks/notebook-kernels';
import { KernelControls } from './kernel-controls';
import { control, item, keepCaretKeys, showItem } from './toolbar-items';
import { RunCommandIDs } from '../../commands/command-ids';
import type { IRunDefaults } from '../run-defaults';
import type { RunModel } from '../run/run-model';
import { countdown, describeSandbox, describeState, describeStripBest } from '../run/state-words';

export interface IRunToolbarOptions {
  trans: TranslationBundle;
  model: RunModel;
  commands: CommandRegistry;
  /** The arguments that make the commands act on this toolbar's panel. */
  args: () => ReadonlyPartialJSONObject;
  /** The workers setting: *this very kernel* takes one (default 1). */
  workers?: () => number;
}

/** The buttons with their JupyterLab button class (a toggle shows its state as aria-pressed). */
const BUTTONS: Array<[string, string]> = [
  [RunCommandIDs.start, 'jp-mod-accept'],
  [RunCommandIDs.stop, 'jp-mod-warn'],
  [RunCommandIDs.resume, 'jp-mod-reject'],
  [RunCommandIDs.export, 'jp-mod-reject'],
  [RunCommandIDs.reviewEach, 'jp-mod-reject jp-AutoresearchToolbar-toggle'],
  [RunCommandIDs.transfer, 'jp-mod-reject'],
];

/**
 * The run controls, the toolbar's first items: Start, Stop, Resume, Export, then the run picker
 * and the transfer study. Only they are in the toolbar, so they fit it down to a narrow panel
 * (a toolbar folds what does not fit into its `⋯` menu, last first: the study, then the
 * picker). What shapes the next run (kernel, proposer, model, budget, tag, step mode) is a row
 * of its own under the toolbar, which wraps instead (nextRunBar).
 */
const RUN_CONTROLS = new Set<string>([
  RunCommandIDs.start,
  RunCommandIDs.stop,
  RunCommandIDs.resume,
  RunCommandIDs.export,
]);

/** Whether the proposer takes this run option: one that some proposers declare as theirs goes to them alone. */
function proposerTakes(proposer: ProposerName, key: string): boolean {
  const owners = proposersWith(key);
  return owners.length === 0 || owners.includes(proposer);
}

/** The settings the toolbar shows as fields (the settings give their initial values); the field wins. */
const TOOLBAR_FIELDS = new Set<SettingKey>(['proposer', 'model', 'budget_s', 'kernel']);

export class RunToolbar {
  /** The kernel picker and how a notebook's kernel is used. */
  readonly kernels: KernelControls;
  readonly proposer = control('select', 'jp-mod-styled jp-AutoresearchToolbar-proposer');
  readonly model = control('input', 'jp-mod-styled jp-AutoresearchToolbar-model');
  readonly budget = control('input', 'jp-mod-styled jp-AutoresearchToolbar-budget');
  readonly runs = control('select', 'jp-mod-styled jp-AutoresearchToolbar-runs');
  /** The command buttons, by command id. */
  readonly buttons = new Map<string, HTMLButtonElement>();
  readonly state = document.createElement('span');
  readonly progress = document.createElement('progress');
  readonly cost = document.createElement('span');
  /** Whether the training runs are sandboxed (the last run's word). */
  readonly sandbox = document.createElement('span');
  readonly best = document.createElement('span');
  /** The state line, budget bar, best and cost, shown at the top of the panel's content. */
  readonly runStrip = new Widget();
  /** The new run's tag: empty leaves it to the rule (src/core/journal/layout.ts freeTag), shown as its placeholder. */
  readonly tag = control('input', 'jp-mod-styled jp-AutoresearchToolbar-tag');
  /** The toolbar items in order, for MainAreaWidget.toolbar.addItem. */
  readonly items: Array<[string, Widget]>;
  /** The next run's fields, a row under the toolbar that wraps on a narrow panel. */
  readonly nextRunBar = new Widget();
  /** The tag a Start without one gives the run, as the server says (null: not known). */
  private nextTag: string | null = null;
  private readonly trans: TranslationBundle;
  private readonly run: RunModel;
  private readonly commands: CommandRegistry;
  private readonly args: () => ReadonlyPartialJSONObject;
  /** Ticks the budget's countdown while an experiment trains. */
  private readonly clock: Poll;
  private budgetTouched = false;

  constructor(opts: IRunToolbarOptions) {
    const { trans, commands } = opts;
    this.trans = trans;
    this.run = opts.model;
    this.commands = commands;
    this.args = opts.args;
    this.kernels = new KernelControls(trans, opts.workers ?? (() => 1));
    this.proposer.title = trans.__('Who proposes the edits to train.py');
    for (const name of PROPOSER_NAMES) {
      const option = new Option(trans.__(PROPOSER_INFO[name].label), name);
      option.title = trans.__(PROPOSER_INFO[name].description);
      this.proposer.appendChild(option);
    }
    const withModel = PROPOSER_NAMES.filter(n => PROPOSER_INFO[n].hasModel);
    this.model.title = trans.__('Model of the %1 proposer (empty: the engine default)', orList(withModel));
    // Empty sends no model: program.md's, else the engine's default.
    this.model.placeholder = trans.__('default');
    keepCaretKeys(this.model);
    this.budget.type = 'number';
    this.budget.min = '1';
    this.budget.step = '1';
    this.budget.title = trans.__('Training budget of one experiment, in seconds');
    this.runs.title = trans.__('The run shown');
    for (const [id, mod] of BUTTONS) {
      const b = control('button', `jp-Button jp-mod-styled ${mod} jp-AutoresearchToolbar-button`);
      b.dataset.command = id;
      b.addEventListener('click', () => void commands.execute(id, this.args()));
      this.buttons.set(id, b);
    }
    this.runs.addEventListener('change', () => {
      void commands.execute(RunCommandIDs.selectRun, { ...this.args(), tag: this.runs.value });
    });
    this.proposer.addEventListener('change', () => this.syncModelField());
    this.budget.addEventListener('input', () => (this.budgetTouched = true));
    this.state.className = 'jp-AutoresearchRunStrip-state';
    this.progress.className = 'jp-AutoresearchRunStrip-progress';
    this.progress.max = 1;
    this.progress.setAttribute('aria-label', trans.__('Training budget used'));
    this.progress.value = 0;
    this.cost.className = 'jp-AutoresearchRunStrip-cost';
    this.sandbox.className = 'jp-AutoresearchRunStrip-sandbox';
    // The run's state lives in a strip at the top of the panel (runStrip), not in the toolbar,
    // where it would be the first thing to overflow on a narrow screen.
    this.runStrip.addClass('jp-AutoresearchRunStrip');
    this.best.className = 'jp-AutoresearchRunStrip-best';
    this.runStrip.node.append(this.state, this.progress, this.best, this.cost, this.sandbox);
    const group = (ids: string[]) => {
      const w = new Widget();
      w.addClass('jp-AutoresearchToolbar-buttons');
      w.node.append(...ids.map(id => this.buttons.get(id)!));
      return w;
    };
    const later = [...this.buttons.keys()].filter(id => !RUN_CONTROLS.has(id) && id !== RunCommandIDs.reviewEach);
    const modeItem = item(trans.__('Use'), this.kernels.mode, 'jp-AutoresearchToolbar-kernelModeItem');
    modeItem.node.appendChild(this.kernels.note);
    this.items = [
      ['autoresearch-buttons', group([...RUN_CONTROLS])],
      ['autoresearch-runs', item(trans.__('Run'), this.runs, 'jp-AutoresearchToolbar-runsItem')],
      ...later.map((id): [string, Widget] => [`autoresearch-${id.replace('autoresearch:', '')}`, group([id])]),
    ];
    this.tag.title = trans.__('The new run’s tag, which names its branch autoresearch/<tag>');
    this.tag.spellcheck = false;
    keepCaretKeys(this.tag);
    this.tag.addEventListener('input', () => this.renderStartTitle());
    this.nextRunBar.addClass('jp-AutoresearchNextRun');
    this.nextRunBar.node.setAttribute('role', 'group');
    this.nextRunBar.node.setAttribute('aria-label', trans.__('Next run'));
    const caption = document.createElement('span');
    caption.className = 'jp-AutoresearchNextRun-caption';
    caption.textContent = trans.__('Next run');
    caption.setAttribute('aria-hidden', 'true');
    this.nextRunBar.node.append(
      caption,
      ...[
        item(trans.__('Kernel'), this.kernels.picker, 'jp-AutoresearchToolbar-kernelItem'),
        modeItem,
        item(trans.__('Proposer'), this.proposer, 'jp-AutoresearchToolbar-proposerItem'),
        item(trans.__('Model'), this.model, 'jp-AutoresearchToolbar-modelItem'),
        item(trans.__('Budget (s)'), this.budget, 'jp-AutoresearchToolbar-budgetItem'),
        item(trans.__('Tag'), this.tag, 'jp-AutoresearchToolbar-tagItem'),
        group([RunCommandIDs.reviewEach]),
      ].map(w => w.node),
    );
    this.clock = new Poll({
      factory: async () => this.renderState(),
      frequency: { interval: 1000, backoff: false },
      standby: () => !this.ticking() || 'when-hidden',
      name: 'autoresearch:toolbar-clock',
    });
    this.run.changed.connect(this.render, this);
    commands.commandChanged.connect(this.onCommandChanged, this);
    this.render();
  }

  dispose(): void {
    this.clock.dispose();
    this.run.changed.disconnect(this.render, this);
    this.commands.commandChanged.disconnect(this.onCommandChanged, this);
  }

  /** The settings' proposer, model and budget for new runs. */
  setDefaults(d: Pick<IRunDefaults, 'proposer' | 'model' | 'budget_s'>): void {
    this.proposer.value = d.proposer;
    this.model.value = d.model;
    this.budget.value = String(d.budget_s);
    this.syncModelField();
  }

  /** program.md's budget_s, unless the user typed a budget of their own. */
  suggestBudget(seconds: number | null): void {
    if (seconds !== null && !this.budgetTouched) {
      this.budget.value = String(seconds);
    }
  }

  /** Fills the kernel picker as the notebook's does (display names, the default first), with the kernel setting. */
  setKernelSpecs(specs: KernelSpec.ISpecModels | null, preferred: string): void {
    this.kernels.setKernelSpecs(specs, preferred);
  }

  /** The open notebooks with a kernel, most recently active first: the picker lists them first. */
  setNotebooks(notebooks: readonly INotebookKernel[]): void {
    this.kernels.setNotebooks(notebooks);
  }

  setRuns(tags: string[], current: string | null): void {
    // A tag typed for a run that now exists has done its work: the next Start takes the rule's again.
    if (tags.includes(this.tag.value.trim())) {
      this.tag.value = '';
      this.renderStartTitle();
    }
    const wanted = current ?? '';
    this.runs.replaceChildren(...tags.map(tag => new Option(tag, tag)));
    if (!tags.length) {
      this.runs.appendChild(new Option(this.trans.__('no runs yet'), ''));
    }
    this.runs.value = tags.includes(wanted) ? wanted : (tags[0] ?? '');
  }

  /** The tag a Start without one gives the new run (GET runs' next_tag): the Tag field's placeholder. */
  setNextTag(tag: string | null): void {
    this.nextTag = tag;
    this.tag.placeholder = tag ?? this.trans.__('today’s date');
    this.renderStartTitle();
  }

  /** Says on Start, before it is pressed, which tag the new run will get, and marks a tag the engine would refuse. */
  private renderStartTitle(): void {
    const typed = this.tag.value.trim();
    const bad = typed !== '' && !validTag(typed);
    this.tag.classList.toggle('jp-mod-invalid', bad);
    this.tag.setAttribute('aria-invalid', String(bad));
    this.tag.title = bad
      ? this.trans.__('A tag is %1', TAG_RULE_WORDS)
      : this.trans.__('The new run’s tag, which names its branch autoresearch/<tag>; empty: %1', this.nextTag ?? '');
    const start = this.buttons.get(RunCommandIDs.start);
    const tag = typed || this.nextTag;
    if (start && tag) {
      start.title = `${this.commands.caption(RunCommandIDs.start, this.args())} (${this.trans.__('tag %1', tag)})`;
    }
  }

  /** Shows the run's state, budget progress, best and cost, and which commands apply. */
  render(): void {
    this.renderState();
    this.renderButtons();
  }

  private renderState(): void {
    const { trans, run: m } = this;
    const running = m.state === 'running' || m.state === 'starting';
    let words = describeState(m, trans);
    // The countdown of the run training now, from its own start, as the engine's state says;
    // nothing (no guess from the clock) while it proposes, awaits review, evaluates or judges.
    const clock = running && m.pending === null ? countdown(m.current, Date.now(), trans) : null;
    if (clock) {
      this.progress.value = clock.used;
      words += ` · ${clock.words}`;
      this.progress.hidden = false;
    } else {
      this.progress.hidden = true;
    }
    this.state.textContent = words;
    this.state.dataset.state = m.state;
    this.state.dataset.review = m.pending ? 'pending' : '';
    this.cost.textContent = m.costUsd > 0 ? trans.__('cost $%1', m.costUsd.toFixed(4)) : '';
    const sandbox = describeSandbox(m, trans);
    this.sandbox.textContent = sandbox?.words ?? '';
    this.sandbox.title = sandbox?.title ?? '';
    this.sandbox.dataset.sandbox = sandbox ? (sandbox.on ? 'on' : 'off') : '';
    this.sandbox.dataset.settingsChanged = sandbox?.changed ? 'true' : '';
    // The best as the run state says (the mean of its runs ± its standard error, once measured),
    // in the words the best's header, the chart and the status bar use (./run-state.ts runFigures).
    this.best.textContent = describeStripBest(m, trans);
    this.titleStrip();
    if (this.ticking() && this.clock.state.phase === 'constructed') {
      void this.clock.start();
    }
  }

  /** A strip item too long for a narrow panel is cut with an ellipsis (style/panel.css): its tooltip has it whole. */
  private titleStrip(): void {
    for (const item of [this.state, this.best, this.cost]) {
      item.title = item.textContent ?? '';
    }
  }

  private renderButtons(): void {
    const args = this.args();
    for (const [id, b] of this.buttons) {
      // `toolbar`: a command may say it in fewer words where space is short (Export).
      b.textContent = this.commands.label(id, { ...args, toolbar: true });
      // The text names the button (what a screen reader says first); the caption describes it.
      b.title = this.commands.caption(id, args);
      b.disabled = !this.commands.isEnabled(id, args);
      if (this.commands.isToggleable(id, args as ReadonlyJSONObject)) {
        b.setAttribute('aria-pressed', String(this.commands.isToggled(id, args)));
      }
    }
    this.renderStartTitle();
  }

  private onCommandChanged(_: CommandRegistry, change: CommandRegistry.ICommandChangedArgs): void {
    if (change.id === undefined || this.buttons.has(change.id)) {
      this.renderButtons();
    }
  }

  /** Whether the strip shows a countdown (an experiment in flight with a budget). */
  private ticking(): boolean {
    const m = this.run;
    const training = m.current?.phase?.name === 'train' && m.pending === null;
    return (m.state === 'running' || m.state === 'starting') && training;
  }

  /**
   * The run options the toolbar's fields say, and the settings' values for every other run option
   * in the settings (src/core/config/run-options.ts); a setting left null or empty is not sent, so
   * program.md's front matter, else the engine's default, applies.
   */
  runOptions(d: IRunDefaults): IRunOptions {
    const opts: Record<string, unknown> = {};
    const proposer = this.proposer.value as ProposerName;
    for (const key of settingKeys()) {
      if (!TOOLBAR_FIELDS.has(key) && d[key] !== null && d[key] !== '' && proposerTakes(proposer, key)) {
        opts[key] = d[key];
      }
    }
    opts.proposer = proposer;
    const budget = Number(this.budget.value);
    if (Number.isFinite(budget) && budget > 0) {
      opts.budget_s = budget;
    }
    if (PROPOSER_INFO[proposer].hasModel && this.model.value.trim()) {
      opts.model = this.model.value.trim();
    }
    Object.assign(opts, this.kernels.runOptions());
    const tag = this.tag.value.trim();
    if (tag) {
      opts.tag = tag; // refused by the server, in words, if taken or malformed
    }
    return opts as IRunOptions;
  }

  /** The model field shows for a proposer that takes a model. */
  syncModelField(): void {
    const proposer = PROPOSER_INFO[this.proposer.value as ProposerName];
    showItem(this.model.parentElement, !!proposer?.hasModel);
  }
}
