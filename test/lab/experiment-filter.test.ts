// @vitest-environment jsdom
/**
 * The experiment filter: the model (statuses, a case-insensitive search over description and
 * rationale, every term required, `changed` only for real changes), the bar a user drives it with
 * (status toggles with counts and aria-pressed, the search field, Escape, Show all, `N of M
 * shown`), and the chart following it: rows of the shown experiments with the best line of the
 * whole run.
 */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it, vi } from 'vitest';
import { chartRows, chartRuns } from '../../src/core/views/chart-rows';
import type { ExperimentRecord } from '../../src/core/journal/journal';
import {
  ExperimentFilter,
  ExperimentFilterBar,
  searchTerms,
  shownNumbers,
  statusCounts,
} from '../../src/lab/panel/list/experiment-filter';
import { filterChartRows } from '../../src/core/views/chart-filter';
import { history, record } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');

const RECORDS: ExperimentRecord[] = [
  record(0, { status: 'keep', description: 'baseline', rationale: 'measure the starting point' }),
  record(1, { status: 'discard', description: 'LEARNING_RATE 0.001 → 5e-4', rationale: 'Halve the Learning Rate' }),
  record(2, { status: 'keep', description: 'WARMUP 0 → 100 steps', rationale: 'the loss spikes early' }),
  record(3, { status: 'crash', description: 'N_LAYER 4 → 64', rationale: 'deeper is better; OOM risk' }),
  record(4, { status: 'rejected', description: 'rotary embeddings', rationale: 'position encoding' }),
  record(5, {
    status: 'discard',
    description: 'weight decay 0.1',
    rationale: 'regularise: the learning curve flattens',
  }),
];

function numbers(filter: ExperimentFilter, records = RECORDS): number[] {
  return filter.apply(records).map(r => r.n);
}

describe('ExperimentFilter', () => {
  it('shows everything until a status or a search is set', () => {
    const filter = new ExperimentFilter();
    expect(filter.active).toBe(false);
    expect(numbers(filter)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('shows only the statuses chosen, several at once', () => {
    const filter = new ExperimentFilter();
    filter.toggle('keep');
    expect(numbers(filter)).toEqual([0, 2]);
    filter.toggle('crash');
    expect(numbers(filter)).toEqual([0, 2, 3]);
    filter.toggle('keep');
    expect(numbers(filter)).toEqual([3]);
    filter.toggle('crash');
    expect(filter.active).toBe(false);
    expect(numbers(filter)).toHaveLength(6);
  });

  it('searches descriptions and rationales, whatever the case, every term required', () => {
    const filter = new ExperimentFilter();
    filter.setSearch('learning');
    // #1's rationale says "Learning Rate", its description LEARNING_RATE; #5's rationale "learning curve".
    expect(numbers(filter)).toEqual([1, 5]);
    filter.setSearch('  LEARNING   rate ');
    expect(numbers(filter)).toEqual([1]);
    filter.setSearch('oom');
    expect(numbers(filter)).toEqual([3]);
    filter.setSearch('learning nowhere');
    expect(numbers(filter)).toEqual([]);
    // Searched in the description and the rationale, not in the diff or the reason.
    filter.setSearch('boom');
    expect(numbers(filter)).toEqual([]);
  });

  it('combines a status with a search', () => {
    const filter = new ExperimentFilter();
    filter.setSearch('learning');
    filter.toggle('discard');
    expect(numbers(filter)).toEqual([1, 5]);
    filter.setStatuses(['keep']);
    expect(numbers(filter)).toEqual([]);
    filter.clear();
    expect(numbers(filter)).toHaveLength(6);
    expect(filter.search).toBe('');
  });

  it('says it changed only when what it matches may have', () => {
    const filter = new ExperimentFilter();
    let changes = 0;
    filter.changed.connect(() => void changes++);
    filter.setSearch('lr');
    filter.setSearch('lr ');
    filter.setSearch('LR'); // the same terms: nothing to redraw
    expect(changes).toBe(1);
    filter.setStatuses(['keep', 'crash']);
    filter.setStatuses(['crash', 'keep']);
    expect(changes).toBe(2);
    filter.clear();
    filter.clear();
    expect(changes).toBe(3);
    expect(searchTerms(' A  b ')).toEqual(['a', 'b']);
  });
});

describe('ExperimentFilterBar', () => {
  function bar() {
    const filter = new ExperimentFilter();
    const view = new ExperimentFilterBar(filter, trans);
    document.body.appendChild(view.node);
    view.setRecords(RECORDS);
    const button = (status: string) =>
      view.node.querySelector<HTMLButtonElement>(`.jp-AutoresearchFilter-status[data-status="${status}"]`)!;
    return { filter, view, button };
  }

  it('is a labelled search region with a labelled group of status toggles and a labelled field', () => {
    const { view } = bar();
    expect(view.node.getAttribute('role')).toBe('search');
    expect(view.node.getAttribute('aria-label')).toBe('Filter experiments');
    const group = view.node.querySelector('[role="group"]')!;
    expect(group.getAttribute('aria-label')).toBe('Show experiments by status');
    expect(view.searchInput.type).toBe('search');
    expect(view.searchInput.getAttribute('aria-label')).toBe('Search descriptions and rationales');
  });

  it('shows a toggle per status with its count; rare statuses only once one occurs', () => {
    const { view, button } = bar();
    const shown = [...view.node.querySelectorAll<HTMLButtonElement>('.jp-AutoresearchFilter-status')]
      .filter(b => !b.hidden)
      .map(b => b.textContent);
    // The name is the text, the words apart: `keep 2`.
    expect(shown).toEqual(['keep 2', 'discard 2', 'crash 1', 'rejected 1']);
    expect(button('interrupted').hidden).toBe(true);
    expect(button('keep').getAttribute('aria-pressed')).toBe('false');
    expect(statusCounts(RECORDS)).toEqual({ keep: 2, discard: 2, crash: 1, interrupted: 0, rejected: 1 });
  });

  it('toggles statuses on click, and says how many are shown', () => {
    const { filter, view, button } = bar();
    expect(view.showAll.hidden).toBe(true);
    expect(view.shownLine.textContent).toBe('');
    expect(view.shownLine.getAttribute('aria-live')).toBe('polite');
    button('crash').click();
    expect([...filter.statuses]).toEqual(['crash']);
    expect(button('crash').getAttribute('aria-pressed')).toBe('true');
    expect(view.shownLine.textContent).toBe('1 of 6 shown');
    button('keep').click();
    expect(view.shownLine.textContent).toBe('3 of 6 shown');
    expect(view.showAll.hidden).toBe(false);
    view.showAll.click();
    expect(filter.active).toBe(false);
    expect(button('crash').getAttribute('aria-pressed')).toBe('false');
    expect(view.showAll.hidden).toBe(true);
  });

  it('searches as one types; Escape clears the search and only the search', () => {
    const { filter, view, button } = bar();
    button('discard').click();
    view.searchInput.value = 'Learning';
    view.searchInput.dispatchEvent(new Event('input'));
    expect(filter.search).toBe('Learning');
    expect(view.shownLine.textContent).toBe('2 of 6 shown');
    const outer = vi.fn();
    document.body.addEventListener('keydown', outer);
    view.searchInput.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(filter.search).toBe('');
    expect(view.searchInput.value).toBe('');
    expect(outer).not.toHaveBeenCalled();
    expect([...filter.statuses]).toEqual(['discard']);
    // An empty field lets Escape through, for whatever the panel does with it.
    view.searchInput.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(outer).toHaveBeenCalledTimes(1);
    document.body.removeEventListener('keydown', outer);
  });

  it('follows the filter when something else changes it, and new records update the counts', () => {
    const { filter, view, button } = bar();
    filter.setSearch('warmup');
    filter.setStatuses(['keep']);
    expect(view.searchInput.value).toBe('warmup');
    expect(button('keep').getAttribute('aria-pressed')).toBe('true');
    expect(view.shownLine.textContent).toBe('1 of 6 shown');
    view.setRecords([...RECORDS, record(6, { status: 'keep', description: 'warmup 100 → 200' })]);
    expect(button('keep').textContent).toBe('keep 3');
    expect(view.shownLine.textContent).toBe('2 of 7 shown');
    view.dispose();
    filter.clear(); // disconnected: no throw from a disposed bar
    expect(view.isDisposed).toBe(true);
  });
});

describe('the chart following the filter', () => {
  it('keeps the rows and dots of the experiments shown, with the best line of the whole run', () => {
    const records = history(40);
    const rows = chartRows(records);
    const filter = new ExperimentFilter();
    expect(shownNumbers(filter, records)).toBeNull();
    expect(filterChartRows(rows, shownNumbers(filter, records))).toEqual(rows);

    filter.toggle('crash');
    const shown = shownNumbers(filter, records)!;
    expect([...shown]).toEqual([13, 26, 39]);
    const crashes = filterChartRows(rows, shown);
    expect(crashes.map(r => r.n)).toEqual([13, 26, 39]);
    // The best at each crash is the run's best then, not nothing for want of keeps among the rows shown.
    for (const row of crashes) {
      expect(row.best).toBe(rows.find(r => r.n === row.n)!.best);
      expect(row.best).not.toBeNull();
    }
    // Giving the chart only the crashes' records would have lost the best line: why rows, not records.
    expect(chartRows(filter.apply(records)).every(r => r.best === null)).toBe(true);
    // The per-run dots follow too (RunPoint has n as well).
    const runs = chartRuns(records);
    expect(filterChartRows(runs, shown)).toEqual(runs.filter(p => shown.has(p.n)));
  });
});
