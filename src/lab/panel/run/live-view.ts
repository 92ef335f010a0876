/**
 * The experiments in flight: for each, its number, worker and description, and for the one the
 * stream follows, the training log as it is written (the last lines, scrolled to the end).
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import type { RunModel } from './run-model';
import { phaseWords } from './state-words';

export class LiveView extends Widget {
  private readonly list: HTMLElement;
  private readonly log: HTMLPreElement;

  constructor(
    private readonly model: RunModel,
    private readonly trans: TranslationBundle,
  ) {
    super();
    this.addClass('jp-AutoresearchLive');
    this.list = document.createElement('div');
    this.list.className = 'jp-AutoresearchLive-list';
    this.log = document.createElement('pre');
    this.log.className = 'jp-AutoresearchLive-log jp-OutputArea-output';
    this.node.append(this.list, this.log);
    model.changed.connect(this.update, this);
    model.logChanged.connect(this.updateLog, this);
    this.update();
  }

  update(): void {
    const starts = [...this.model.inFlight.values()].sort((a, b) => a.n - b.n);
    const pending = this.model.pending?.n ?? null;
    this.setHidden(starts.length === 0);
    this.list.replaceChildren(
      ...starts.map(start => {
        const row = document.createElement('div');
        row.className = 'jp-AutoresearchLive-item';
        row.dataset.n = String(start.n);
        const who = start.worker ? this.trans.__('worker %1', start.worker) : '';
        const head = document.createElement('span');
        head.className = 'jp-AutoresearchLive-number';
        head.textContent = `#${start.n}`;
        const badge = document.createElement('span');
        badge.className = 'jp-AutoresearchLive-badge';
        // Slurm holds its run: not running yet, so no log either; the job id finds it in squeue.
        const queued = start.n !== pending && start.phase?.name === 'queue';
        badge.textContent =
          start.n === pending
            ? this.trans.__('awaiting review')
            : queued
              ? this.trans.__('queued')
              : this.trans.__('running');
        badge.title = queued ? phaseWords(start, this.trans) : '';
        badge.classList.toggle('jp-mod-pending', start.n === pending);
        badge.classList.toggle('jp-mod-queued', queued);
        const text = document.createElement('span');
        text.className = 'jp-AutoresearchLive-description';
        text.textContent = [who, start.description].filter(Boolean).join(' · ');
        row.append(head, badge, text);
        return row;
      }),
    );
    this.updateLog();
  }

  private updateLog(): void {
    const lines = this.model.liveLog;
    const n = this.model.liveLogN;
    const hidden = n === null || !this.model.inFlight.has(n) || this.model.pending?.n === n;
    const text = lines.join('\n');
    // Only a change is written and scrolled: reading scrollHeight lays the whole panel out, which
    // on a long run's open (a log signal per replayed batch) cost more than the list itself.
    if (text === this.log.textContent && hidden === this.log.hidden) {
      return;
    }
    this.log.hidden = hidden;
    this.log.textContent = text;
    if (!hidden) {
      this.log.scrollTop = this.log.scrollHeight;
    }
  }

  dispose(): void {
    this.model.changed.disconnect(this.update, this);
    this.model.logChanged.disconnect(this.updateLog, this);
    super.dispose();
  }
}
