/**
 * The status bar item: the state and best metric of the Autoresearch panel in focus (or the
 * last one that was), "#N awaiting review" while a proposal waits for its reviewer. A click
 * brings that panel to the front.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { WidgetTracker } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Signal, type ISignal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import type { AutoresearchPanel } from './panel/panel';

export class RunStatusItem extends Widget {
  private panel: AutoresearchPanel | null = null;
  private readonly _activeChanged = new Signal<this, void>(this);

  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly tracker: WidgetTracker<AutoresearchPanel>,
    private readonly trans: TranslationBundle,
  ) {
    super();
    this.addClass('jp-AutoresearchStatus');
    this.node.title = trans.__('Autoresearch: click to show the panel');
    this.node.addEventListener('click', () => {
      if (this.panel) {
        this.app.shell.activateById(this.panel.id);
      }
    });
    tracker.currentChanged.connect((_, panel) => this.followPanel(panel ?? this.panel));
    tracker.widgetAdded.connect((_, panel) => {
      panel.model.changed.connect(() => panel === this.panel && this.refresh());
      panel.disposed.connect(() => {
        this.followPanel(this.panel === panel ? null : this.panel);
        this._activeChanged.emit();
      });
      this._activeChanged.emit();
    });
    this.followPanel(tracker.currentWidget);
  }

  /** Emitted when a panel opens or closes (the item shows only while one is open). */
  get activeChanged(): ISignal<this, void> {
    return this._activeChanged;
  }

  /** Whether the item has anything to show (a panel is open). */
  get active(): boolean {
    return this.tracker.size > 0;
  }

  private followPanel(panel: AutoresearchPanel | null): void {
    this.panel = panel && !panel.isDisposed ? panel : this.tracker.currentWidget;
    this.refresh();
  }

  private refresh(): void {
    const panel = this.panel;
    this.node.textContent = panel ? this.trans.__('Autoresearch: %1', panel.statusText()) : '';
    const m = panel?.model;
    this.node.dataset.state = m ? (m.pending ? 'awaiting-review' : m.state) : '';
  }
}
