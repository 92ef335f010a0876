// @vitest-environment jsdom
/**
 * Compare: GET compare's answer from a real `jupyter server` and a real engine run, through
 * fetchCompare (its zod check included), drawn by the compare view: the two records side by side,
 * the change of the metric, the summary keys with differing rows marked, the diff between the
 * commits highlighted with the renderer's own classes. Then the answers a gc'd or lost commit
 * gives (recomposed, or no diff and why), a cut diff, loading and errors, out-of-order answers,
 * and the picks a user makes in the list.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CompareAnswer, fetchCompare } from '../../src/lab/api/compare';
import { CompareView, diffCounts, summaryRows } from '../../src/lab/panel/compare/compare-view';
import { ComparePicks, pickCheckbox, syncPickCheckboxes } from '../../src/lab/panel/compare/compare-picks';
import { startJupyterServer, type JupyterServer } from '../helpers/jupyter-server';
import { record } from '../helpers/records';
import { cli, experiments, git, makeWorkspace, ROOT, STAND_IN_PROGRAM } from '../helpers/workspace';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');
const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');

const DIFF =
  'diff --git a/train.py b/train.py\nindex 1111111..2222222 100644\n--- a/train.py\n+++ b/train.py\n' +
  '@@ -1,3 +1,3 @@\n import math\n-LEARNING_RATE = 0.001\n+LEARNING_RATE = 0.004\n N_LAYER = 4\n';

/** An answer as the server gives it, checked by the same schema fetchCompare uses. */
function answer(over: Partial<CompareAnswer> = {}): CompareAnswer {
  return CompareAnswer.parse({
    tag: 't1',
    metric: 'val_bpb',
    direction: 'lower',
    editable: ['train.py'],
    best: 3,
    a: record(1, {
      status: 'discard',
      metric: 1.13,
      delta: 0.05,
      summary: { val_bpb: 1.13, training_seconds: 0.3, peak_vram_mb: 10 },
    }),
    b: record(3, {
      status: 'keep',
      metric: 1.04,
      delta: -0.01,
      summary: { val_bpb: 1.04, training_seconds: 0.3, depth: 'eight' },
    }),
    diff: DIFF,
    truncated: false,
    sources: { a: 'commit', b: 'commit' },
    reason: null,
    ...over,
  });
}

function shown(data: CompareAnswer): CompareView {
  const view = new CompareView(trans, null);
  document.body.appendChild(view.node);
  view.setData(data);
  return view;
}

function cellTexts(view: CompareView, key: string): string[] {
  const row = view.node.querySelector(`.jp-AutoresearchCompare-records tr[data-key="${key}"]`)!;
  return [...row.querySelectorAll('td')].map(td => td.textContent!);
}

describe('GET compare from a real server, drawn', () => {
  let server: JupyterServer;
  let ws: string;

  beforeAll(async () => {
    server = await startJupyterServer();
    ws = path.join(server.root, 'ws');
    fs.cpSync(makeWorkspace({ program: STAND_IN_PROGRAM }), ws, { recursive: true });
    const run = await cli(['run', ws, '--tag', 'c1', '--proposer', 'offline', '--max-experiments', '4'], {
      env: { AUTORESEARCH_PYTHON: PYTHON },
    });
    expect(run.code, run.stderr).toBe(0);
  }, 240_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('compares the baseline with the best: records, metric change, summary keys, the diff', async () => {
    const settings = ServerConnection.makeSettings({ baseUrl: server.url, token: server.token });
    const data = await fetchCompare(settings, 'ws', 'c1', 0, 'best');
    const records = experiments(ws, 'c1');
    const best = records.find(r => r.n === data.best)!;
    expect(best.status).toBe('keep');
    expect(data.a).toEqual(records[0]);
    expect(data.b).toEqual(best);
    expect(data.diff).toBe(git(ws, 'diff', records[0].commit!, best.commit!, '--', 'train.py'));

    const view = shown(data);
    expect(view.node.querySelector('h3')!.textContent).toBe(`#0 and #${best.n}`);
    expect(cellTexts(view, 'status')).toEqual(['keep', 'keep']);
    expect(cellTexts(view, 'description')).toEqual(['baseline', best.description]);
    const change = view.node.querySelector('.jp-AutoresearchCompare-change')!;
    expect(change.textContent).toMatch(new RegExp(`^val_bpb from #0 to #${best.n}: -0\\.\\d{6} \\(better\\)$`));
    // The summary's metric row differs; keys both printed and equal do not.
    const differs = [...view.node.querySelectorAll('.jp-AutoresearchCompare-summary tr.jp-mod-differs')].map(
      tr => (tr as HTMLElement).dataset.key,
    );
    expect(differs[0]).toBe('val_bpb');
    expect(differs).not.toContain('training_seconds');
    // The diff, drawn as the experiment renderer draws one: its added line carries the change.
    const added = [...view.node.querySelectorAll('.jp-AutoresearchExperiment-diffLine.jp-mod-add')].map(
      l => l.textContent,
    );
    expect(added.some(line => /^\+LEARNING_RATE = /.test(line!))).toBe(true);
    expect(view.node.querySelector('details')!.open).toBe(true);
  });

  it('refuses an experiment the journal lacks with the server 404 naming it', async () => {
    const settings = ServerConnection.makeSettings({ baseUrl: server.url, token: server.token });
    const error = await fetchCompare(settings, 'ws', 'c1', 0, 99).catch(e => e);
    expect(error).toBeInstanceOf(ServerConnection.ResponseError);
    expect(error.response.status).toBe(404);
    expect(error.message).toBe('run c1 has no experiment 99');
    const view = new CompareView(trans, null);
    await view.load(Promise.reject(error));
    expect(view.node.querySelector('[role="alert"]')!.textContent).toBe(
      'The comparison could not be loaded: run c1 has no experiment 99',
    );
  });
});

describe('CompareView', () => {
  it('puts the two side by side, the best named, the deltas coloured by the direction', () => {
    const view = shown(answer());
    const heads = [...view.node.querySelectorAll('.jp-AutoresearchCompare-records thead th')].map(th => th.textContent);
    expect(heads).toEqual(['field', '#1', '#3 (best)']);
    expect(cellTexts(view, 'metric')).toEqual(['1.130000', '1.040000']);
    expect(view.node.querySelector('tr[data-key="metric"] th')!.textContent).toBe('val_bpb');
    const deltas = [...view.node.querySelectorAll('tr[data-key="delta"] .jp-AutoresearchExperiment-delta')];
    expect(deltas.map(d => [d.textContent, d.className.split('jp-mod-')[1]])).toEqual([
      ['+0.050000', 'worse'],
      ['-0.010000', 'better'],
    ]);
    expect(cellTexts(view, 'rationale')).toEqual([
      'because experiment 0 suggested it',
      'because experiment 2 suggested it',
    ]);
    expect(view.node.querySelector('.jp-AutoresearchCompare-change')!.textContent).toBe(
      'val_bpb from #1 to #3: -0.090000 (better)',
    );
    // Higher is better: the same change reads as worse.
    const higher = shown(answer({ direction: 'higher' }));
    expect(higher.node.querySelector('.jp-AutoresearchCompare-change .jp-mod-worse')).not.toBeNull();
  });

  it('marks the summary keys that differ, for the eye and for a screen reader', () => {
    const view = shown(answer());
    const rows = [...view.node.querySelectorAll<HTMLTableRowElement>('.jp-AutoresearchCompare-summary tbody tr')];
    expect(rows.map(r => [r.dataset.key, r.classList.contains('jp-mod-differs')])).toEqual([
      ['val_bpb', true],
      ['training_seconds', false],
      ['peak_vram_mb', true],
      ['depth', true],
    ]);
    expect(rows[2].querySelectorAll('td')[1].textContent).toBe('—'); // #3 printed no peak_vram_mb
    expect(rows[0].querySelector('th')!.textContent).toBe('val_bpb ≠(differs)');
    expect(rows[0].querySelector('.jp-AutoresearchCompare-mark')!.getAttribute('aria-hidden')).toBe('true');
    expect(view.node.querySelector('.jp-AutoresearchCompare-summary caption')!.textContent).toBe(
      'Summary keys (3 differ)',
    );
    expect(summaryRows(record(1, { summary: {} }), record(2, { summary: {} }), 'val_bpb')).toEqual([]);
  });

  it('says which metric is one run’s and which the mean of the runs', () => {
    const run = (k: number, metric: number) => ({ k, seed: k, metric, run_s: 1, log_path: null });
    const b = record(3, {
      status: 'keep',
      metric: 6.260721,
      summary: { val_bpb: 6.21979, training_seconds: 0.3 },
      runs: [run(1, 6.3), run(2, 6.262373), run(3, 6.21979)],
    });
    const view = shown(answer({ b }));
    expect(cellTexts(view, 'metric')).toEqual(['1.130000', '6.260721 (mean of 3 runs)']);
    const cells = [...view.node.querySelectorAll('.jp-AutoresearchCompare-summary tr[data-key="val_bpb"] td')];
    // #1 ran once: its summary's metric is its metric; #3's is its last run's, beside the mean.
    expect(cells.map(c => c.textContent)).toEqual(['1.13', 'this run: 6.219790 · mean of 3 runs: 6.260721']);
    expect(view.node.querySelector('.jp-AutoresearchCompare-summary caption')!.textContent).toBe(
      'Summary keys of each one’s last run (2 differ)',
    );
  });

  it('draws the diff between the two with its counts, and says when it was cut', () => {
    const view = shown(answer({ truncated: true }));
    expect(view.node.querySelector('summary')!.textContent).toBe('diff from #1 to #3 (+1 −1)');
    const kinds = [...view.node.querySelectorAll('.jp-AutoresearchExperiment-diffLine')].map(
      l => l.className.split('jp-mod-')[1],
    );
    expect(kinds).toEqual(['file', 'file', 'file', 'file', 'hunk', 'context', 'del', 'add', 'context']);
    expect(view.node.querySelector('.jp-AutoresearchCompare-note.jp-mod-truncated')!.textContent).toMatch(/cut short/);
    expect(diffCounts(DIFF)).toEqual({ added: 1, removed: 1 });
  });

  it('says a side was recomposed from the journal, or why there is no diff at all', () => {
    const reason = "#1's commit 1111111 is no longer in the repository: its code is recomposed";
    const recomposed = shown(answer({ sources: { a: 'journal', b: 'commit' }, reason }));
    expect(cellTexts(recomposed, 'commit')[0]).toMatch(/\(recomposed from the journal\)$/);
    expect(recomposed.node.querySelector('.jp-AutoresearchCompare-note.jp-mod-source')!.textContent).toBe(reason);
    expect(recomposed.node.querySelector('.jp-AutoresearchExperiment-diffLine')).not.toBeNull();

    const none = shown(answer({ diff: null, sources: { a: null, b: 'commit' }, reason: 'its parent is gone' }));
    expect(none.node.querySelector('.jp-AutoresearchCompare-note.jp-mod-none')!.textContent).toBe(
      'No diff between the two: its parent is gone',
    );
    expect(none.node.querySelector('details')).toBeNull();
    // The records are still compared.
    expect(cellTexts(none, 'status')).toEqual(['discard', 'keep']);

    const same = shown(answer({ diff: '' }));
    expect(same.node.querySelector('.jp-mod-same')!.textContent).toBe(
      'The editable files (train.py) are the same in both.',
    );
  });

  it('has no metric change to show against a crash, and shows the crash reason row', () => {
    const crash = record(2, { status: 'crash' });
    const view = shown(answer({ a: crash }));
    expect(view.node.querySelector('.jp-AutoresearchCompare-change')!.textContent).toBe(
      'No change of the metric to show: #2 has no metric.',
    );
    expect(cellTexts(view, 'reason')).toEqual(['exited with code 1: RuntimeError: boom', '—']);
    expect(cellTexts(view, 'metric')).toEqual(['—', '1.040000']);
  });

  it('shows a queue time row only when either ran as Slurm jobs, after the run time', () => {
    expect(shown(answer()).node.querySelector('tr[data-key="queue"]')).toBeNull();
    const queued = record(3, { status: 'keep', timings: { propose_s: 1, run_s: 30, total_s: 100, queue_s: 68.25 } });
    const view = shown(answer({ b: queued }));
    const keys = [...view.node.querySelectorAll<HTMLElement>('.jp-AutoresearchCompare-records tbody tr')].map(
      tr => tr.dataset.key,
    );
    expect(keys.slice(keys.indexOf('time'), keys.indexOf('time') + 2)).toEqual(['time', 'queue']);
    expect(view.node.querySelector('tr[data-key="queue"] th')!.textContent).toBe('queue time (Slurm)');
    expect(cellTexts(view, 'queue')).toEqual(['—', '68.3 s']);
    expect(cellTexts(view, 'time')).toEqual(['300.0 s', '30.0 s']);
  });

  it('shows only the latest of several loads, and closes on its Close button', async () => {
    const view = new CompareView(trans, null);
    document.body.appendChild(view.node);
    let resolveFirst!: (a: CompareAnswer) => void;
    const first = view.load(new Promise<CompareAnswer>(r => (resolveFirst = r)));
    expect(view.node.querySelector('[role="status"]')!.textContent).toBe('Loading the comparison…');
    const second = view.load(Promise.resolve(answer({ a: record(0, { status: 'keep' }) })));
    await second;
    resolveFirst(answer());
    await first;
    expect(view.data!.a.n).toBe(0);
    expect(view.node.dataset.a).toBe('0');
    const closed = vi.fn();
    view.closeRequested.connect(closed);
    view.node.querySelector<HTMLButtonElement>('.jp-AutoresearchCompare-close')!.click();
    expect(closed).toHaveBeenCalledTimes(1);
  });

  it('highlights the code of diff lines with the renderer highlighter it is given', async () => {
    const calls: string[] = [];
    const view = new CompareView(trans, async (code, target) => {
      calls.push(code);
      target.appendChild(Object.assign(document.createElement('span'), { className: 'cm-hl', textContent: code }));
    });
    view.setData(answer());
    await Promise.resolve();
    await Promise.resolve();
    expect(calls).toEqual(['import math', 'LEARNING_RATE = 0.001', 'LEARNING_RATE = 0.004', 'N_LAYER = 4']);
    expect(view.node.querySelectorAll('.jp-AutoresearchExperiment-diffCode .cm-hl')).toHaveLength(4);
  });
});

describe('ComparePicks and the pick checkboxes', () => {
  it('keeps the last two picked, the older experiment first in the pair', () => {
    const picks = new ComparePicks();
    const changed = vi.fn();
    picks.changed.connect(changed);
    picks.toggle(7);
    expect(picks.pair()).toBeNull();
    picks.toggle(3);
    expect(picks.pair()).toEqual([3, 7]);
    picks.toggle(5); // a third lets go of the first picked
    expect(picks.picked).toEqual([3, 5]);
    picks.toggle(3);
    expect(picks.picked).toEqual([5]);
    picks.clear();
    picks.clear();
    expect(changed).toHaveBeenCalledTimes(5);
  });

  it('a labelled checkbox per experiment, kept in step with the picks, its click not the header’s', () => {
    const picks = new ComparePicks();
    const list = document.createElement('div');
    const header = document.createElement('div');
    const headerClick = vi.fn();
    header.addEventListener('click', headerClick);
    list.appendChild(header);
    document.body.appendChild(list); // a checkbox fires change only when connected
    const boxes = [1, 2, 3].map(n => header.appendChild(pickCheckbox(picks, n, trans)).querySelector('input')!);
    picks.changed.connect(() => syncPickCheckboxes(list, picks));
    expect(boxes[0].closest('label')!.textContent).toBe('compare #1');
    boxes[0].click();
    boxes[1].click();
    boxes[2].click();
    expect(picks.picked).toEqual([2, 3]);
    expect(boxes.map(b => b.checked)).toEqual([false, true, true]);
    expect(headerClick).not.toHaveBeenCalled();
  });
});
