/**
 * The panel's *Research notes*: the latest version of the notes the model rewrites every 25
 * experiments (src/engine/proposers/claude/notes.ts), with the experiment whose proposal wrote
 * them and how far they reach. They come in the experiments' records (a light replay keeps the
 * meta's notes: src/core/journal/light-record.ts). A model's text, which a run could plant in a
 * journal: it goes in through textContent only, never as markup. Hidden while a run has none.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import type { ExperimentRecord } from '../../core/journal/journal';
import { latestNotes, type NotesVersion } from '../../core/journal/research-notes';
import { el } from '../renderer/dom';

export class NotesSection extends Widget {
  private latest: NotesVersion | null = null;
  private readonly details: HTMLDetailsElement;
  private readonly summary: HTMLElement;
  private readonly text: HTMLElement;

  constructor(private readonly trans: TranslationBundle) {
    super();
    this.addClass('jp-AutoresearchNotes');
    this.details = el('details', 'jp-AutoresearchNotes-details');
    this.summary = el('summary', 'jp-AutoresearchNotes-title');
    this.text = el('div', 'jp-AutoresearchNotes-text');
    this.details.append(this.summary, this.text);
    this.node.appendChild(this.details);
    this.setHidden(true);
  }

  /** The notes shown: the latest version among the experiments added, or null. */
  get notes(): NotesVersion | null {
    return this.latest;
  }

  /** Takes experiments as they come (the replay's batches, then each one live): newer notes replace the shown ones. */
  add(records: readonly ExperimentRecord[]): void {
    const v = latestNotes(records);
    if (v && (!this.latest || v.through >= this.latest.through)) {
      this.latest = v;
      this.render();
    }
  }

  /** Forgets the notes (another run is shown). */
  clear(): void {
    this.latest = null;
    this.render();
  }

  private render(): void {
    const v = this.latest;
    this.setHidden(v === null);
    this.node.dataset.through = v ? String(v.through) : '';
    if (!v) {
      this.summary.textContent = '';
      this.text.textContent = '';
      return;
    }
    this.summary.textContent = this.trans.__(
      "The model's research notes, written by the proposal of #%1 after #%2 had finished",
      v.n,
      v.through,
    );
    this.text.textContent = v.text;
  }
}
