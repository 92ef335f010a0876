// @vitest-environment jsdom
/**
 * The panel from the keyboard and for screen readers, in jsdom: the experiments' headers as
 * buttons (Enter, Space and the arrow keys, rendering on demand), which experiments are expanded
 * and its saved form, the toolbar's labelled controls, and which panel a command acts on.
 */
import { nullTranslator } from '@jupyterlab/translation';
import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';
import { describe, expect, it, vi } from 'vitest';
import type { ExperimentRecord } from '../../src/core/journal/journal';
import { Expansion, parseExpansion } from '../../src/lab/panel/list/expansion';
import { ExperimentList, type IExperimentListOptions } from '../../src/lab/panel/list/experiment-list';
import { BLOCK, EAGER } from '../../src/lab/panel/list/blocks';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { RunToolbar } from '../../src/lab/panel/toolbar/run-toolbar';
import { showItem } from '../../src/lab/panel/toolbar/toolbar-items';
import { rendererFactory } from '../../src/lab/renderer/index';
import { panelOf } from '../../src/lab/commands/run-commands';
import { record } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
  // Nor layout, so nothing to scroll: scrolling an item into view does nothing here.
  Element.prototype.scrollIntoView ??= () => undefined;
});

// The real module pulls in JupyterLab's web components, which need a browser build; the list
// only constructs MimeModels with it, which here just keep their data, as the real ones do.
vi.mock('@jupyterlab/rendermime', () => ({
  MimeModel: class {
    readonly data: Record<string, unknown>;
    constructor(options: { data: Record<string, unknown> }) {
      this.data = options.data;
    }
  },
}));

const trans = nullTranslator.load('jupyterlab_autoresearch');

/**
 * A list in the document whose outputs come from the experiment renderer's own factory, as
 * JupyterLab's rendermime gives them. No scroller, so no IntersectionObserver (jsdom has none):
 * nothing renders until the keyboard or a reveal asks, which is the path that matters here.
 */
function list(records: ExperimentRecord[], more: Partial<IExperimentListOptions> = {}): ExperimentList {
  const rendermime = {
    createRenderer: (mimeType: string) =>
      rendererFactory.createRenderer({ mimeType, sanitizer: { sanitize: (s: string) => s } } as never),
  } as never;
  const l = new ExperimentList({
    rendermime,
    trans,
    scroller: () => null,
    fetchLog: async () => null,
    metric: () => 'val_bpb',
    direction: () => 'lower',
    ...more,
  });
  Widget.attach(l, document.body);
  l.add(records);
  return l;
}

const item = (l: ExperimentList, n: number) =>
  l.node.querySelector<HTMLElement>(`.jp-AutoresearchExperimentList-item[data-n="${n}"]`)!;
const header = (l: ExperimentList, n: number) =>
  item(l, n).querySelector<HTMLElement>('.jp-AutoresearchExperiment-header');
const key = (target: HTMLElement, k: string, init: KeyboardEventInit = {}) => {
  const event = new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true, ...init });
  target.dispatchEvent(event);
  return event;
};
/** Waits until experiment n's header has the focus (it may have to be rendered first). */
const focusedOn = (l: ExperimentList, n: number) =>
  vi.waitFor(() => expect(document.activeElement).toBe(header(l, n)), { timeout: 5000 });

// #0 kept (the baseline), #1 discarded, #2 kept, #3 discarded; shown newest first.
const RUN = [record(0), record(1), record(2, { status: 'keep' }), record(3)];

describe('Expansion', () => {
  it('expands the kept experiments unless flipped, and saves only what differs', () => {
    const e = new Expansion();
    expect(e.isExpanded(0, 'keep')).toBe(true);
    expect(e.isExpanded(1, 'discard')).toBe(false);
    expect(e.isDefault).toBe(true);
    e.set(1, 'discard', true);
    e.set(0, 'keep', false);
    expect(e.state).toEqual({ base: 'kept', flipped: [0, 1] });
    e.set(1, 'discard', false);
    expect(e.state).toEqual({ base: 'kept', flipped: [0] });
    e.set(0, 'keep', true);
    expect(e.isDefault).toBe(true);
  });

  it('says expand all in one word, whatever the run’s length', () => {
    const e = new Expansion();
    e.set(5, 'discard', true);
    e.setAll(true);
    expect(e.state).toEqual({ base: 'all', flipped: [] });
    expect(e.isExpanded(9999, 'discard')).toBe(true);
    e.set(7, 'crash', false);
    expect(e.state).toEqual({ base: 'all', flipped: [7] });
    e.setAll(false);
    expect(e.isExpanded(0, 'keep')).toBe(false);
  });

  it('reads back only a saved state of its own shape', () => {
    expect(parseExpansion({ base: 'none', flipped: [3, 'x', 1.5, 4] })).toEqual({ base: 'none', flipped: [3, 4] });
    for (const junk of [null, 'all', [], { base: 'some', flipped: [] }, { base: 'all' }]) {
      expect(parseExpansion(junk)).toBeNull();
    }
  });
});

describe('the experiment list from the keyboard', () => {
  it('makes a rendered header a named button whose Enter and Space toggle its output', async () => {
    const l = list(RUN);
    expect(header(l, 3)).toBeNull(); // not rendered until asked
    expect(l.reveal(1)).toBe(true);
    await focusedOn(l, 1);
    const h = header(l, 1)!;
    expect(h.getAttribute('role')).toBe('button');
    expect(h.tabIndex).toBe(0);
    // Words with spaces between, not the spans run together: "#1 discard val_bpb 0.999900 …".
    expect(h.getAttribute('aria-label')).toMatch(/^#1 discard val_bpb 0\.999900 /);
    // Revealed: expanded although it was discarded.
    expect(h.getAttribute('aria-expanded')).toBe('true');
    expect(item(l, 1).classList.contains('jp-mod-collapsed')).toBe(false);
    expect(key(h, 'Enter').defaultPrevented).toBe(true);
    expect(h.getAttribute('aria-expanded')).toBe('false');
    expect(item(l, 1).classList.contains('jp-mod-collapsed')).toBe(true);
    key(h, ' ');
    expect(h.getAttribute('aria-expanded')).toBe('true');
    key(h, 'ArrowLeft');
    expect(l.isExpanded(1)).toBe(false);
    key(h, 'ArrowRight');
    expect(l.isExpanded(1)).toBe(true);
    // A modified key is a shortcut's, not the header's.
    expect(key(h, 'Enter', { ctrlKey: true }).defaultPrevented).toBe(false);
    expect(l.isExpanded(1)).toBe(true);
    h.click();
    expect(l.isExpanded(1)).toBe(false);
    l.dispose();
  });

  it('moves between headers with the arrows, Home and End, rendering the ones not yet rendered', async () => {
    const l = list(RUN);
    l.reveal(2);
    await focusedOn(l, 2);
    key(header(l, 2)!, 'ArrowDown'); // newest first: down is the older one
    await focusedOn(l, 1);
    key(header(l, 1)!, 'End');
    await focusedOn(l, 0);
    key(header(l, 0)!, 'ArrowDown'); // past the last: stays
    expect(document.activeElement).toBe(header(l, 0));
    key(header(l, 0)!, 'Home');
    await focusedOn(l, 3);
    key(header(l, 3)!, 'ArrowUp'); // before the first: stays
    expect(document.activeElement).toBe(header(l, 3));
    expect(l.renderedCount).toBe(4);
    // A hidden item (a filter's) is passed over, both ways and by Home and End.
    item(l, 2).hidden = true;
    key(header(l, 3)!, 'ArrowDown');
    await focusedOn(l, 1);
    key(header(l, 1)!, 'ArrowUp');
    await focusedOn(l, 3);
    item(l, 3).hidden = true;
    item(l, 0).hidden = true;
    key(header(l, 3)!, 'End');
    await focusedOn(l, 1);
    key(header(l, 1)!, 'Home');
    await focusedOn(l, 1);
    l.dispose();
  });

  it('says when the user changed the expansion, and a restore does not undo their change', async () => {
    const l = list(RUN);
    const changes = vi.fn();
    l.expansionChanged.connect(changes);
    expect(l.expansionState).toBeNull();
    l.restoreExpansion({ base: 'kept', flipped: [3] });
    expect(l.isExpanded(3)).toBe(true);
    expect(changes).not.toHaveBeenCalled();
    l.setExpanded(0, false);
    expect(changes).toHaveBeenCalledTimes(1);
    expect(l.expansionState).toEqual({ base: 'kept', flipped: [0, 3] });
    // A saved state arriving after the user's click is too late to apply.
    l.restoreExpansion({ base: 'none', flipped: [] });
    expect(l.isExpanded(2)).toBe(true);
    l.setAllExpanded(true);
    l.add([record(4)]);
    expect(l.isExpanded(4)).toBe(true);
    expect(item(l, 4).classList.contains('jp-mod-collapsed')).toBe(false);
    // Another run shown: the default again, and restores apply again.
    l.clear();
    l.add(RUN);
    expect(l.expansionState).toBeNull();
    expect([0, 1, 2, 3].map(n => l.isExpanded(n))).toEqual([true, false, true, false]);
    l.restoreExpansion({ base: 'none', flipped: [1] });
    expect([0, 1, 2, 3].map(n => l.isExpanded(n))).toEqual([false, true, false, false]);
    l.dispose();
  });
});

describe('a long run in the list', () => {
  // #0…#999, a keep every 10th; shown newest first: #999…#950 as items, the rest in blocks.
  const long = () => Array.from({ length: 1000 }, (_, n) => record(n, { status: n % 10 ? 'discard' : 'keep' }));
  const blocks = (l: ExperimentList) => [
    ...l.node.querySelectorAll<HTMLElement>('.jp-AutoresearchExperimentList-block'),
  ];
  const items = (l: ExperimentList) => l.node.querySelectorAll('.jp-AutoresearchExperimentList-item').length;

  it('lists its newest experiments as items and the rest in blocks, each as tall as its placeholders', () => {
    const l = list(long());
    expect(items(l)).toBe(EAGER);
    expect(item(l, 999)).not.toBeNull();
    expect(item(l, 1000 - EAGER - 1)).toBeNull();
    expect(blocks(l)).toHaveLength(Math.ceil((1000 - EAGER) / BLOCK));
    expect(l.count).toBe(1000);
    expect(l.has(0)).toBe(true);
    // A block of 100 with 10 keeps (expanded, 220 px) and 90 discards (collapsed, 40 px).
    expect(blocks(l)[0].style.height).toBe(`${10 * 220 + 90 * 40}px`);
    expect(l.isExpanded(10)).toBe(true);
    expect(l.isExpanded(11)).toBe(false);
    l.setAllExpanded(true);
    expect(blocks(l)[0].style.height).toBe(`${100 * 220}px`);
    l.setExpanded(949, false);
    expect(blocks(l)[0].style.height).toBe(`${99 * 220 + 40}px`);
    l.dispose();
  });

  it('puts a block in as items when the keyboard or a reveal reaches into it, and only that block', async () => {
    const l = list(long());
    const before = blocks(l).length;
    expect(l.reveal(500)).toBe(true);
    await focusedOn(l, 500);
    expect(blocks(l)).toHaveLength(before - 1);
    expect(items(l)).toBe(EAGER + BLOCK);
    key(header(l, 500)!, 'End');
    await focusedOn(l, 0);
    expect(blocks(l)).toHaveLength(before - 2);
    key(header(l, 0)!, 'ArrowUp');
    await focusedOn(l, 1);
    // From the newest block's first item down into the next block.
    l.reveal(1000 - EAGER - BLOCK);
    await focusedOn(l, 1000 - EAGER - BLOCK);
    key(header(l, 1000 - EAGER - BLOCK)!, 'ArrowDown');
    await focusedOn(l, 1000 - EAGER - BLOCK - 1);
    l.dispose();
  });

  it('follows the filter: a block with nothing shown takes no room', () => {
    let mode: 'all' | 'keeps' | 'none' = 'all';
    const l = list(long(), {
      shows: r => mode === 'all' || (mode === 'keeps' && (r.status === 'keep' || r.n < 5)),
    });
    mode = 'keeps';
    l.applyFilter();
    const [first, ...rest] = blocks(l);
    expect(first.style.height).toBe(`${10 * 220}px`);
    expect(first.hidden).toBe(false);
    // Only keeps shown, and the first five: the oldest block still has its keeps and #1…#4.
    expect(rest.at(-1)!.style.height).toBe(`${5 * 220 + 4 * 40}px`);
    mode = 'none';
    l.applyFilter();
    expect(blocks(l).every(b => b.hidden && b.style.height === '0px')).toBe(true);
    mode = 'all';
    l.applyFilter();
    expect(first.style.height).toBe(`${10 * 220 + 90 * 40}px`);
    expect(first.hidden).toBe(false);
    l.dispose();
  });
});

describe('experiments the replay sent light', () => {
  function lightList(fetchExperiment: (n: number) => Promise<ExperimentRecord | null>): ExperimentList {
    const whole = record(1, { diff: '--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-LR = 1\n+LR = 2\n' });
    const { diff: _diff, summary: _summary, ...rest } = whole;
    return list([{ ...rest, light: true } as unknown as ExperimentRecord], { fetchExperiment });
  }

  it('renders one whole, fetched when it renders', async () => {
    const asked: number[] = [];
    const l = lightList(async n => {
      asked.push(n);
      return record(1, { diff: '--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-LR = 1\n+LR = 2\n' });
    });
    expect(asked).toEqual([]);
    l.reveal(1);
    await focusedOn(l, 1);
    expect(asked).toEqual([1]);
    expect(item(l, 1).textContent).toContain('LR = 2');
    l.dispose();
  });

  it('says so when it cannot be had, and loses nothing else', async () => {
    const l = lightList(async () => {
      throw new Error('the server is gone');
    });
    l.reveal(1);
    await vi.waitFor(() => expect(item(l, 1).textContent).toContain('could not be loaded: the server is gone'));
    expect(item(l, 1).classList.contains('jp-mod-error')).toBe(true);
    expect(l.has(1)).toBe(true);
    l.dispose();
  });
});

describe('the toolbar for screen readers and keyboards', () => {
  it('names every field by its visible label, with no empty aria-label', () => {
    const bar = new RunToolbar({ trans, model: new RunModel(), commands: new CommandRegistry(), args: () => ({}) });
    const host = document.createElement('div');
    bar.items.forEach(([, w]) => host.appendChild(w.node));
    host.appendChild(bar.nextRunBar.node); // the next run's fields, a row of their own
    document.body.appendChild(host);
    const fields = host.querySelectorAll<HTMLInputElement | HTMLSelectElement>('select, input');
    expect(fields.length).toBe(7); // run; then kernel, use, proposer, model, budget, tag
    const names = Array.from(fields, f => {
      expect(f.labels?.length, f.className).toBe(1);
      return f.labels![0].textContent;
    });
    expect(names).toEqual(['Run', 'Kernel', 'Use', 'Proposer', 'Model', 'Budget (s)', 'Tag']);
    expect(bar.nextRunBar.node.getAttribute('aria-label')).toBe('Next run');
    for (const el of host.querySelectorAll('[aria-label]')) {
      expect(el.getAttribute('aria-label'), el.className).not.toBe('');
    }
    // The buttons' text names them; their caption is the description.
    host.querySelectorAll('button').forEach(b => expect(b.hasAttribute('aria-label')).toBe(false));
    host.remove();
    bar.dispose();
  });

  it('hides an item with the attribute JupyterLab’s toolbar recounts its controls on', () => {
    const bar = new RunToolbar({ trans, model: new RunModel(), commands: new CommandRegistry(), args: () => ({}) });
    bar.proposer.value = 'offline';
    bar.syncModelField();
    expect(bar.model.parentElement!.hidden).toBe(true);
    bar.proposer.value = 'claude';
    bar.syncModelField();
    expect(bar.model.parentElement!.hidden).toBe(false);
    const node = document.createElement('div');
    showItem(node, false);
    expect([node.hidden, node.classList.contains('jp-mod-hidden')]).toEqual([true, true]);
    bar.dispose();
  });

  it('keeps ArrowLeft and ArrowRight in the model field except at its ends', () => {
    const bar = new RunToolbar({ trans, model: new RunModel(), commands: new CommandRegistry(), args: () => ({}) });
    const outer = document.createElement('div');
    const seen: string[] = [];
    outer.addEventListener('keydown', e => seen.push(e.key)); // stands where the toolbar listens
    outer.appendChild(bar.model.parentElement!);
    document.body.appendChild(outer);
    bar.model.value = 'claude-opus';
    bar.model.setSelectionRange(3, 3);
    key(bar.model, 'ArrowLeft');
    key(bar.model, 'ArrowRight');
    expect(seen).toEqual([]);
    bar.model.setSelectionRange(11, 11);
    key(bar.model, 'ArrowRight');
    bar.model.setSelectionRange(0, 0);
    key(bar.model, 'ArrowLeft');
    expect(seen).toEqual(['ArrowRight', 'ArrowLeft']);
    outer.remove();
    bar.dispose();
  });
});

describe('which panel a command acts on', () => {
  type Panel = Parameters<typeof panelOf>[0]['currentWidget'];
  const a = { path: 'a' } as NonNullable<Panel>;
  const b = { path: 'b' } as NonNullable<Panel>;
  const tracker = { currentWidget: a, find: (fn: (p: NonNullable<Panel>) => boolean) => [a, b].find(fn) } as never;

  it('is the one its path names, else the one right-clicked from the context menu, else the one in focus', () => {
    expect(panelOf(tracker, { path: 'b' }, () => a)).toBe(b);
    expect(panelOf(tracker, { path: 'c' })).toBeNull();
    expect(panelOf(tracker, { isContextMenu: true }, () => b)).toBe(b);
    // The context menu opened elsewhere: the panel in focus.
    expect(panelOf(tracker, { isContextMenu: true }, () => null)).toBe(a);
    // The palette and the shortcuts: the panel in focus, wherever the last context menu was.
    expect(panelOf(tracker, {}, () => b)).toBe(a);
  });
});
