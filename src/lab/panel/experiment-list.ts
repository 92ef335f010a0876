/**
 * The finished experiments as notebook outputs, newest first, each rendered by the
 * `application/vnd.autoresearch.experiment+json` MIME renderer through JupyterLab's rendermime.
 *
 * Only outputs near the viewport are rendered: every experiment gets a cheap placeholder of an
 * estimated height, and an IntersectionObserver renders it when it comes within a screen of the
 * view. Opening a run with a thousand experiments renders a handful, and memory grows with what
 * the user scrolls through, not with the run's length.
 *
 * Kept experiments are expanded; the others show their header line. A rendered header is a
 * button (role, tab stop, aria-expanded): a click, Enter or Space toggles it, ArrowRight and
 * ArrowLeft expand and collapse it, ArrowUp, ArrowDown, Home and End move to another header
 * (rendering it first if it is not yet). One delegated listener of each kind serves every header,
 * so a long run costs no listener per experiment. Which are expanded is ./expansion.ts's, which
 * the panel saves.
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { MimeModel } from '@jupyterlab/rendermime';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Signal, type ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { EXPERIMENT_MIME, experimentBundle } from '../../core/bundle';
import type { ExperimentRecord } from '../../core/journal';
import { headerAsToggle } from '../renderer/experiment-view';
import { Expansion, type IExpansionState } from './expansion';

/** Heights a placeholder takes before its output is rendered, by whether it starts expanded. */
const ESTIMATE_PX = { collapsed: 40, expanded: 220 };
/** How far outside the view outputs are rendered ahead of the scroll. */
const AHEAD = '800px 0px';
const HEADER = '.jp-AutoresearchExperiment-header';

export interface IExperimentListOptions {
  rendermime: IRenderMimeRegistry;
  trans: TranslationBundle;
  /** The scrolling ancestor, the observer's root. */
  scroller: () => HTMLElement | null;
  /** The log of a crashed experiment, for its log tail. */
  fetchLog: (n: number) => Promise<string | null>;
  metric: () => string;
  direction: () => 'lower' | 'higher';
  /** Whether an experiment passes the panel's filter (ExperimentFilter); the others are hidden. */
  shows?: (record: ExperimentRecord) => boolean;
  /** Adds to a rendered experiment's node (the compare pick: compare-controls.ts). */
  decorateItem?: (node: HTMLElement, record: ExperimentRecord) => void;
}

interface IItem {
  record: ExperimentRecord;
  node: HTMLElement;
  renderer: (Widget & { renderModel(model: MimeModel): Promise<void> }) | null;
  /** The rendered output's header, the item's button; null until rendered. */
  header: HTMLElement | null;
}

export class ExperimentList extends Widget {
  private items = new Map<HTMLElement, IItem>();
  private readonly byNumber = new Map<number, IItem>();
  private readonly expansion = new Expansion();
  /** Whether the user expanded or collapsed anything since the run was shown (a restore must not undo it). */
  private touched = false;
  /** The item to focus once it is rendered (keyboard moves onto one not yet rendered). */
  private focusWhenRendered: HTMLElement | null = null;
  private observer: IntersectionObserver | null = null;
  private readonly empty: HTMLElement;
  private readonly _expansionChanged = new Signal<this, void>(this);
  /** How many outputs have been rendered (for the benchmark and tests). */
  renderedCount = 0;

  constructor(private readonly opts: IExperimentListOptions) {
    super();
    this.addClass('jp-AutoresearchExperimentList');
    this.empty = document.createElement('div');
    this.empty.className = 'jp-AutoresearchExperimentList-empty';
    this.empty.textContent = opts.trans.__('No finished experiments yet.');
    this.node.appendChild(this.empty);
    this.node.addEventListener('click', this.onClick);
    this.node.addEventListener('keydown', this.onKeydown);
  }

  /** The user expanded or collapsed experiments (not emitted for a restore or a clear). */
  get expansionChanged(): ISignal<this, void> {
    return this._expansionChanged;
  }

  /** Which experiments are expanded, in its saved form; null while nothing differs from the default. */
  get expansionState(): IExpansionState | null {
    return this.expansion.isDefault ? null : this.expansion.state;
  }

  /** Adds finished experiments (in journal order) at the top, newest first, in one DOM insertion. */
  add(records: ExperimentRecord[]): void {
    const batch = document.createDocumentFragment();
    const nodes: HTMLElement[] = [];
    for (const record of [...records].reverse()) {
      const node = document.createElement('div');
      node.className = `jp-AutoresearchExperimentList-item jp-OutputArea-output jp-mod-${record.status}`;
      node.dataset.n = String(record.n);
      const item: IItem = { record, node, renderer: null, header: null };
      node.hidden = this.opts.shows ? !this.opts.shows(record) : false;
      this.applyExpansion(item);
      this.items.set(node, item);
      this.byNumber.set(record.n, item);
      batch.appendChild(node);
      nodes.push(node);
    }
    this.node.insertBefore(batch, this.empty.nextSibling);
    this.empty.hidden = this.items.size > 0;
    const observer = this.ensureObserver();
    nodes.forEach(node => observer?.observe(node));
  }

  /** Removes every output (the panel follows another run); the next run starts with the default expansion. */
  clear(): void {
    this.observer?.disconnect();
    for (const item of this.items.values()) {
      item.renderer?.dispose();
      item.node.remove();
    }
    this.items.clear();
    this.byNumber.clear();
    this.expansion.reset();
    this.touched = false;
    this.focusWhenRendered = null;
    this.renderedCount = 0;
    this.empty.hidden = false;
  }

  get count(): number {
    return this.items.size;
  }

  /** Whether experiment `n` is listed. */
  has(n: number): boolean {
    return this.byNumber.has(n);
  }

  /** Whether experiment `n` is shown expanded (null when it is not listed). */
  isExpanded(n: number): boolean | null {
    const item = this.byNumber.get(n);
    return item ? this.expansion.isExpanded(n, item.record.status) : null;
  }

  /** Expands or collapses experiment `n`, as the user asked. */
  setExpanded(n: number, expanded: boolean): void {
    const item = this.byNumber.get(n);
    if (item) {
      this.expansion.set(n, item.record.status, expanded);
      this.applyExpansion(item);
      this.userChanged();
    }
  }

  /** Expands (or collapses) every experiment, those added later too. */
  setAllExpanded(expanded: boolean): void {
    this.expansion.setAll(expanded);
    this.items.forEach(item => this.applyExpansion(item));
    this.userChanged();
  }

  /** Applies a saved expansion, unless the user changed one since the run was shown. */
  restoreExpansion(state: IExpansionState): void {
    if (this.touched) {
      return;
    }
    this.expansion.restore(state);
    this.items.forEach(item => this.applyExpansion(item));
  }

  /**
   * Hides the experiments the filter leaves out (the `hidden` attribute: not laid out, so not
   * rendered by the observer, and passed over by the arrow keys) and shows the rest.
   */
  applyFilter(): void {
    const shows = this.opts.shows;
    for (const item of this.items.values()) {
      item.node.hidden = shows ? !shows(item.record) : false;
    }
  }

  /** Expands experiment `n`, scrolls it to the top of the view and focuses its header; false when it is not listed. */
  reveal(n: number): boolean {
    const item = this.byNumber.get(n);
    if (!item) {
      return false;
    }
    this.setExpanded(n, true);
    this.focusItem(item, 'start');
    return true;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.clear();
    this.observer = null;
    super.dispose();
  }

  protected onAfterAttach(): void {
    // The observer needs the scroller, which exists once the panel is in the document.
    for (const item of this.items.values()) {
      if (!item.renderer) {
        this.ensureObserver()?.observe(item.node);
      }
    }
  }

  private userChanged(): void {
    this.touched = true;
    this._expansionChanged.emit();
  }

  /** Draws an item as the expansion says: its class, its header's aria-expanded, a placeholder's height. */
  private applyExpansion(item: IItem): void {
    const expanded = this.expansion.isExpanded(item.record.n, item.record.status);
    item.node.classList.toggle('jp-mod-collapsed', !expanded);
    item.header?.setAttribute('aria-expanded', String(expanded));
    if (!item.header) {
      item.node.style.minHeight = `${expanded ? ESTIMATE_PX.expanded : ESTIMATE_PX.collapsed}px`;
    }
  }

  private ensureObserver(): IntersectionObserver | null {
    if (this.observer) {
      return this.observer;
    }
    const root = this.opts.scroller();
    if (!root || !this.isAttached) {
      return null;
    }
    this.observer = new IntersectionObserver(this.onIntersect, { root, rootMargin: AHEAD });
    return this.observer;
  }

  private readonly onIntersect = (entries: IntersectionObserverEntry[]): void => {
    for (const entry of entries) {
      const item = this.items.get(entry.target as HTMLElement);
      if (entry.isIntersecting && item && !item.renderer) {
        this.observer?.unobserve(item.node);
        void this.renderItem(item);
      }
    }
  };

  private async renderItem(item: IItem): Promise<void> {
    const renderer = this.opts.rendermime.createRenderer(EXPERIMENT_MIME) as IItem['renderer'];
    if (!renderer) {
      return;
    }
    item.renderer = renderer;
    const log = item.record.status === 'crash' ? await this.opts.fetchLog(item.record.n).catch(() => null) : null;
    const bundle = experimentBundle(item.record, { metric: this.opts.metric(), direction: this.opts.direction(), log });
    // The HTML and text fallbacks stay out: the renderer shows the experiment's own data.
    const model = new MimeModel({ data: { [EXPERIMENT_MIME]: bundle[EXPERIMENT_MIME] as never } });
    await renderer.renderModel(model);
    if (!this.items.has(item.node)) {
      renderer.dispose();
      return;
    }
    Widget.attach(renderer, item.node);
    item.node.style.minHeight = '';
    item.node.classList.add('jp-mod-rendered');
    item.header = headerAsToggle(renderer.node);
    this.opts.decorateItem?.(item.node, item.record);
    this.applyExpansion(item);
    this.renderedCount += 1;
    if (this.focusWhenRendered === item.node) {
      this.focusWhenRendered = null;
      item.header?.focus();
    }
  }

  /** Focuses an item's header, rendering the item first when it is not yet; `align` scrolls it there. */
  private focusItem(item: IItem | undefined, align?: ScrollLogicalPosition): void {
    if (!item) {
      return;
    }
    if (item.header) {
      if (align) {
        item.node.scrollIntoView({ block: align });
      }
      item.header.focus({ preventScroll: align !== undefined });
      return;
    }
    this.focusWhenRendered = item.node;
    item.node.scrollIntoView({ block: align ?? 'nearest' });
    if (!item.renderer) {
      this.observer?.unobserve(item.node);
      void this.renderItem(item);
    }
  }

  /** The item a key moves to from this one: the next, the previous, the first or the last shown. */
  private neighbour(node: Element, key: string): IItem | undefined {
    const forward = key === 'ArrowDown' || key === 'Home';
    let next: Element | null =
      key === 'ArrowDown'
        ? node.nextElementSibling
        : key === 'ArrowUp'
          ? node.previousElementSibling
          : key === 'Home'
            ? this.empty.nextElementSibling
            : this.node.lastElementChild;
    // Items hidden (a filter's) are passed over: the focus goes where the user can see.
    while (next && (next as HTMLElement).hidden) {
      next = forward ? next.nextElementSibling : next.previousElementSibling;
    }
    return next ? this.items.get(next as HTMLElement) : undefined;
  }

  /** The item whose header the event is on (the header itself, not a control inside it), if any. */
  private itemOfHeader(target: EventTarget | null, headerOnly: boolean): IItem | undefined {
    const el = target as HTMLElement | null;
    const header = el?.closest?.(HEADER);
    if (!header || (headerOnly && header !== el)) {
      return undefined;
    }
    const node = header.closest('.jp-AutoresearchExperimentList-item');
    return node && this.node.contains(node) ? this.items.get(node as HTMLElement) : undefined;
  }

  private readonly onClick = (event: MouseEvent): void => {
    const item = this.itemOfHeader(event.target, false);
    if (item) {
      this.setExpanded(item.record.n, !this.expansion.isExpanded(item.record.n, item.record.status));
    }
  };

  private readonly onKeydown = (event: KeyboardEvent): void => {
    const item = this.itemOfHeader(event.target, true);
    if (!item || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
      return;
    }
    const { n, status } = item.record;
    switch (event.key) {
      case 'Enter':
      case ' ':
        this.setExpanded(n, !this.expansion.isExpanded(n, status));
        break;
      case 'ArrowRight':
      case 'ArrowLeft':
        this.setExpanded(n, event.key === 'ArrowRight');
        break;
      case 'ArrowDown':
      case 'ArrowUp':
      case 'Home':
      case 'End':
        this.focusItem(this.neighbour(item.node, event.key));
        break;
      default:
        return;
    }
    // Space and the arrows would scroll the panel as well.
    event.preventDefault();
    event.stopPropagation();
  };
}
