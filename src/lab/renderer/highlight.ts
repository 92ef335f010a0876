/**
 * An optional Python highlighter for diff lines. A MIME extension gets no plugin tokens, so the
 * main plugin, which can ask for JupyterLab's CodeMirror language registry, hands one over
 * here; both modules live in this extension's one webpack container and share this state.
 */
import type { LineHighlighter } from './experiment-view';

let current: LineHighlighter | null = null;

/** Sets (or clears, with null) the highlighter that renderers created from now on use. */
export function setLineHighlighter(highlighter: LineHighlighter | null): void {
  current = highlighter;
}

/** The highlighter set by the main plugin, if any. */
export function lineHighlighter(): LineHighlighter | null {
  return current;
}
