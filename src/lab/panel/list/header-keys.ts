/**
 * The experiment list's headers as buttons, apart from its rendering: a click, Enter or Space
 * toggles one, ArrowRight and ArrowLeft expand and collapse it, ArrowUp, ArrowDown, Home and End
 * move to another header, passing over the items a filter hides. One delegated listener of each
 * kind serves every header, so a long run costs no listener per experiment.
 */

const HEADER = '.jp-AutoresearchExperiment-header';
const ITEM = '.jp-AutoresearchExperimentList-item';

/**
 * The list item whose rendered header the event is on, if any; with `headerOnly`, the header
 * itself and not a control inside it (a key on a button in the header is the button's).
 */
export function itemNodeOfHeader(
  target: EventTarget | null,
  headerOnly: boolean,
  list: HTMLElement,
): HTMLElement | null {
  const el = target as HTMLElement | null;
  const header = el?.closest?.(HEADER);
  if (!header || (headerOnly && header !== el)) {
    return null;
  }
  const node = header.closest(ITEM);
  return node && list.contains(node) ? (node as HTMLElement) : null;
}

/**
 * The node a key moves to from `node`: the next, the previous, the first (after `first`) or the
 * last (`last`) shown. A block on the way is put in as items first (`unblock` returns their nodes,
 * or null for a node that is no block).
 */
export function neighbourNode(
  node: Element,
  key: string,
  first: Element,
  last: Element | null,
  unblock: (node: Element) => HTMLElement[] | null,
): Element | null {
  const forward = key === 'ArrowDown' || key === 'Home';
  let next: Element | null =
    key === 'ArrowDown'
      ? node.nextElementSibling
      : key === 'ArrowUp'
        ? node.previousElementSibling
        : key === 'Home'
          ? first.nextElementSibling
          : last;
  // Items hidden (a filter's) are passed over: the focus goes where the user can see.
  while (next) {
    const nodes = unblock(next);
    if (nodes) {
      next = (forward ? nodes[0] : nodes[nodes.length - 1]) ?? null;
      continue;
    }
    if (!(next as HTMLElement).hidden) {
      break;
    }
    next = forward ? next.nextElementSibling : next.previousElementSibling;
  }
  return next;
}

/**
 * What a key on a header does: Enter and Space toggle it, ArrowRight and ArrowLeft expand and
 * collapse it, ArrowUp, ArrowDown, Home and End move to another header; null for any other key
 * or any key with a modifier (the browser's and JupyterLab's).
 */
export function headerKeyAction(event: KeyboardEvent): 'toggle' | 'expand' | 'collapse' | 'move' | null {
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) {
    return null;
  }
  switch (event.key) {
    case 'Enter':
    case ' ':
      return 'toggle';
    case 'ArrowRight':
      return 'expand';
    case 'ArrowLeft':
      return 'collapse';
    case 'ArrowDown':
    case 'ArrowUp':
    case 'Home':
    case 'End':
      return 'move';
    default:
      return null;
  }
}

/** What the list does for a header's item node. */
export interface IHeaderActions {
  toggle(node: HTMLElement): void;
  expand(node: HTMLElement, expanded: boolean): void;
  /** Moves the focus from this item as `key` says. */
  move(node: HTMLElement, key: string): void;
}

/** Listens to clicks and keys on the headers of the items under `list`. */
export function listenToHeaders(list: HTMLElement, actions: IHeaderActions): void {
  list.addEventListener('click', (event: MouseEvent) => {
    const node = itemNodeOfHeader(event.target, false, list);
    if (node) {
      actions.toggle(node);
    }
  });
  list.addEventListener('keydown', (event: KeyboardEvent) => {
    const node = itemNodeOfHeader(event.target, true, list);
    const action = node ? headerKeyAction(event) : null;
    if (!node || !action) {
      return;
    }
    if (action === 'toggle') {
      actions.toggle(node);
    } else if (action === 'expand' || action === 'collapse') {
      actions.expand(node, action === 'expand');
    } else {
      actions.move(node, event.key);
    }
    // Space and the arrows would scroll the panel as well.
    event.preventDefault();
    event.stopPropagation();
  });
}
