/**
 * A long replay's older experiments in blocks: one element stands for a block's experiments, as
 * tall as their placeholders would be, until it comes near the view (or the keyboard, a reveal or
 * End reaches into it) and its experiments are put in as items of their own.
 */
import type { ExperimentRecord } from '../../../core/journal/journal';

/** A batch larger than EAGER + BLOCK goes in as its newest EAGER items, then blocks of BLOCK. */
export const EAGER = 50;
export const BLOCK = 100;

/** Heights a placeholder takes before its output is rendered, by whether it starts expanded. */
const ESTIMATE_PX = { collapsed: 40, expanded: 220 };

/** The height of an experiment's placeholder, expanded or not, before its output is rendered. */
export function placeholderPx(expanded: boolean): number {
  return expanded ? ESTIMATE_PX.expanded : ESTIMATE_PX.collapsed;
}

/** Experiments not yet in the list as items of their own: one element standing for them all. */
export interface IBlock {
  node: HTMLElement;
  /** Newest first, as they will be listed. */
  records: ExperimentRecord[];
}

export class Blocks {
  private readonly byNode = new Map<HTMLElement, IBlock>();
  private readonly byNumber = new Map<number, IBlock>();

  /** @param height the height a record's placeholder takes (0 for one the filter hides) */
  constructor(private readonly height: (record: ExperimentRecord) => number) {}

  /** Blocks of `size` for these records (newest first), sized; their nodes, in order. */
  make(records: ExperimentRecord[], size: number): HTMLElement[] {
    const nodes: HTMLElement[] = [];
    for (let start = 0; start < records.length; start += size) {
      const block: IBlock = { node: document.createElement('div'), records: records.slice(start, start + size) };
      block.node.className = 'jp-AutoresearchExperimentList-block';
      block.records.forEach(record => this.byNumber.set(record.n, block));
      this.byNode.set(block.node, block);
      this.resize(block);
      nodes.push(block.node);
    }
    return nodes;
  }

  /** The block a node is, if it is one. */
  ofNode(node: Element): IBlock | undefined {
    return this.byNode.get(node as HTMLElement);
  }

  /** The block holding experiment n, if one does. */
  ofNumber(n: number): IBlock | undefined {
    return this.byNumber.get(n);
  }

  /** Lets go of a block whose experiments become items; false when it is none (any more). */
  take(block: IBlock | undefined): block is IBlock {
    if (!block || !this.byNode.has(block.node)) {
      return false;
    }
    this.byNode.delete(block.node);
    block.records.forEach(record => this.byNumber.delete(record.n));
    return true;
  }

  /** A block's height: its placeholders' as they would be (the filter's hidden ones take none). */
  resize(block: IBlock | undefined): void {
    if (!block) {
      return;
    }
    const height = block.records.reduce((sum, record) => sum + this.height(record), 0);
    block.node.style.height = `${height}px`;
    block.node.hidden = height === 0;
  }

  resizeAll(): void {
    this.byNode.forEach(block => this.resize(block));
  }

  nodes(): HTMLElement[] {
    return [...this.byNode.keys()];
  }

  /** Removes every block from the document and forgets them. */
  clear(): void {
    this.byNode.forEach(block => block.node.remove());
    this.byNode.clear();
    this.byNumber.clear();
  }
}
