/**
 * The *Transfer study* output of the run shown: whether a study runs or failed, its summary line,
 * the table of kept changes (the gain at the search scale and at the larger one, each ± its
 * standard error, the verdict, the ablation when measured) and the two-series chart, the
 * Vega-Lite spec of src/core/views/transfer-view.ts rendered by JupyterLab's own Vega renderer as the
 * progress chart is. Hidden for a run with no study. Text goes in through textContent only.
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { MimeModel } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { VEGALITE_MIME } from '../../../core/views/chart';
import type { TransferSummary } from '../../../core/study/transfer';
import { transferChartSpec, transferColumns, transferRows } from '../../../core/views/transfer-view';
import { el } from '../../renderer/dom';
import type { TransferController } from './transfer-controller';

/** The table of a study's kept changes, as a detached element. */
export function transferTable(s: TransferSummary): HTMLTableElement {
  const table = el('table', 'jp-AutoresearchTransfer-table');
  const head = el('tr', '');
  transferColumns(s).forEach(title => head.appendChild(el('th', '', title)));
  table.appendChild(el('thead', '')).appendChild(head);
  const body = table.appendChild(el('tbody', ''));
  const ablate = s.changes.some(c => c.ablate);
  for (const row of transferRows(s)) {
    const tr = el('tr', `jp-mod-${row.verdict}`);
    tr.dataset.n = String(row.n);
    tr.append(el('td', '', `#${row.n}`), el('td', '', ''), el('td', '', row.description));
    tr.children[1].appendChild(el('code', '', row.commit));
    tr.append(
      el('td', 'jp-AutoresearchTransfer-delta', row.search),
      el('td', 'jp-AutoresearchTransfer-delta', row.transfer),
    );
    const verdict = el('td', '');
    verdict.appendChild(el('span', `jp-AutoresearchTransfer-verdict jp-mod-${row.verdict}`, row.verdict));
    tr.appendChild(verdict);
    if (ablate) {
      tr.append(
        el('td', 'jp-AutoresearchTransfer-delta', row.ablation ?? '—'),
        el('td', '', row.ablate_verdict ?? '—'),
      );
    }
    body.appendChild(tr);
  }
  return table;
}

export class TransferSection extends Widget {
  private renderer: IRenderMime.IRenderer | null = null;
  private drawn: TransferSummary | null = null;
  readonly status: HTMLElement;
  readonly summaryLine: HTMLElement;
  private readonly tableHost: HTMLElement;
  private readonly chartHost: HTMLElement;

  constructor(
    private readonly controller: TransferController,
    private readonly rendermime: IRenderMimeRegistry,
    private readonly trans: TranslationBundle,
  ) {
    super();
    this.addClass('jp-AutoresearchTransfer');
    const title = el('div', 'jp-AutoresearchTransfer-title', trans.__('Transfer study'));
    this.status = el('div', 'jp-AutoresearchTransfer-status');
    this.summaryLine = el('div', 'jp-AutoresearchTransfer-summary');
    this.tableHost = el('div', 'jp-AutoresearchTransfer-tableHost jp-OutputArea-output');
    this.chartHost = el('div', 'jp-AutoresearchTransfer-chart jp-OutputArea-output');
    this.node.append(title, this.status, this.summaryLine, this.tableHost, this.chartHost);
    controller.changed.connect(this.update, this);
    this.update();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.controller.changed.disconnect(this.update, this);
    this.renderer?.dispose();
    super.dispose();
  }

  /** Shows the study's state; redraws the table and chart when the summary changed. */
  update(): void {
    const state = this.controller.state;
    const summary = state?.summary ?? null;
    this.setHidden(!state || (!summary && !state.running && !state.failure));
    if (!state) {
      return;
    }
    const { trans } = this;
    const status = state.running
      ? trans.__('Replaying the kept commits at the larger scale…')
      : state.failure
        ? trans.__('The last study failed: %1', state.failure.message)
        : summary && !summary.summary.complete
          ? trans.__('Incomplete: Transfer Study… again continues where it stopped.')
          : '';
    this.status.textContent = status;
    this.status.hidden = !status;
    this.status.classList.toggle('jp-mod-error', !state.running && !!state.failure);
    this.node.dataset.running = String(state.running);
    if (summary && JSON.stringify(summary) !== JSON.stringify(this.drawn)) {
      this.drawn = summary;
      this.summaryLine.textContent = summary.summary.line;
      this.tableHost.replaceChildren(transferTable(summary));
      void this.drawChart(summary);
    }
    this.summaryLine.hidden = this.tableHost.hidden = !summary;
    this.chartHost.hidden = !summary || !summary.changes.length;
  }

  protected onAfterAttach(): void {
    if (this.drawn) {
      void this.drawChart(this.drawn);
    }
  }

  private async drawChart(summary: TransferSummary): Promise<void> {
    // Widget.attach wants a host in the document: a summary read before that is drawn on attach.
    if (!this.rendermime.mimeTypes.includes(VEGALITE_MIME) || !summary.changes.length || !this.chartHost.isConnected) {
      return;
    }
    if (!this.renderer) {
      this.renderer = this.rendermime.createRenderer(VEGALITE_MIME);
      Widget.attach(this.renderer, this.chartHost);
    }
    await this.renderer.renderModel(new MimeModel({ data: { [VEGALITE_MIME]: transferChartSpec(summary) as never } }));
  }
}
