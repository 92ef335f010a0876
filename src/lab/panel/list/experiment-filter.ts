/**
 * Filtering a run's experiments by status and by words of their description and rationale, so a
 * researcher with hundreds of experiments sees only the keeps, or the crashes, first.
 *
 * - ExperimentFilter: the model. Pure apart from its Lumino signal: `matches(record)` is what the
 *   experiment list hides items by, and `changed` says when to look again.
 * - ExperimentFilterBar: the bar above the list: a toggle button per status with its count, a
 *   search field, how many are shown, and *Show all*; labelled for screen readers.
 * - shownNumbers, with src/core/views/chart-filter.ts's filterChartRows: the chart
 *   following the filter. The chart's rows are filtered *after* chartRows made them from the whole
 *   journal, not by giving the chart fewer records: the running best is the run's whatever is shown
 *   (a best re-measured while judging a discard counts towards its estimate, and a crash-only view
 *   still needs the best line), so it is computed from everything and only the points hidden.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import type { ISignal } from '@lumino/signaling';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { ExperimentRecord, ExperimentStatus } from '../../../core/journal/journal';
import { EXPERIMENT_STATUSES } from '../../../core/journal/journal';
import { el } from '../../renderer/dom';
import { statusLabel } from '../../renderer/experiment-view';

/** What the filter reads of an experiment record (the chart's rows and the list's items have these). */
export type FilterableRecord = Pick<ExperimentRecord, 'n' | 'status' | 'description' | 'rationale'>;

/** The statuses the bar always offers; the others get a button once an experiment has them. */
const ALWAYS_SHOWN: readonly ExperimentStatus[] = ['keep', 'discard', 'crash'];

/** The lower-cased words a record is searched in, computed once per record object (records never change). */
const searchText = new WeakMap<object, string>();

function textOf(record: FilterableRecord): string {
  let text = searchText.get(record);
  if (text === undefined) {
    text = `${record.description}\n${record.rationale}`.toLocaleLowerCase();
    searchText.set(record, text);
  }
  return text;
}

/** The search's terms: lower-cased, split at white space; every one must occur. */
export function searchTerms(search: string): string[] {
  return search.toLocaleLowerCase().split(/\s+/).filter(Boolean);
}

export class ExperimentFilter {
  private _statuses = new Set<ExperimentStatus>();
  private _search = '';
  private _terms: string[] = [];
  private readonly _changed = new Signal<this, void>(this);

  /** Emitted after any change of the statuses or the search (never for a no-op). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The statuses shown; empty shows every status (no button pressed: nothing filtered). */
  get statuses(): ReadonlySet<ExperimentStatus> {
    return this._statuses;
  }

  /** The search as typed. */
  get search(): string {
    return this._search;
  }

  /** Whether the filter hides anything at all. */
  get active(): boolean {
    return this._statuses.size > 0 || this._terms.length > 0;
  }

  /** Whether an experiment passes: one of the chosen statuses (any, with none chosen), and every
   * search term in its description or rationale, case-insensitively. */
  matches(record: FilterableRecord): boolean {
    if (this._statuses.size > 0 && !this._statuses.has(record.status)) {
      return false;
    }
    if (this._terms.length === 0) {
      return true;
    }
    const text = textOf(record);
    return this._terms.every(term => text.includes(term));
  }

  /** The records that pass, in their order. */
  apply<T extends FilterableRecord>(records: readonly T[]): T[] {
    return this.active ? records.filter(r => this.matches(r)) : [...records];
  }

  /** Shows only these statuses (none: all). */
  setStatuses(statuses: Iterable<ExperimentStatus>): void {
    const next = new Set(statuses);
    if (next.size === this._statuses.size && [...next].every(s => this._statuses.has(s))) {
      return;
    }
    this._statuses = next;
    this._changed.emit();
  }

  /** Adds a status to those shown, or takes it away. */
  toggle(status: ExperimentStatus): void {
    const next = new Set(this._statuses);
    if (!next.delete(status)) {
      next.add(status);
    }
    this.setStatuses(next);
  }

  setSearch(search: string): void {
    if (search === this._search) {
      return;
    }
    const terms = searchTerms(search);
    const same = terms.length === this._terms.length && terms.every((t, i) => t === this._terms[i]);
    this._search = search;
    this._terms = terms;
    // Typing a space changes the text, not what matches: no redraw of a long list for it.
    if (!same) {
      this._changed.emit();
    }
  }

  /** Shows everything again. */
  clear(): void {
    const had = this.active;
    this._statuses = new Set();
    this._search = '';
    this._terms = [];
    if (had) {
      this._changed.emit();
    }
  }

  dispose(): void {
    Signal.clearData(this);
  }
}

/** How many experiments have each status. */
export function statusCounts(records: readonly Pick<FilterableRecord, 'status'>[]): Record<ExperimentStatus, number> {
  const counts = Object.fromEntries(EXPERIMENT_STATUSES.map(s => [s, 0])) as Record<ExperimentStatus, number>;
  for (const r of records) {
    counts[r.status] += 1;
  }
  return counts;
}

/** The numbers of the experiments the filter shows; null when it hides nothing (draw everything). */
export function shownNumbers(filter: ExperimentFilter, records: readonly FilterableRecord[]): Set<number> | null {
  return filter.active ? new Set(filter.apply(records).map(r => r.n)) : null;
}

/**
 * The filter bar: status toggles (aria-pressed) with counts, a search field (Escape clears it),
 * `N of M shown` (announced politely), and *Show all* while something is hidden. It changes the
 * filter it is given and follows it when something else changes it.
 */
export class ExperimentFilterBar extends Widget {
  readonly searchInput: HTMLInputElement;
  readonly shownLine: HTMLElement;
  readonly showAll: HTMLButtonElement;
  private readonly group: HTMLElement;
  private readonly buttons = new Map<ExperimentStatus, HTMLButtonElement>();
  private records: readonly FilterableRecord[] = [];

  constructor(
    readonly filter: ExperimentFilter,
    private readonly trans: TranslationBundle,
  ) {
    super();
    this.addClass('jp-AutoresearchFilter');
    this.node.setAttribute('role', 'search');
    this.node.setAttribute('aria-label', trans.__('Filter experiments'));
    this.group = el('div', 'jp-AutoresearchFilter-statuses');
    this.group.setAttribute('role', 'group');
    this.group.setAttribute('aria-label', trans.__('Show experiments by status'));
    for (const status of EXPERIMENT_STATUSES) {
      const button = el('button', `jp-AutoresearchFilter-status jp-mod-${status}`);
      button.type = 'button';
      button.dataset.status = status;
      // Its name is its text, `keep 12` (the space keeps the two words apart for a screen
      // reader), and its state aria-pressed: no aria-label that could say something else.
      button.append(
        el('span', 'jp-AutoresearchFilter-statusName', statusLabel(status, trans)),
        document.createTextNode(' '),
        el('span', 'jp-AutoresearchFilter-count', '0'),
      );
      button.addEventListener('click', () => filter.toggle(status));
      this.buttons.set(status, button);
      this.group.appendChild(button);
    }
    this.searchInput = el('input', 'jp-AutoresearchFilter-search jp-mod-styled');
    this.searchInput.type = 'search';
    this.searchInput.placeholder = trans.__('Search descriptions and rationales');
    this.searchInput.setAttribute('aria-label', trans.__('Search descriptions and rationales'));
    this.searchInput.addEventListener('input', () => filter.setSearch(this.searchInput.value));
    this.searchInput.addEventListener('keydown', event => {
      if (event.key === 'Escape' && this.searchInput.value !== '') {
        // Only the search: the panel's own Escape handling must not see this one too.
        event.stopPropagation();
        this.searchInput.value = '';
        filter.setSearch('');
      }
    });
    this.showAll = el('button', 'jp-AutoresearchFilter-showAll jp-mod-styled', trans.__('Show all'));
    this.showAll.type = 'button';
    this.showAll.addEventListener('click', () => filter.clear());
    this.shownLine = el('span', 'jp-AutoresearchFilter-shown');
    this.shownLine.setAttribute('aria-live', 'polite');
    this.node.append(this.group, this.searchInput, this.showAll, this.shownLine);
    filter.changed.connect(this.sync, this);
    this.sync();
  }

  /** The run's experiments now (after each new one, or another run shown): counts and what is shown. */
  setRecords(records: readonly FilterableRecord[]): void {
    this.records = records;
    this.sync();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.filter.changed.disconnect(this.sync, this);
    super.dispose();
  }

  private sync(): void {
    const { filter, trans } = this;
    const counts = statusCounts(this.records);
    for (const [status, button] of this.buttons) {
      const pressed = filter.statuses.has(status);
      const count = counts[status];
      button.setAttribute('aria-pressed', String(pressed));
      button.classList.toggle('jp-mod-active', pressed);
      // interrupted and rejected are rare: a button once one exists (or while it is pressed).
      button.hidden = !ALWAYS_SHOWN.includes(status) && count === 0 && !pressed;
      (button.lastElementChild as HTMLElement).textContent = String(count);
      const name = statusLabel(status, trans);
      button.title = pressed
        ? trans.__('Showing %1 experiments: click to stop filtering by it', name)
        : trans.__('Show only %1 experiments (add other statuses to show them too)', name);
    }
    if (this.searchInput.value !== filter.search) {
      this.searchInput.value = filter.search;
    }
    this.showAll.hidden = !filter.active;
    const total = this.records.length;
    const shown = filter.active ? this.records.filter(r => filter.matches(r)).length : total;
    this.shownLine.textContent = filter.active ? trans.__('%1 of %2 shown', shown, total) : '';
    this.node.classList.toggle('jp-mod-filtering', filter.active);
  }
}
