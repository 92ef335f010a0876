/**
 * Edit of a pending proposal: each proposed editable file in a JupyterLab code editor (the
 * editor services the panel received, so the user's editor settings and theme apply), one
 * section a file, opened with the proposal's text. What the reviewer changed is what goes back.
 */
import { CodeEditor, CodeEditorWrapper, type IEditorServices } from '@jupyterlab/codeeditor';
import { Panel, Widget } from '@lumino/widgets';
import type { PendingReview } from '../../../core/step-mode/review';

/**
 * The first line (0-based, in the proposed file) that the proposal adds or changes in `path`,
 * from its unified diff; null when the diff does not touch the file.
 */
export function firstChangedLine(diff: string, path: string): number | null {
  let inFile = false;
  let line = 0;
  for (const text of diff.split('\n')) {
    if (text.startsWith('+++ ')) {
      inFile = text.slice(4).replace(/^b\//, '') === path;
    } else if (inFile && text.startsWith('@@')) {
      line = Number(/\+(\d+)/.exec(text)?.[1] ?? 1) - 1;
    } else if (inFile && (text.startsWith('+') || text.startsWith('-'))) {
      return line;
    } else if (inFile && text.startsWith(' ')) {
      line += 1;
    }
  }
  return null;
}

interface IFileEditor {
  path: string;
  proposed: string;
  wrapper: CodeEditorWrapper;
  /** Where the proposal changed it, to open the editor there. */
  first: number | null;
}

export class ReviewEditor extends Panel {
  private editors: IFileEditor[] = [];
  /** The proposal whose files are open. */
  private openFor: number | null = null;

  constructor(private readonly editorServices: IEditorServices) {
    super();
    this.addClass('jp-AutoresearchReviewEditor');
  }

  /** The proposal the editors hold, if any. */
  get proposalN(): number | null {
    return this.openFor;
  }

  /** Opens the proposal's editable files; a proposal already open keeps the reviewer's text. */
  open(p: PendingReview): void {
    if (this.openFor === p.n) {
      return;
    }
    this.close();
    this.openFor = p.n;
    const paths = p.editable.filter(f => f in p.files);
    for (const path of paths.length ? paths : Object.keys(p.files)) {
      const title = new Widget();
      title.addClass('jp-AutoresearchReviewEditor-file');
      title.node.textContent = path;
      const model = new CodeEditor.Model({
        mimeType: this.editorServices.mimeTypeService.getMimeTypeByFilePath(path),
      });
      model.sharedModel.setSource(p.files[path]);
      const wrapper = new CodeEditorWrapper({
        factory: this.editorServices.factoryService.newInlineEditor,
        model,
        editorOptions: { config: { lineNumbers: true } },
      });
      wrapper.addClass('jp-AutoresearchReviewEditor-editor');
      wrapper.node.dataset.path = path;
      this.addWidget(title);
      this.addWidget(wrapper);
      this.editors.push({ path, proposed: p.files[path], wrapper, first: firstChangedLine(p.diff, path) });
    }
  }

  /** The files the reviewer changed, whole (path → text); empty when none was. */
  changedFiles(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const e of this.editors) {
      const text = e.wrapper.model.sharedModel.getSource();
      if (text !== e.proposed) {
        out[e.path] = text;
      }
    }
    return out;
  }

  /** Focuses the first file's editor, at the first line the proposal changed. */
  focus(): void {
    const first = this.editors.find(e => e.first !== null) ?? this.editors[0];
    if (!first) {
      return;
    }
    const editor = first.wrapper.editor;
    editor.focus();
    if (first.first !== null) {
      const position = { line: first.first, column: 0 };
      editor.setCursorPosition(position);
      editor.revealPosition(position);
    }
  }

  /** Closes every editor. */
  close(): void {
    for (const e of this.editors) {
      const model = e.wrapper.model;
      e.wrapper.dispose();
      model.dispose();
    }
    for (const w of [...this.widgets]) {
      w.dispose();
    }
    this.editors = [];
    this.openFor = null;
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.close();
    }
    super.dispose();
  }
}
