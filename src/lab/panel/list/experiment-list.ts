/**
 * The finished experiments as notebook outputs, newest first, each rendered by the
 * `application/vnd.autoresearch.experiment+json` MIME renderer through JupyterLab's rendermime.
 *
 * Only outputs near the viewport are rendered: every experiment gets a cheap placeholder of an
 * estimated height, and an IntersectionObserver renders it when it comes within a screen of the
 * view. Opening a run with a thousand experiments renders a handful, and memory grows with what
 * the user scrolls through, not with the run's length. A long replay goes further: past its
 * newest EAGER experiments, it is cut into blocks of BLOCK, each one element the height of its
 * placeholders until it comes near the view (or the keyboard, a reveal or End reaches into it),
 * so opening ten thousand experiments lays out a few hundred elements, not ten thousand.
 *
 * Each item marks how it searched and a branch's are indented (./move-label.ts, from the search
 * tree built as records are added). Kept experiments are expanded; the others show their header line. A rendered header is a
 * button (role, tab stop, aria-expanded) the keyboard works as ./header-keys.ts says, rendering an
 * item first when a key moves to one not yet rendered. Which are expanded is ./expansion.ts's,
 * which the panel saves.
 */
import { Signal, type ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { headerAsToggle } from '../../renderer/experiment-view';
import { type IEstimateNow, showEstimateNow } from '../../renderer/runs-view';
import { BLOCK, Blocks, EAGER, placeholderPx, type IBlock } from './blocks';
import { Expansion, type IExpansionState } from './expansion';
import { listenToHeaders, neighbourNode } from './header-keys';
import { markBranch, showMove } from './move-label';
import { SearchTree } from '../../../core/views/search-tree';
import {
  afterPaint,
  outputRenderer,
  renderOutput,
  wholeRecord,
  type IOutputSource,
  type OutputRenderer,
} from './item-output';

/** How far outside the view outputs are rendered ahead of the scroll. */
const AHEAD = '800px 0px';

export interface IExperimentListOptions extends IOutputSource {
  /** The scrolling ancestor, the observer's root. */
  scroller: () => HTMLElement | null;
  /** Whether an experiment passes the panel's filter (ExperimentFilter); the others are hidden. */
  shows?: (record: ExperimentRecord) => boolean;
  /** Adds to a rendered experiment's node (the compare pick: compare-controls.ts). */
  decorateItem?: (node: HTMLElement, record: ExperimentRecord) => void;
}

interface IItem {
  record: ExperimentRecord;
  node: HTMLElement;
  renderer: OutputRenderer | null;
  /** The rendered output's header, the item's button; null until rendered. */
  header: HTMLElement | null;
}

export class ExperimentList extends Widget {
  private items = new Map<HTMLElement, IItem>();
  private readonly byNumber = new Map<number, IItem>();
  /** Every experiment listed, in an item or a block. */
  private readonly records = new Map<number, ExperimentRecord>();
  private readonly blocks = new Blocks(record =>
    this.shows(record) ? placeholderPx(this.expansion.isExpanded(record.n, record.status)) : 0,
  );
  private readonly expansion = new Expansion();
  /** Where each experiment started from (src/core/views/search-tree.ts), built as records are added. */
  private tree = new SearchTree();
  /** Whether the user expanded or collapsed anything since the run was shown (a restore must not undo it). */
  private touched = false;
  /** The item to focus once it is rendered (keyboard moves onto one not yet rendered). */
  private focusWhenRendered: HTMLElement | null = null;
  private observer: IntersectionObserver | null = null;
  private readonly empty: HTMLElement;
  private readonly _expansionChanged = new Signal<this, void>(this);
  /** The best's number and its estimate now (setBestNow), shown in its header. */
  private bestNow: { n: number; now: IEstimateNow } | null = null;
  /** How many outputs have been rendered (for the benchmark and tests). */
  renderedCount = 0;

  constructor(private readonly opts: IExperimentListOptions) {
    super();
    this.addClass('jp-AutoresearchExperimentList');
    this.empty = document.createElement('div');
    this.empty.className = 'jp-AutoresearchExperimentList-empty';
    this.empty.textContent = opts.trans.__('No finished experiments yet.');
    this.node.appendChild(this.empty);
    // One delegated listener of each kind serves every header (./header-keys.ts).
    listenToHeaders(this.node, {
      toggle: node => this.expandItem(this.items.get(node)),
      expand: (node, expanded) => this.expandItem(this.items.get(node), expanded),
      move: (node, key) => this.focusItem(this.neighbour(node, key)),
    });
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
    records.forEach(record => this.tree.add(record));
    const newest = [...records].reverse();
    newest.forEach(record => this.records.set(record.n, record));
    const batch = document.createDocumentFragment();
    const eager = newest.length > EAGER + BLOCK ? EAGER : newest.length;
    const nodes = this.itemNodes(newest.slice(0, eager));
    batch.append(...nodes);
    const blocks = this.blocks.make(newest.slice(eager), BLOCK);
    batch.append(...blocks);
    nodes.push(...blocks);
    this.node.insertBefore(batch, this.empty.nextSibling);
    this.empty.hidden = this.records.size > 0;
    const observer = this.ensureObserver();
    nodes.forEach(node => observer?.observe(node));
  }

  /**
   * The best as the run state says now: its header shows this estimate rather than what it
   * measured when it was judged (the header of a best no longer the best shows its own again).
   */
  setBestNow(best: { n: number; now: IEstimateNow } | null): void {
    const before = this.bestNow;
    this.bestNow = best;
    if (before && before.n !== best?.n) {
      this.applyBestNow(this.byNumber.get(before.n));
    }
    if (best) {
      this.applyBestNow(this.byNumber.get(best.n));
    }
  }

  /** Removes every output (the panel follows another run); the next run starts with the default expansion. */
  clear(): void {
    this.observer?.disconnect();
    for (const item of this.items.values()) {
      item.renderer?.dispose();
      item.node.remove();
    }
    this.items.clear();
    this.bestNow = null;
    this.byNumber.clear();
    this.records.clear();
    this.blocks.clear();
    this.tree = new SearchTree();
    this.expansion.reset();
    this.touched = false;
    this.focusWhenRendered = null;
    this.renderedCount = 0;
    this.empty.hidden = false;
  }

  get count(): number {
    return this.records.size;
  }

  /** Whether experiment `n` is listed. */
  has(n: number): boolean {
    return this.records.has(n);
  }

  /** Whether experiment `n` is shown expanded (null when it is not listed). */
  isExpanded(n: number): boolean | null {
    const record = this.records.get(n);
    return record ? this.expansion.isExpanded(n, record.status) : null;
  }

  /** Expands or collapses experiment `n`, as the user asked. */
  setExpanded(n: number, expanded: boolean): void {
    const record = this.records.get(n);
    if (record) {
      this.expansion.set(n, record.status, expanded);
      const item = this.byNumber.get(n);
      if (item) {
        this.applyExpansion(item);
      } else {
        this.blocks.resize(this.blocks.ofNumber(n));
      }
      this.userChanged();
    }
  }

  /** Expands or collapses an item, as the user asked; without `expanded`, the other way from now. */
  private expandItem(item: IItem | undefined, expanded?: boolean): void {
    if (item) {
      const { n, status } = item.record;
      this.setExpanded(n, expanded ?? !this.expansion.isExpanded(n, status));
    }
  }

  /** Expands (or collapses) every experiment, those added later too. */
  setAllExpanded(expanded: boolean): void {
    this.expansion.setAll(expanded);
    this.redrawExpansion();
    this.userChanged();
  }

  /** Applies a saved expansion, unless the user changed one since the run was shown. */
  restoreExpansion(state: IExpansionState): void {
    if (this.touched) {
      return;
    }
    this.expansion.restore(state);
    this.redrawExpansion();
  }

  /**
   * Hides the experiments the filter leaves out (the `hidden` attribute: not laid out, so not
   * rendered by the observer, and passed over by the arrow keys) and shows the rest.
   */
  applyFilter(): void {
    for (const item of this.items.values()) {
      item.node.hidden = !this.shows(item.record);
    }
    this.blocks.resizeAll();
  }

  /** Expands experiment `n`, scrolls it to the top of the view and focuses its header; false when it is not listed. */
  reveal(n: number): boolean {
    if (!this.records.has(n)) {
      return false;
    }
    this.unblock(this.blocks.ofNumber(n));
    this.setExpanded(n, true);
    this.focusItem(this.byNumber.get(n), 'start');
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
    this.blocks.nodes().forEach(node => this.ensureObserver()?.observe(node));
  }

  private shows(record: ExperimentRecord): boolean {
    return this.opts.shows ? this.opts.shows(record) : true;
  }

  /** Placeholder items for these records (newest first), not yet in the document. */
  private itemNodes(records: ExperimentRecord[]): HTMLElement[] {
    return records.map(record => {
      const node = document.createElement('div');
      node.className = `jp-AutoresearchExperimentList-item jp-OutputArea-output jp-mod-${record.status}`;
      node.dataset.n = String(record.n);
      const item: IItem = { record, node, renderer: null, header: null };
      node.hidden = !this.shows(record);
      markBranch(node, this.tree.get(record.n));
      this.applyExpansion(item);
      this.items.set(node, item);
      this.byNumber.set(record.n, item);
      return node;
    });
  }

  /** Puts a block's experiments in its place as items of their own; returns their nodes. */
  private unblock(block: IBlock | undefined): HTMLElement[] {
    if (!this.blocks.take(block)) {
      return [];
    }
    this.observer?.unobserve(block.node);
    const nodes = this.itemNodes(block.records);
    block.node.replaceWith(...nodes);
    nodes.forEach(node => this.observer?.observe(node));
    return nodes;
  }

  private redrawExpansion(): void {
    this.items.forEach(item => this.applyExpansion(item));
    this.blocks.resizeAll();
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
      item.node.style.minHeight = `${placeholderPx(expanded)}px`;
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
    // Outputs in view render first and are painted; those only near it (AHEAD) render after. Both
    // are asked for in one request, but an open's first screen no longer waits for a second one.
    const view = this.opts.scroller()?.getBoundingClientRect();
    const inView: IItem[] = [];
    const ahead: IItem[] = [];
    for (const entry of entries) {
      const block = this.blocks.ofNode(entry.target);
      if (block) {
        // Its items are observed in turn: those near the view render.
        if (entry.isIntersecting) {
          this.unblock(block);
        }
        continue;
      }
      const item = this.items.get(entry.target as HTMLElement);
      if (entry.isIntersecting && item && !item.renderer) {
        this.observer?.unobserve(item.node);
        const r = entry.boundingClientRect;
        (!view || (r.bottom > view.top && r.top < view.bottom) ? inView : ahead).push(item);
      }
    }
    const painted = Promise.all(inView.map(item => this.renderItem(item))).then(afterPaint);
    for (const item of ahead) {
      void this.renderItem(item, painted);
    }
  };

  /** Renders an item's output; fetched at once (a light record), drawn once `after` has settled. */
  private async renderItem(item: IItem, after?: Promise<unknown>): Promise<void> {
    const renderer = outputRenderer(this.opts);
    if (!renderer) {
      return;
    }
    item.renderer = renderer;
    // Asked for before any other wait, so the outputs coming into view together are one request.
    const whole = await wholeRecord(item.record, this.opts);
    if (typeof whole === 'string') {
      renderer.dispose();
      item.node.textContent = this.opts.trans.__('Experiment #%1 could not be loaded: %2', item.record.n, whole);
      item.node.classList.add('jp-mod-error');
      return;
    }
    if (whole !== item.record) {
      item.record = whole;
      this.records.set(whole.n, whole);
    }
    await after;
    await renderOutput(renderer, item.record, this.opts);
    if (!this.items.has(item.node)) {
      renderer.dispose();
      return;
    }
    Widget.attach(renderer, item.node);
    item.node.style.minHeight = '';
    item.node.classList.add('jp-mod-rendered');
    item.header = headerAsToggle(renderer.node);
    if (item.header) {
      showMove(item.header, this.tree.get(item.record.n), this.opts.trans);
    }
    this.applyBestNow(item);
    this.opts.decorateItem?.(item.node, item.record);
    this.applyExpansion(item);
    this.renderedCount += 1;
    if (this.focusWhenRendered === item.node) {
      this.focusWhenRendered = null;
      item.header?.focus();
    }
  }

  /** Shows the best's estimate now in an item's header if it is the best's, else what it measured. */
  private applyBestNow(item: IItem | undefined): void {
    if (!item?.header) {
      return;
    }
    const best = this.bestNow;
    showEstimateNow(item.header, best && best.n === item.record.n ? best.now : null, this.opts.trans);
    // Its accessible name is read off its texts, which changed.
    headerAsToggle(item.node);
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
    const unblock = (el: Element) => {
      const block = this.blocks.ofNode(el);
      return block ? this.unblock(block) : null;
    };
    const next = neighbourNode(node, key, this.empty, this.node.lastElementChild, unblock);
    return next ? this.items.get(next as HTMLElement) : undefined;
  }
}
