/**
 * The finished experiments as notebook outputs, newest first, each rendered by the
 * `application/vnd.autoresearch.experiment+json` MIME renderer through JupyterLab's rendermime.
 *
 * Only outputs near the viewport are rendered: every experiment gets a cheap placeholder of an
 * estimated height, and an IntersectionObserver renders it when it comes within a screen of the
 * view. Opening a run with a thousand experiments renders a handful, and memory grows with what
 * the user scrolls through, not with the run's length.
 *
 * Kept experiments are expanded; the others show their header line and expand on a click.
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { MimeModel } from '@jupyterlab/rendermime';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { EXPERIMENT_MIME, experimentBundle } from '../../core/bundle';
import type { ExperimentRecord } from '../../core/journal';

/** Heights a placeholder takes before its output is rendered, by whether it starts expanded. */
const ESTIMATE_PX = { collapsed: 40, expanded: 220 };
/** How far outside the view outputs are rendered ahead of the scroll. */
const AHEAD = '800px 0px';

export interface IExperimentListOptions {
  rendermime: IRenderMimeRegistry;
  trans: TranslationBundle;
  /** The scrolling ancestor, the observer's root. */
  scroller: () => HTMLElement | null;
  /** The log of a crashed experiment, for its log tail. */
  fetchLog: (n: number) => Promise<string | null>;
  metric: () => string;
  direction: () => 'lower' | 'higher';
}

interface IItem {
  record: ExperimentRecord;
  node: HTMLElement;
  renderer: (Widget & { renderModel(model: MimeModel): Promise<void> }) | null;
}

export class ExperimentList extends Widget {
  private items = new Map<HTMLElement, IItem>();
  private observer: IntersectionObserver | null = null;
  private readonly empty: HTMLElement;
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
  }

  /** Adds finished experiments (in journal order) at the top, newest first, in one DOM insertion. */
  add(records: ExperimentRecord[]): void {
    const batch = document.createDocumentFragment();
    const nodes: HTMLElement[] = [];
    for (const record of [...records].reverse()) {
      const node = document.createElement('div');
      node.className = `jp-AutoresearchExperimentList-item jp-OutputArea-output jp-mod-${record.status}`;
      node.dataset.n = String(record.n);
      const expanded = record.status === 'keep';
      node.classList.toggle('jp-mod-collapsed', !expanded);
      node.style.minHeight = `${expanded ? ESTIMATE_PX.expanded : ESTIMATE_PX.collapsed}px`;
      this.items.set(node, { record, node, renderer: null });
      batch.appendChild(node);
      nodes.push(node);
    }
    this.node.insertBefore(batch, this.empty.nextSibling);
    this.empty.hidden = this.items.size > 0;
    const observer = this.ensureObserver();
    nodes.forEach(node => observer?.observe(node));
  }

  /** Removes every output (the panel follows another run). */
  clear(): void {
    this.observer?.disconnect();
    for (const item of this.items.values()) {
      item.renderer?.dispose();
      item.node.remove();
    }
    this.items.clear();
    this.renderedCount = 0;
    this.empty.hidden = false;
  }

  get count(): number {
    return this.items.size;
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
    this.renderedCount += 1;
  }

  private readonly onClick = (event: MouseEvent): void => {
    const target = event.target as HTMLElement;
    const header = target.closest('.jp-AutoresearchExperiment-header');
    const item = target.closest('.jp-AutoresearchExperimentList-item');
    if (header && item && this.node.contains(item)) {
      item.classList.toggle('jp-mod-collapsed');
    }
  };
}
