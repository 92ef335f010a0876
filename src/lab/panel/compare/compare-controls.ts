/**
 * Filter and Compare in the panel: the filter bar above the experiment list (which hides what
 * the filter leaves out, the chart following), a *compare* pick on each rendered experiment, and
 * the button that opens the comparison of the two picked (or of one against the best) above
 * the list. The parts are experiment-filter.ts and compare-view.ts; this file only joins them.
 */
import type { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Panel } from '@lumino/widgets';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { fetchCompare, type CompareSide } from '../../api/compare';
import { CompareView } from './compare-view';
import { ComparePicks, pickCheckbox, syncPickCheckboxes } from './compare-picks';
import { ExperimentFilter, ExperimentFilterBar } from '../list/experiment-filter';

export interface ICompareControlsOptions {
  trans: TranslationBundle;
  settings: ServerConnection.ISettings;
  /** The workspace and the run shown, which a comparison is of. */
  path: string;
  tag: () => string | null;
  /** The node under which the pick checkboxes are (the experiment list's). */
  listNode: () => HTMLElement;
}

export class CompareControls {
  readonly filter = new ExperimentFilter();
  readonly picks = new ComparePicks();
  readonly filterBar: ExperimentFilterBar;
  /** Where a comparison shows, above the list; empty (and hidden) until one is asked for. */
  readonly slot = new Panel();
  readonly compareButton = document.createElement('button');
  private view: CompareView | null = null;

  constructor(private readonly opts: ICompareControlsOptions) {
    const { trans } = opts;
    this.filterBar = new ExperimentFilterBar(this.filter, trans);
    this.slot.addClass('jp-AutoresearchCompareSlot');
    this.slot.hide();
    const button = this.compareButton;
    button.type = 'button';
    button.className = 'jp-Button jp-mod-styled jp-mod-reject jp-AutoresearchCompare-open';
    button.addEventListener('click', () => this.open());
    this.filterBar.node.appendChild(button);
    this.picks.changed.connect(() => {
      syncPickCheckboxes(this.opts.listNode(), this.picks);
      this.renderButton();
    });
    this.renderButton();
  }

  /** Adds the compare pick to a rendered experiment (beside its header, not in it: a checkbox inside a button is no control). */
  decorate(node: HTMLElement, record: ExperimentRecord): void {
    if (!node.querySelector('.jp-AutoresearchCompare-pick')) {
      node.insertBefore(pickCheckbox(this.picks, record.n, this.opts.trans), node.firstChild);
    }
  }

  /** The sides compared: the two picked, older first, or the one picked against the best. */
  sides(): [CompareSide, CompareSide] | null {
    const pair = this.picks.pair();
    if (pair) {
      return pair;
    }
    const [one] = this.picks.picked;
    return one === undefined ? null : [one, 'best'];
  }

  /** Opens the comparison of `sides` (default: what is picked) above the list. */
  open(sides = this.sides()): void {
    const tag = this.opts.tag();
    if (!sides || tag === null) {
      return;
    }
    this.view?.dispose();
    const view = (this.view = new CompareView(this.opts.trans));
    view.closeRequested.connect(() => {
      this.slot.hide();
      this.view = null;
      // Closed: removed from the slot by Lumino after this signal; disposed on the next turn.
      requestAnimationFrame(() => view.dispose());
    });
    this.slot.addWidget(view);
    this.slot.show();
    void view.load(fetchCompare(this.opts.settings, this.opts.path, tag, sides[0], sides[1]));
    view.node.scrollIntoView({ block: 'nearest' });
  }

  /** The panel follows another run: its picks and comparison were of the old one. */
  reset(): void {
    this.picks.clear();
    this.view?.dispose();
    this.view = null;
    this.slot.hide();
  }

  setRecords(records: readonly ExperimentRecord[]): void {
    this.filterBar.setRecords(records);
  }

  dispose(): void {
    this.view?.dispose();
    this.picks.dispose();
    this.filter.dispose();
    this.filterBar.dispose();
  }

  private renderButton(): void {
    const { trans } = this.opts;
    const sides = this.sides();
    const button = this.compareButton;
    button.disabled = sides === null;
    button.textContent =
      sides === null
        ? trans.__('Compare')
        : sides[1] === 'best'
          ? trans.__('Compare #%1 with the best', sides[0])
          : trans.__('Compare #%1 and #%2', sides[0], sides[1]);
    button.title = trans.__(
      'Tick “compare” on one experiment (against the best) or two, then compare them side by side',
    );
  }
}
