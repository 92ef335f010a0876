/**
 * Two experiments side by side (GET compare's answer): number, status, metric and delta,
 * description, rationale and commit in two columns; the change of the metric from the first to
 * the second; every summary key in a table with the rows that differ marked; and the diff between
 * the code the two ran, highlighted as the experiment renderer highlights an experiment's diff
 * (its own renderDiff, so both read alike). Text goes in through textContent only: descriptions,
 * rationales and diffs came from a model and summaries from a training script.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import type { Message } from '@lumino/messaging';
import type { ISignal } from '@lumino/signaling';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { fmtDelta, fmtMetric } from '../../../core/views/bundle';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { measuredRuns } from '../../../core/rule/noise-words';
import type { CompareAnswer } from '../../api/compare';
import { parseDiff } from '../../renderer/diff';
import { el } from '../../renderer/dom';
import type { LineHighlighter } from '../../renderer/experiment-view';
import { deltaQuality, renderDiff } from '../../renderer/experiment-view';
import { lineHighlighter } from '../../renderer/highlight';
import { statusLabel } from '../../renderer/experiment-view';

type Side = 'a' | 'b';

/** A summary value as the table shows it; — for a key the experiment's summary lacks. */
function shown(value: number | string | undefined): string {
  return value === undefined ? '—' : String(value);
}

/** The summary's keys: the metric's first, then the first experiment's in order, then the second's others. */
export function summaryKeys(a: ExperimentRecord, b: ExperimentRecord, metric: string | null): string[] {
  const keys = [...Object.keys(a.summary), ...Object.keys(b.summary)];
  const unique = [...new Set(keys)];
  return metric !== null && unique.includes(metric) ? [metric, ...unique.filter(k => k !== metric)] : unique;
}

/** Each summary key with both values and whether they differ (a key one side lacks differs). */
export function summaryRows(
  a: ExperimentRecord,
  b: ExperimentRecord,
  metric: string | null,
): Array<{ key: string; a: string; b: string; differs: boolean }> {
  return summaryKeys(a, b, metric).map(key => ({
    key,
    a: shown(a.summary[key]),
    b: shown(b.summary[key]),
    differs: a.summary[key] !== b.summary[key],
  }));
}

/** How many runs an experiment's metric is the mean of (1 for a record from before repeats). */
export function meanOf(r: ExperimentRecord): number {
  return r.runs ? measuredRuns(r).length : 1;
}

/** Lines added and removed in a unified diff (its file headers are not counted). */
export function diffCounts(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of parseDiff(diff)) {
    added += line.kind === 'add' ? 1 : 0;
    removed += line.kind === 'del' ? 1 : 0;
  }
  return { added, removed };
}

export class CompareView extends Widget {
  private readonly _closeRequested = new Signal<this, void>(this);
  /** Which load() call is the latest: an older answer landing after it is dropped. */
  private generation = 0;
  private answer: CompareAnswer | null = null;

  constructor(
    private readonly trans: TranslationBundle,
    private readonly highlight: LineHighlighter | null = lineHighlighter(),
  ) {
    super();
    this.addClass('jp-AutoresearchCompare');
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', trans.__('Compare experiments'));
    this.title.label = trans.__('Compare');
  }

  /** Emitted when its Close button is pressed, before it closes (detaches, or leaves its parent). */
  get closeRequested(): ISignal<this, void> {
    return this._closeRequested;
  }

  /** What it shows now; null while loading or after an error. */
  get data(): CompareAnswer | null {
    return this.answer;
  }

  /** Shows `Loading…` until the answer comes (fetchCompare's promise), then it, or the error's message. */
  async load(answer: Promise<CompareAnswer>): Promise<void> {
    const mine = ++this.generation;
    this.answer = null;
    this.message(this.trans.__('Loading the comparison…'), 'loading');
    try {
      const data = await answer;
      if (mine === this.generation) {
        this.setData(data);
      }
    } catch (error) {
      if (mine === this.generation) {
        this.showError(error instanceof Error ? error.message : String(error));
      }
    }
  }

  showError(message: string): void {
    this.answer = null;
    this.message(this.trans.__('The comparison could not be loaded: %1', message), 'error');
  }

  /** Draws a comparison (GET compare's answer). */
  setData(data: CompareAnswer): void {
    ++this.generation;
    this.answer = data;
    const { trans } = this;
    const title = el('div', 'jp-AutoresearchCompare-header');
    const heading = el('h3', 'jp-AutoresearchCompare-title', trans.__('#%1 and #%2', data.a.n, data.b.n));
    title.append(heading, this.closeButton());
    this.node.replaceChildren(
      title,
      this.recordsTable(data),
      this.metricChange(data),
      this.summaryTable(data),
      this.diffSection(data),
    );
    this.node.dataset.a = String(data.a.n);
    this.node.dataset.b = String(data.b.n);
  }

  protected onCloseRequest(msg: Message): void {
    this._closeRequested.emit();
    super.onCloseRequest(msg);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    Signal.clearData(this);
    super.dispose();
  }

  private message(text: string, kind: 'loading' | 'error'): void {
    const line = el('div', `jp-AutoresearchCompare-message jp-mod-${kind}`, text);
    line.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    this.node.replaceChildren(line, this.closeButton());
    delete this.node.dataset.a;
    delete this.node.dataset.b;
  }

  private closeButton(): HTMLButtonElement {
    const button = el('button', 'jp-AutoresearchCompare-close jp-mod-styled', this.trans.__('Close'));
    button.type = 'button';
    button.setAttribute('aria-label', this.trans.__('Close the comparison'));
    button.addEventListener('click', () => this.close());
    return button;
  }

  /** `#3 (best)`, a column's heading. */
  private columnName(data: CompareAnswer, side: Side): string {
    const n = data[side].n;
    return n === data.best ? this.trans.__('#%1 (best)', n) : `#${n}`;
  }

  /** Number, status, metric, delta, description, rationale, commit and the rest, a column each. */
  private recordsTable(data: CompareAnswer): HTMLTableElement {
    const { trans } = this;
    const table = el('table', 'jp-AutoresearchCompare-records');
    table.appendChild(el('caption', 'jp-AutoresearchCompare-srOnly', trans.__('The two experiments')));
    const head = el('tr', '');
    const corner = this.th('col', '');
    corner.appendChild(el('span', 'jp-AutoresearchCompare-srOnly', trans.__('field')));
    head.append(corner, ...(['a', 'b'] as const).map(s => this.th('col', this.columnName(data, s))));
    table.appendChild(el('thead', '')).appendChild(head);
    const body = table.appendChild(el('tbody', ''));
    const direction = data.direction ?? 'lower';
    const row = (key: string, label: string, cell: (r: ExperimentRecord, side: Side) => HTMLElement | string) => {
      const tr = el('tr', '');
      tr.dataset.key = key;
      tr.appendChild(this.th('row', label));
      for (const side of ['a', 'b'] as const) {
        const value = cell(data[side], side);
        const td = el('td', `jp-AutoresearchCompare-${side}`);
        td.append(value);
        tr.appendChild(td);
      }
      body.appendChild(tr);
    };
    row('status', trans.__('status'), r => {
      const badge = el('span', `jp-AutoresearchExperiment-status jp-mod-${r.status}`, statusLabel(r.status, trans));
      badge.dataset.status = r.status;
      return badge;
    });
    // The mean of its runs, said as such: the summary below is one run's.
    row('metric', data.metric ?? trans.__('metric'), r =>
      r.metric !== null && meanOf(r) > 1
        ? trans.__('%1 (mean of %2 runs)', fmtMetric(r.metric), meanOf(r))
        : fmtMetric(r.metric),
    );
    row('delta', trans.__('delta vs the best before'), r => {
      const quality = deltaQuality(r.delta, direction);
      return quality === null
        ? '—'
        : el('span', `jp-AutoresearchExperiment-delta jp-mod-${quality}`, fmtDelta(r.delta));
    });
    row('description', trans.__('description'), r => r.description || '—');
    row('rationale', trans.__('rationale'), r => r.rationale || '—');
    if (data.a.reason || data.b.reason) {
      row('reason', trans.__('reason'), r => r.reason ?? '—');
    }
    row('commit', trans.__('commit'), (r, side) => {
      const cell = el('span', '');
      cell.appendChild(el('code', '', r.commit ? r.commit.slice(0, 7) : '—'));
      if (data.sources[side] === 'journal') {
        cell.appendChild(el('span', 'jp-AutoresearchCompare-source', ` ${trans.__('(recomposed from the journal)')}`));
      }
      return cell;
    });
    row('lines', trans.__('its own change'), r => `+${r.lines_added} −${r.lines_removed}`);
    row('time', trans.__('run time'), r => `${r.timings.run_s.toFixed(1)} s`);
    // Slurm's wait, where either ran as jobs: apart from the run time, which it is not part of.
    if (data.a.timings.queue_s !== undefined || data.b.timings.queue_s !== undefined) {
      row('queue', trans.__('queue time (Slurm)'), r =>
        r.timings.queue_s === undefined ? '—' : `${r.timings.queue_s.toFixed(1)} s`,
      );
    }
    row('memory', trans.__('memory'), r => `${r.memory_gb.toFixed(1)} GB`);
    row('cost', trans.__('cost'), r => (r.cost_usd > 0 ? `$${r.cost_usd.toFixed(4)}` : '—'));
    return table;
  }

  /** `val_bpb from #0 to #3: −0.040000 (better)`; nothing to say when either has no metric. */
  private metricChange(data: CompareAnswer): HTMLElement {
    const { trans } = this;
    const line = el('div', 'jp-AutoresearchCompare-change');
    const { a, b } = data;
    if (a.metric === null || b.metric === null) {
      line.textContent = trans.__('No change of the metric to show: #%1 has no metric.', a.metric === null ? a.n : b.n);
      return line;
    }
    const change = b.metric - a.metric;
    const quality = deltaQuality(change, data.direction ?? 'lower');
    line.append(trans.__('%1 from #%2 to #%3: ', data.metric ?? trans.__('metric'), a.n, b.n));
    const words = { better: trans.__('better'), worse: trans.__('worse'), same: trans.__('the same') };
    line.appendChild(
      el('span', `jp-AutoresearchExperiment-delta jp-mod-${quality}`, `${fmtDelta(change)} (${words[quality!]})`),
    );
    return line;
  }

  private summaryTable(data: CompareAnswer): HTMLElement {
    const { trans } = this;
    const rows = summaryRows(data.a, data.b, data.metric);
    if (rows.length === 0) {
      return el('div', 'jp-AutoresearchCompare-summaryNone', trans.__('Neither experiment printed a summary.'));
    }
    const table = el('table', 'jp-AutoresearchCompare-summary');
    const differ = rows.filter(r => r.differs).length;
    // An experiment's summary is its last measured run's, so its metric is one run's, not the mean above.
    const many = meanOf(data.a) > 1 || meanOf(data.b) > 1;
    table.appendChild(
      el(
        'caption',
        '',
        many
          ? trans._n(
              'Summary keys of each one’s last run (%1 differs)',
              'Summary keys of each one’s last run (%1 differ)',
              differ,
              differ,
            )
          : trans._n('Summary keys (%1 differs)', 'Summary keys (%1 differ)', differ, differ),
      ),
    );
    const head = el('tr', '');
    head.append(
      this.th('col', trans.__('key')),
      this.th('col', this.columnName(data, 'a')),
      this.th('col', this.columnName(data, 'b')),
    );
    table.appendChild(el('thead', '')).appendChild(head);
    const body = table.appendChild(el('tbody', ''));
    for (const r of rows) {
      const tr = el('tr', r.differs ? 'jp-mod-differs' : '');
      tr.dataset.key = r.key;
      const key = this.th('row', r.key);
      if (r.differs) {
        // Seen as a mark and a tint, heard as a word: the colour alone would say nothing to some.
        const mark = el('span', 'jp-AutoresearchCompare-mark', '≠');
        mark.setAttribute('aria-hidden', 'true');
        key.append(' ', mark, el('span', 'jp-AutoresearchCompare-srOnly', trans.__('(differs)')));
      }
      const cell = (side: Side) => el('td', `jp-AutoresearchCompare-${side}`, this.summaryCell(data, side, r));
      tr.append(key, cell('a'), cell('b'));
      body.appendChild(tr);
    }
    return table;
  }

  /** A summary cell; the metric's, where the experiment ran more than once: `this run: 6.219790 · mean of 3 runs: 6.260721`. */
  private summaryCell(data: CompareAnswer, side: Side, row: { key: string; a: string; b: string }): string {
    const r = data[side];
    const value = r.summary[row.key];
    if (row.key !== data.metric || typeof value !== 'number' || r.metric === null || meanOf(r) < 2) {
      return row[side];
    }
    return this.trans.__('this run: %1 · mean of %2 runs: %3', fmtMetric(value), meanOf(r), fmtMetric(r.metric));
  }

  private diffSection(data: CompareAnswer): HTMLElement {
    const { trans } = this;
    const section = el('div', 'jp-AutoresearchCompare-diff');
    const note = (text: string, kind: string) => {
      const p = el('div', `jp-AutoresearchCompare-note jp-mod-${kind}`, text);
      p.setAttribute('role', 'note');
      section.appendChild(p);
    };
    if (data.diff === null) {
      note(trans.__('No diff between the two: %1', data.reason ?? trans.__('the server gave no reason')), 'none');
      return section;
    }
    if (data.reason) {
      note(data.reason, 'source');
    }
    if (data.diff === '') {
      note(trans.__('The editable files (%1) are the same in both.', data.editable.join(', ')), 'same');
      return section;
    }
    const { added, removed } = diffCounts(data.diff);
    const summary = trans.__('diff from #%1 to #%2 (+%3 −%4)', data.a.n, data.b.n, added, removed);
    section.appendChild(renderDiff(data.diff, summary, true, this.highlight));
    if (data.truncated) {
      note(trans.__('The diff is cut short here: it is longer than the server sends.'), 'truncated');
    }
    return section;
  }

  private th(scope: 'col' | 'row', text: string): HTMLTableCellElement {
    const th = el('th', '', text);
    th.scope = scope;
    return th;
  }
}
