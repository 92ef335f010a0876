/**
 * The panel's rendermime, whose LaTeX typesetter is called only on what may hold maths.
 *
 * JupyterLab's markdown renderer typesets every render, and MathJax's first typeset on a page
 * loads and starts all of MathJax (a large script and a noticeable stretch of the main thread)
 * even for text without a formula, which most program.md files and proposals are.
 * That cost landed on the panel's first open, ahead of the run's replay. MathJax, as JupyterLab
 * configures it, finds maths only between `$…$`, `$$…$$`, `\(…\)`, `\[…\]` or in a
 * `\begin{…}` environment: text with none of those is left as MathJax would leave it.
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

/** What opens maths for JupyterLab's MathJax (its inlineMath, displayMath and processEnvironments). */
const MATH_OPENER = /\$|\\\(|\\\[|\\begin\{/;

/** Whether MathJax, configured as JupyterLab does, could find maths in this text. */
export function mayHoldMath(text: string): boolean {
  return MATH_OPENER.test(text);
}

/** A typesetter that hands `typesetter` only elements whose text may hold maths. */
export function lazyTypesetter(typesetter: IRenderMime.ILatexTypesetter): IRenderMime.ILatexTypesetter {
  return {
    typeset: element => (mayHoldMath(element.textContent ?? '') ? typesetter.typeset(element) : undefined),
  };
}

/** `rendermime` with its typesetter (if it has one) made lazy (lazyTypesetter). */
export function withLazyMath(rendermime: IRenderMimeRegistry): IRenderMimeRegistry {
  const typesetter = rendermime.latexTypesetter;
  return typesetter ? rendermime.clone({ latexTypesetter: lazyTypesetter(typesetter) }) : rendermime;
}
