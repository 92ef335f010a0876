/**
 * The kernels of the open notebooks, for the panels' kernel pickers: each notebook with a running
 * kernel, its kernel's id and kernelspec, the most recently active first. It follows JupyterLab's
 * notebook tracker: a notebook opened, closed, renamed, brought to the front or given another
 * kernel changes the list. One instance serves every panel (the plugin makes it).
 */
import { PathExt } from '@jupyterlab/coreutils';
import type { IDisposable } from '@lumino/disposable';
import { Signal, type ISignal } from '@lumino/signaling';

/** An open notebook with a running kernel. */
export interface INotebookKernel {
  /** The notebook's path, relative to the server root. */
  path: string;
  /** Its file name, as the picker shows it. */
  name: string;
  /** Its kernel's id (what `POST runs {kernel_id}` attaches to). */
  kernelId: string;
  /** Its kernel's kernelspec (what a fresh kernel of the same environment is started from). */
  specName: string;
}

/* eslint-disable @typescript-eslint/no-explicit-any -- the senders' types are the tracker's and the panels' own */
/** What the list reads of a notebook panel (a NotebookPanel has it). */
export interface INotebookLike {
  readonly isDisposed: boolean;
  readonly disposed: ISignal<any, void>;
  readonly context: { readonly path: string; readonly pathChanged: ISignal<any, string> };
  readonly sessionContext: {
    readonly session: { readonly kernel: { readonly id: string; readonly name: string } | null } | null;
    readonly kernelChanged: ISignal<any, unknown>;
    readonly sessionChanged: ISignal<any, unknown>;
  };
}

/** What the list reads of the notebook tracker (INotebookTracker has it). */
export interface INotebookSource {
  readonly currentWidget: INotebookLike | null;
  readonly currentChanged: ISignal<any, INotebookLike | null>;
  readonly widgetAdded: ISignal<any, INotebookLike>;
  forEach(fn: (widget: INotebookLike) => void): void;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

/** The kernel a notebook runs now, or null (no kernel, or none started yet). */
export function notebookKernel(panel: INotebookLike): INotebookKernel | null {
  const kernel = panel.sessionContext.session?.kernel;
  if (panel.isDisposed || !kernel) {
    return null;
  }
  const path = panel.context.path;
  return { path, name: PathExt.basename(path), kernelId: kernel.id, specName: kernel.name };
}

export class NotebookKernels implements IDisposable {
  /** The tracked notebooks, most recently active first. */
  private order: INotebookLike[] = [];
  private key = '';
  private _isDisposed = false;
  private readonly _changed = new Signal<this, readonly INotebookKernel[]>(this);

  /** Without a tracker (JupyterLab without notebooks) the list stays empty. */
  constructor(source: INotebookSource | null) {
    if (!source) {
      return;
    }
    source.forEach(panel => this.track(panel));
    if (source.currentWidget) {
      this.bringToFront(source.currentWidget);
    }
    source.widgetAdded.connect((_, panel) => this.track(panel), this);
    source.currentChanged.connect((_, panel) => panel && this.bringToFront(panel), this);
    this.key = this.keyOf();
  }

  /** The list changed (a notebook, its kernel, its path or which is in front). */
  get changed(): ISignal<this, readonly INotebookKernel[]> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._isDisposed;
  }

  /** The open notebooks with a running kernel, the most recently active first. */
  get notebooks(): INotebookKernel[] {
    return this.order.map(notebookKernel).filter((k): k is INotebookKernel => k !== null);
  }

  /** The notebook at `path` with its kernel, if it is open and has one. */
  find(path: string): INotebookKernel | null {
    return this.notebooks.find(k => k.path === path) ?? null;
  }

  dispose(): void {
    if (this._isDisposed) {
      return;
    }
    this._isDisposed = true;
    this.order = [];
    Signal.clearData(this);
  }

  private track(panel: INotebookLike): void {
    if (this.order.includes(panel) || panel.isDisposed) {
      return;
    }
    this.order.push(panel);
    const check = () => this.check();
    // Connected with `this`: dispose() (Signal.clearData) disconnects them all.
    panel.sessionContext.kernelChanged.connect(check, this);
    panel.sessionContext.sessionChanged.connect(check, this);
    panel.context.pathChanged.connect(check, this);
    panel.disposed.connect(() => {
      this.order = this.order.filter(p => p !== panel);
      this.check();
    }, this);
    this.check();
  }

  private bringToFront(panel: INotebookLike): void {
    this.track(panel);
    this.order = [panel, ...this.order.filter(p => p !== panel)];
    this.check();
  }

  /** Emits when what the pickers show differs from the last time. */
  private check(): void {
    const key = this.keyOf();
    if (key !== this.key) {
      this.key = key;
      this._changed.emit(this.notebooks);
    }
  }

  private keyOf(): string {
    return JSON.stringify(this.notebooks);
  }
}
