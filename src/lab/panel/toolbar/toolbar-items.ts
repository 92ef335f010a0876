/**
 * The DOM of the panel's toolbar items, made for keyboards and screen readers: a control named by
 * its item's visible label, items shown and hidden the way JupyterLab's toolbar keeps count of,
 * and text fields whose caret keys stay theirs.
 */
import { Widget } from '@lumino/widgets';

/** Ids for label-control pairs, unique in the page (several panels each have a toolbar). */
let lastId = 0;

/**
 * A form control. Its name comes from its toolbar item's <label> (item()) or, for a button, its
 * text; its title, set later, is the longer description a screen reader reads after the name.
 */
export function control<K extends keyof HTMLElementTagNameMap>(tag: K, className: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  return node;
}

/** One labelled control as a toolbar item: the label names the control (for/id), and a click on it focuses it. */
export function item(label: string, node: HTMLElement, className: string): Widget {
  const widget = new Widget();
  widget.addClass('jp-AutoresearchToolbar-item');
  widget.addClass(className);
  const text = document.createElement('label');
  text.textContent = label;
  node.id ||= `jp-AutoresearchToolbar-control-${++lastId}`;
  text.htmlFor = node.id;
  widget.node.append(text, node);
  return widget;
}

/**
 * Shows or hides a toolbar item. The `hidden` attribute, beside the class the styles and tests
 * know: JupyterLab's toolbar (jp-toolbar, the ARIA toolbar pattern: one Tab stop, the arrow keys
 * between its controls) recounts its controls when a `hidden` or `disabled` attribute changes, and
 * a control it did not count can be neither arrowed to nor tabbed into (its focus handler sends
 * the focus back to the control it counts as current).
 */
export function showItem(node: HTMLElement | null | undefined, shown: boolean): void {
  if (node) {
    node.classList.toggle('jp-mod-hidden', !shown);
    node.hidden = !shown;
  }
}

/**
 * Lets the arrow keys move the caret in a text field of the toolbar, and move on to the next
 * control only from the field's end (ArrowRight) or start (ArrowLeft): the toolbar would
 * otherwise take every ArrowLeft and ArrowRight to move between its controls.
 */
export function keepCaretKeys(input: HTMLInputElement): void {
  input.addEventListener('keydown', event => {
    if ((event.key !== 'ArrowLeft' && event.key !== 'ArrowRight') || input.selectionStart === null) {
      return;
    }
    const atStart = input.selectionStart === 0 && input.selectionEnd === 0;
    const atEnd = input.selectionStart === input.value.length;
    if (event.shiftKey || (event.key === 'ArrowLeft' ? !atStart : !atEnd)) {
      event.stopPropagation();
    }
  });
}
