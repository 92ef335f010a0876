/**
 * The panel's toolbar controls: kernel, proposer and model, budget, Start / Stop / Resume,
 * Export, the run being shown, and the run's state with a budget progress bar and the cost.
 * Plain form controls styled by JupyterLab's classes, so themes apply and tests find them by
 * their data-command attributes.
 */
import type { KernelSpec } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { fmtNoise } from '../../core/noise';
import { PROPOSER_INFO, PROPOSER_NAMES, type ProposerName, type SettingKey, settingKeys } from '../../core/run-options';
import type { IRunOptions } from '../api';
import type { IRunDefaults } from './panel';
import type { RunModel } from './run-model';
import { describeSandbox, describeState } from './run-state';

export type ToolbarAction = 'start' | 'stop' | 'resume' | 'export' | 'select-run';

/** The settings the toolbar shows as fields (the settings give their initial values); the field wins. */
const TOOLBAR_FIELDS = new Set<SettingKey>(['proposer', 'model', 'budget_s', 'kernel']);

function control<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  title: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  node.title = title;
  if ('setAttribute' in node) {
    node.setAttribute('aria-label', title);
  }
  return node;
}

/** One labelled control as a toolbar item. */
function item(label: string, node: HTMLElement, className: string): Widget {
  const widget = new Widget();
  widget.addClass('jp-AutoresearchToolbar-item');
  widget.addClass(className);
  if (label) {
    const text = document.createElement('label');
    text.textContent = label;
    widget.node.appendChild(text);
  }
  widget.node.appendChild(node);
  return widget;
}

export class RunToolbar {
  readonly kernel = control('select', 'jp-mod-styled jp-AutoresearchToolbar-kernel', '');
  readonly proposer = control('select', 'jp-mod-styled jp-AutoresearchToolbar-proposer', '');
  readonly model = control('input', 'jp-mod-styled jp-AutoresearchToolbar-model', '');
  readonly budget = control('input', 'jp-mod-styled jp-AutoresearchToolbar-budget', '');
  readonly runs = control('select', 'jp-mod-styled jp-AutoresearchToolbar-runs', '');
  readonly startButton: HTMLButtonElement;
  readonly stopButton: HTMLButtonElement;
  readonly resumeButton: HTMLButtonElement;
  readonly exportButton: HTMLButtonElement;
  readonly state = document.createElement('span');
  readonly progress = document.createElement('progress');
  readonly cost = document.createElement('span');
  /** Whether the training runs are sandboxed (the last run's word). */
  readonly sandbox = document.createElement('span');
  readonly best = document.createElement('span');
  /** The state line, budget bar, best and cost, shown at the top of the panel's content. */
  readonly runStrip = new Widget();
  /** The toolbar items in order, for MainAreaWidget.toolbar.addItem. */
  readonly items: Array<[string, Widget]>;

  constructor(
    private readonly trans: TranslationBundle,
    onAction: (action: ToolbarAction) => void,
  ) {
    this.kernel.title = trans.__('The kernel whose environment runs train.py');
    this.proposer.title = trans.__('Who proposes the edits to train.py');
    for (const name of PROPOSER_NAMES) {
      this.proposer.appendChild(new Option(trans.__(PROPOSER_INFO[name].label), name));
    }
    this.model.title = trans.__('Model of the claude proposer (empty: the engine default)');
    this.model.placeholder = trans.__('model');
    this.budget.type = 'number';
    this.budget.min = '1';
    this.budget.step = '1';
    this.budget.title = trans.__('Training budget of one experiment, in seconds');
    this.runs.title = trans.__('The run shown');
    const button = (action: ToolbarAction, text: string, title: string, mod: string) => {
      const b = control('button', `jp-Button jp-mod-styled ${mod} jp-AutoresearchToolbar-button`, title);
      b.textContent = text;
      b.dataset.command = action;
      b.addEventListener('click', () => onAction(action));
      return b;
    };
    this.startButton = button(
      'start',
      trans.__('Start'),
      trans.__('Start a new run with these settings'),
      'jp-mod-accept',
    );
    this.stopButton = button(
      'stop',
      trans.__('Stop'),
      trans.__('Stop the run after interrupting the experiment in flight'),
      'jp-mod-warn',
    );
    this.resumeButton = button(
      'resume',
      trans.__('Resume'),
      trans.__('Continue the run shown where it left off'),
      'jp-mod-reject',
    );
    this.exportButton = button(
      'export',
      trans.__('Export as notebook'),
      trans.__('Write the run as <tag>.ipynb in the workspace'),
      'jp-mod-reject',
    );
    this.runs.addEventListener('change', () => onAction('select-run'));
    this.proposer.addEventListener('change', () => this.syncModelField());
    this.state.className = 'jp-AutoresearchRunStrip-state';
    this.progress.className = 'jp-AutoresearchRunStrip-progress';
    this.progress.max = 1;
    this.progress.value = 0;
    this.cost.className = 'jp-AutoresearchRunStrip-cost';
    this.sandbox.className = 'jp-AutoresearchRunStrip-sandbox';
    this.kernel.addEventListener('change', () => (this.kernel.dataset.touched = '1'));
    // The run's state lives in a strip at the top of the panel (runStrip), not in the toolbar,
    // where it would be the first thing to overflow on a narrow screen.
    this.runStrip.addClass('jp-AutoresearchRunStrip');
    this.best.className = 'jp-AutoresearchRunStrip-best';
    this.runStrip.node.append(this.state, this.progress, this.best, this.cost, this.sandbox);
    const buttons = new Widget();
    buttons.addClass('jp-AutoresearchToolbar-buttons');
    buttons.node.append(this.startButton, this.stopButton, this.resumeButton, this.exportButton);
    this.items = [
      ['autoresearch-kernel', item(trans.__('Kernel'), this.kernel, 'jp-AutoresearchToolbar-kernelItem')],
      ['autoresearch-proposer', item(trans.__('Proposer'), this.proposer, 'jp-AutoresearchToolbar-proposerItem')],
      ['autoresearch-model', item('', this.model, 'jp-AutoresearchToolbar-modelItem')],
      ['autoresearch-budget', item(trans.__('Budget (s)'), this.budget, 'jp-AutoresearchToolbar-budgetItem')],
      ['autoresearch-buttons', buttons],
      ['autoresearch-runs', item(trans.__('Run'), this.runs, 'jp-AutoresearchToolbar-runsItem')],
    ];
  }

  /** Fills the kernel picker as the notebook's does: display names, the default first. */
  setKernelSpecs(specs: KernelSpec.ISpecModels | null, preferred: string): void {
    // The user's pick survives a refresh of the specs; otherwise the setting, else the default.
    const current = this.kernel.dataset.touched ? this.kernel.value : preferred || (specs?.default ?? '');
    this.kernel.replaceChildren();
    const all = Object.values(specs?.kernelspecs ?? {}).filter((s): s is KernelSpec.ISpecModel => !!s);
    const byName = [...all].sort((a, b) => a.display_name.localeCompare(b.display_name));
    const def = specs?.default ?? '';
    for (const spec of byName.sort((a, b) => Number(b.name === def) - Number(a.name === def))) {
      this.kernel.appendChild(new Option(spec.display_name, spec.name));
    }
    this.kernel.appendChild(new Option(this.trans.__('No kernel (the server’s Python)'), ''));
    const choice = Array.from(this.kernel.options).some(o => o.value === current) ? current : def;
    this.kernel.value = choice;
  }

  setRuns(tags: string[], current: string | null): void {
    const wanted = current ?? '';
    this.runs.replaceChildren(...tags.map(tag => new Option(tag, tag)));
    if (!tags.length) {
      this.runs.appendChild(new Option(this.trans.__('no runs yet'), ''));
    }
    this.runs.value = tags.includes(wanted) ? wanted : (tags[0] ?? '');
  }

  /** Shows the run's state, budget progress, best and cost, and enables the buttons that apply. */
  show(m: RunModel, busy: boolean): void {
    const trans = this.trans;
    const running = m.state === 'running' || m.state === 'starting';
    let words = describeState(m, trans);
    const current = m.current;
    const budget = m.budgetS;
    if (running && current && budget) {
      const elapsed = (Date.now() - Date.parse(current.ts)) / 1000;
      this.progress.value = Math.min(1, Math.max(0, elapsed / budget));
      const left = budget - elapsed;
      words += left > 0 ? ` · ${trans.__('%1 s left', Math.ceil(left))}` : ` · ${trans.__('evaluating')}`;
      this.progress.hidden = false;
    } else {
      this.progress.hidden = true;
    }
    this.state.textContent = words;
    this.state.dataset.state = m.state;
    this.cost.textContent = m.costUsd > 0 ? trans.__('cost $%1', m.costUsd.toFixed(4)) : '';
    const sandbox = describeSandbox(m, trans);
    this.sandbox.textContent = sandbox?.words ?? '';
    this.sandbox.title = sandbox?.title ?? '';
    this.sandbox.dataset.sandbox = sandbox ? (sandbox.on ? 'on' : 'off') : '';
    const best = m.best;
    // The best as the mean of its runs ± its standard error, once the noise is measured.
    const noise = m.noise?.best;
    this.best.textContent =
      best?.metric == null
        ? ''
        : noise && noise.se !== null
          ? trans.__('best %1 %2 ± %3 (#%4)', m.metric, noise.metric.toFixed(6), fmtNoise(noise.se), best.n)
          : trans.__('best %1 %2 (#%3)', m.metric, best.metric.toFixed(6), best.n);
    this.startButton.disabled = busy || running;
    this.stopButton.disabled = busy || m.state !== 'running' || m.stopping;
    this.resumeButton.disabled = busy || running || m.tag === null;
    this.exportButton.disabled = busy || m.tag === null || m.experiments.length === 0;
  }

  /**
   * The run options the toolbar's fields say, and the settings' values for every other run option
   * in the settings (src/core/run-options.ts); a setting left null or empty is not sent, so
   * program.md's front matter, else the engine's default, applies.
   */
  runOptions(d: IRunDefaults): IRunOptions {
    const opts: Record<string, unknown> = {};
    for (const key of settingKeys()) {
      if (!TOOLBAR_FIELDS.has(key) && d[key] !== null && d[key] !== '') {
        opts[key] = d[key];
      }
    }
    const proposer = this.proposer.value as ProposerName;
    opts.proposer = proposer;
    const budget = Number(this.budget.value);
    if (Number.isFinite(budget) && budget > 0) {
      opts.budget_s = budget;
    }
    if (PROPOSER_INFO[proposer].hasModel && this.model.value.trim()) {
      opts.model = this.model.value.trim();
    }
    if (this.kernel.value) {
      opts.kernel = this.kernel.value;
    }
    return opts as IRunOptions;
  }

  syncModelField(): void {
    const proposer = PROPOSER_INFO[this.proposer.value as ProposerName];
    this.model.parentElement?.classList.toggle('jp-mod-hidden', !proposer?.hasModel);
  }
}
