// @vitest-environment jsdom
/**
 * The search tree in the panel's experiment list, in jsdom: a move or a branch says how it
 * searched in its header (and in its accessible name), a branch's items are indented by depth,
 * a plain experiment on the best is left as it was, and results added later join the tree.
 */
import { nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { describe, expect, it, vi } from 'vitest';
import type { ExperimentRecord } from '../../src/core/journal/journal';
import { lightExperiment } from '../../src/core/journal/light-record';
import { ExperimentList } from '../../src/lab/panel/list/experiment-list';
import { rendererFactory } from '../../src/lab/renderer/index';
import { record } from '../helpers/records';

vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
  Element.prototype.scrollIntoView ??= () => undefined;
});

// As in panel-keyboard.test.ts: the list only constructs MimeModels, which keep their data.
vi.mock('@jupyterlab/rendermime', () => ({
  MimeModel: class {
    readonly data: Record<string, unknown>;
    constructor(options: { data: Record<string, unknown> }) {
      this.data = options.data;
    }
  },
}));

const trans = nullTranslator.load('jupyterlab_autoresearch');
const commitOf = (n: number) => n.toString(16).padStart(40, 'b');
const exp = (n: number, from: number | null, over: Partial<ExperimentRecord> = {}) =>
  record(n, { parent_commit: from === null ? 'a'.repeat(40) : commitOf(from), ...over });

/** #0 kept; #1 a near-miss; #2, #3 a branch from it (#3 two steps off the line); #4 a re-test on #0. */
const RUN = [
  exp(0, null, { status: 'keep' }),
  exp(1, 0),
  exp(2, 1, { move: { kind: 'branch', of: [1] } }),
  exp(3, 2, { move: { kind: 'branch', of: [1] } }),
  exp(4, 0, { move: { kind: 'retest', of: [1] } }),
];

function list(): ExperimentList {
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
    // Light records, as the event stream replays a run; the list fetches each whole to render it.
    fetchExperiment: async (n: number) => RUN.concat(LATER).find(r => r.n === n) ?? null,
  });
  Widget.attach(l, document.body);
  return l;
}
const LATER = [exp(5, 3, { move: { kind: 'branch', of: [1] }, status: 'keep' }), exp(6, 5)];

const item = (l: ExperimentList, n: number) =>
  l.node.querySelector<HTMLElement>(`.jp-AutoresearchExperimentList-item[data-n="${n}"]`)!;
const moveLabel = async (l: ExperimentList, n: number) => {
  l.reveal(n);
  await vi.waitFor(() => expect(item(l, n).classList.contains('jp-mod-rendered')).toBe(true), { timeout: 5000 });
  return item(l, n).querySelector('.jp-AutoresearchExperiment-move')?.textContent ?? null;
};

describe('the search tree in the experiment list', () => {
  it('labels moves and branches, indents a branch by depth, and leaves a plain experiment on the best alone', async () => {
    const l = list();
    l.add(RUN.map(lightExperiment));
    expect(await moveLabel(l, 1)).toBeNull();
    expect(await moveLabel(l, 2)).toBe('branch of #1');
    expect(await moveLabel(l, 3)).toBe('branch of #1 · from #2');
    expect(await moveLabel(l, 4)).toBe('retest of #1');
    // Before the description, and part of the header's accessible name.
    const header = item(l, 4).querySelector('.jp-AutoresearchExperiment-header')!;
    const label = header.querySelector('.jp-AutoresearchExperiment-move')!;
    expect(label.nextElementSibling?.className).toBe('jp-AutoresearchExperiment-description');
    expect(header.getAttribute('aria-label')).toMatch(/ retest of #1 experiment 4/);
    expect([0, 1, 2, 3, 4].map(n => item(l, n).dataset.depth ?? '0')).toEqual(['0', '0', '1', '2', '0']);
    expect(item(l, 3).classList.contains('jp-mod-branch')).toBe(true);
    expect(item(l, 3).style.getPropertyValue('--jp-autoresearch-depth')).toBe('2');
    expect(item(l, 4).classList.contains('jp-mod-branch')).toBe(false);
  });

  it('adds later results to the tree, and starts afresh after a clear', async () => {
    const l = list();
    l.add(RUN.map(lightExperiment));
    l.add(LATER.map(lightExperiment));
    // A branch experiment that was kept is on the line: not indented, still says where it came from.
    expect(await moveLabel(l, 5)).toBe('branch of #1 · from #3');
    expect(item(l, 5).classList.contains('jp-mod-branch')).toBe(false);
    expect(await moveLabel(l, 6)).toBeNull();
    l.clear();
    l.add([exp(0, null, { status: 'keep' }), exp(2, 1, { move: { kind: 'branch', of: [1] } })]);
    // #1 is no longer in the list: #2 started from a commit it does not know.
    expect(item(l, 2).dataset.depth).toBeUndefined();
  });
});
