/**
 * The two experiments a user has picked to compare (ComparePicks), the checkbox in each
 * experiment's header that picks one (pickCheckbox), and syncPickCheckboxes, which the list calls
 * when the picks change.
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import { Signal, type ISignal } from '@lumino/signaling';
import { el } from '../../renderer/dom';

/**
 * The experiments picked for a comparison: at most two, in the order picked; a third pick lets go
 * of the oldest, so ticking boxes down a list always compares the last two ticked.
 */
export class ComparePicks {
  private _picked: number[] = [];
  private readonly _changed = new Signal<this, void>(this);

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get picked(): readonly number[] {
    return this._picked;
  }

  has(n: number): boolean {
    return this._picked.includes(n);
  }

  /** Picks n, or lets it go when picked already. */
  toggle(n: number): void {
    this._picked = this.has(n) ? this._picked.filter(p => p !== n) : [...this._picked, n].slice(-2);
    this._changed.emit();
  }

  clear(): void {
    if (this._picked.length > 0) {
      this._picked = [];
      this._changed.emit();
    }
  }

  /** The two picked, the older experiment first (the diff reads from it to the newer); null with fewer. */
  pair(): [number, number] | null {
    if (this._picked.length < 2) {
      return null;
    }
    const [x, y] = this._picked;
    return x < y ? [x, y] : [y, x];
  }

  dispose(): void {
    Signal.clearData(this);
  }
}

/** A labelled checkbox that picks experiment n for comparison, for an experiment's header. */
export function pickCheckbox(picks: ComparePicks, n: number, trans: TranslationBundle): HTMLLabelElement {
  const label = el('label', 'jp-AutoresearchCompare-pick');
  const box = el('input', '');
  box.type = 'checkbox';
  box.dataset.compareN = String(n);
  box.checked = picks.has(n);
  // Its own click only: the header it sits in expands or collapses on a click.
  box.addEventListener('click', event => event.stopPropagation());
  box.addEventListener('change', () => picks.toggle(n));
  label.addEventListener('click', event => event.stopPropagation());
  // Heard as `compare #3`: a list of boxes all named `compare` would not say which is which.
  label.append(box, el('span', '', trans.__('compare')), el('span', 'jp-AutoresearchCompare-srOnly', ` #${n}`));
  label.title = trans.__('Pick #%1 to compare (the last two picked are compared)', n);
  return label;
}

/** Ticks exactly the picked ones among the pick checkboxes under root (call it on picks.changed). */
export function syncPickCheckboxes(root: HTMLElement, picks: ComparePicks): void {
  for (const box of Array.from(root.querySelectorAll<HTMLInputElement>('input[data-compare-n]'))) {
    box.checked = picks.has(Number(box.dataset.compareN));
  }
}
