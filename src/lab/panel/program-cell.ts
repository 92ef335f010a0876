/**
 * program.md as a notebook markdown cell: rendered by JupyterLab's markdown renderer,
 * double-click to edit (or Enter on the focused cell, or the *Edit program.md* command),
 * Shift+Enter (or Ctrl+S, or leaving the cell) to render and save the file.
 * The front matter is not part of the cell: it is kept as written and shown above it.
 */
import { Cell, MarkdownCell, MarkdownCellModel } from '@jupyterlab/cells';
import type { IEditorServices } from '@jupyterlab/codeeditor';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { Contents } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Signal, type ISignal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';
import { frontMatterEntries, joinProgram, splitProgram, type IProgramText } from './front-matter';

export class ProgramCell extends Panel {
  readonly cell: MarkdownCell;
  private readonly settingsLine = new Widget();
  private readonly statusLine = new Widget();
  private text: IProgramText = { frontMatter: '', body: '' };
  /** The file's content as last read or written, to tell our own saves from others' edits. */
  private saved = '';
  private readonly _loaded = new Signal<this, IProgramText>(this);

  constructor(
    private readonly contents: Contents.IManager,
    readonly filePath: string,
    rendermime: IRenderMimeRegistry,
    editorServices: IEditorServices,
    private readonly trans: TranslationBundle,
  ) {
    super();
    this.addClass('jp-AutoresearchProgram');
    this.settingsLine.addClass('jp-AutoresearchProgram-settings');
    this.statusLine.addClass('jp-AutoresearchProgram-status');
    const contentFactory = new Cell.ContentFactory({ editorFactory: editorServices.factoryService.newInlineEditor });
    this.cell = new MarkdownCell({
      model: new MarkdownCellModel(),
      rendermime,
      contentFactory,
      placeholder: false,
      emptyPlaceholder: trans.__('program.md is empty: double-click to write what the agent should try.'),
    }).initializeState();
    this.cell.addClass('jp-AutoresearchProgram-cell');
    // Until program.md is first read the cell holds nothing, and its placeholder would say the file is empty.
    this.cell.addClass('jp-mod-loading');
    this.cell.rendered = true;
    // A Tab stop, named for what Enter does there, as a notebook's cell in command mode.
    this.cell.node.tabIndex = 0;
    this.cell.node.setAttribute('role', 'group');
    this.labelCell();
    this.addWidget(this.settingsLine);
    this.addWidget(this.cell);
    this.addWidget(this.statusLine);
    this.cell.node.addEventListener('dblclick', this.startEditing);
    this.cell.node.addEventListener('keydown', this.keydown, true);
    this.cell.node.addEventListener('focusout', this.focusout);
    this.contents.fileChanged.connect(this.onFileChanged, this);
  }

  /** Emitted with the front matter and body after each load from disk. */
  get loaded(): ISignal<this, IProgramText> {
    return this._loaded;
  }

  get frontMatter(): string {
    return this.text.frontMatter;
  }

  /** Whether the cell holds edits not yet written to program.md. */
  get dirty(): boolean {
    return this.cell.model.sharedModel.getSource() !== this.text.body;
  }

  async load(): Promise<void> {
    try {
      const model = await this.contents.get(this.filePath, { content: true, type: 'file', format: 'text' });
      this.apply(String(model.content ?? ''));
      this.setStatus('');
    } catch (error) {
      this.setStatus(this.trans.__('Could not read %1: %2', this.filePath, (error as Error).message), true);
    } finally {
      this.cell.removeClass('jp-mod-loading');
    }
  }

  /** Writes the cell's text to program.md (front matter unchanged); the next proposal reads it. */
  async save(): Promise<void> {
    if (!this.dirty) {
      return;
    }
    const body = this.cell.model.sharedModel.getSource();
    const content = joinProgram({ frontMatter: this.text.frontMatter, body });
    try {
      this.saved = content;
      await this.contents.save(this.filePath, { type: 'file', format: 'text', content });
      this.text = { ...this.text, body };
      this.setStatus(this.trans.__('Saved. The next proposal reads the new program.'));
    } catch (error) {
      this.setStatus(this.trans.__('Could not save %1: %2', this.filePath, (error as Error).message), true);
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.contents.fileChanged.disconnect(this.onFileChanged, this);
    super.dispose();
  }

  private apply(content: string): void {
    this.saved = content;
    this.text = splitProgram(content);
    this.cell.model.sharedModel.setSource(this.text.body);
    if (this.cell.rendered) {
      // Shown now: a markdown cell re-renders a second after its text last changed (its throttle
      // for typing), which left the empty cell's placeholder up for that second on every open.
      this.cell.update();
    }
    const entries = frontMatterEntries(this.text.frontMatter);
    this.settingsLine.node.replaceChildren(
      ...entries.map(([key, value]) => {
        const chip = document.createElement('span');
        chip.className = 'jp-AutoresearchProgram-setting';
        chip.textContent = `${key}: ${value}`;
        return chip;
      }),
    );
    this.settingsLine.setHidden(entries.length === 0);
    this._loaded.emit(this.text);
  }

  /** The cell's name says what the keys do in its state. */
  private labelCell(): void {
    const label = this.cell.rendered
      ? this.trans.__('program.md, press Enter to edit')
      : this.trans.__('program.md, editing: Shift+Enter saves');
    this.cell.node.setAttribute('aria-label', label);
  }

  private setStatus(text: string, error = false): void {
    this.statusLine.node.textContent = text;
    this.statusLine.node.classList.toggle('jp-mod-error', error);
  }

  private onFileChanged(_: Contents.IManager, change: Contents.IChangedArgs): void {
    const path = change.newValue?.path;
    if (change.type !== 'save' || path !== this.filePath) {
      return;
    }
    const content = change.newValue?.content;
    // Someone else saved program.md (the file editor, say): show it unless we are mid-edit.
    if (typeof content === 'string' && content !== this.saved && this.cell.rendered) {
      this.apply(content);
    } else if (content === undefined && this.cell.rendered && !this.dirty) {
      void this.load();
    }
  }

  /** Shows the editor, its caret in it; the cell saves when it renders again. */
  readonly startEditing = (): void => {
    if (this.cell.rendered) {
      this.cell.rendered = false;
      this.cell.editor?.focus();
      this.labelCell();
      this.setStatus(this.trans.__('Editing program.md: Shift+Enter to save and render.'));
    }
  };

  private readonly finish = (): void => {
    this.cell.rendered = true;
    this.labelCell();
    void this.save();
  };

  private readonly keydown = (event: KeyboardEvent): void => {
    const plain = !event.shiftKey && !event.ctrlKey && !event.metaKey && !event.altKey;
    if (this.cell.rendered && event.target === this.cell.node && event.key === 'Enter' && plain) {
      event.preventDefault();
      this.startEditing();
      return;
    }
    const save = (event.key === 's' || event.key === 'S') && (event.ctrlKey || event.metaKey);
    const render = event.key === 'Enter' && (event.shiftKey || event.ctrlKey || event.metaKey);
    if (this.cell.rendered || (!save && !render && event.key !== 'Escape')) {
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    if (save) {
      void this.save();
    } else {
      this.finish();
    }
  };

  private readonly focusout = (event: FocusEvent): void => {
    const next = event.relatedTarget as Node | null;
    if (!this.cell.rendered && !(next && this.cell.node.contains(next))) {
      this.finish();
    }
  };
}
