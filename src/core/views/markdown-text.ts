/**
 * Markdown that no notebook renderer reads as maths. JupyterLab, nbconvert and GitHub each find
 * TeX between dollar signs, and each at a different stage:
 *
 * - JupyterLab hides `$…$` from its markdown parser (rendermime's removeMath), renders the rest
 *   with marked, then has MathJax typeset the whole rendered element, scanning its DOM text for
 *   `$…$` within one element's run of text. `\$` is no escape there: marked turns it into a plain
 *   `$`, which MathJax then pairs with the next one (jupyterlab/jupyterlab#8645, #9033).
 * - nbconvert's mistune pairs `$…$` in the markdown source, across inline HTML, then MathJax 2
 *   typesets the page's text, again within a run of text.
 * - GitHub pairs `$…$` in the markdown source; its docs write a literal dollar as `<span>$</span>`.
 *
 * So a literal dollar is written `<span>&#36;</span>`: the entity is no `$` to any source-level
 * parser (removeMath, mistune, GitHub, markdown-it), and the element around it cuts MathJax's run
 * of text, so the `$` it shows pairs with nothing. All three show a plain `$` (ui-tests/
 * notebook-math.spec.ts renders it in JupyterLab; test/python/test_notebook_math.py in nbconvert).
 */

/** A dollar sign as markdown that every renderer shows as text (see above). */
export const LITERAL_DOLLAR = '<span>&#36;</span>';

/** Inline code spans: a run of backticks, the shortest text, the same run again (CommonMark). */
const CODE_SPAN = /(`+)[\s\S]*?(?<!`)\1(?!`)/g;

/**
 * Markdown prose with each `$` outside inline code written as LITERAL_DOLLAR. A `$` inside a code
 * span stays: code is never typeset, and markup there would show as text.
 */
export function literalDollars(markdown: string): string {
  let out = '';
  let from = 0;
  for (const m of markdown.matchAll(CODE_SPAN)) {
    out += markdown.slice(from, m.index).replace(/\$/g, LITERAL_DOLLAR) + m[0];
    from = m.index + m[0].length;
  }
  return out + markdown.slice(from).replace(/\$/g, LITERAL_DOLLAR);
}

/** A backslash as markdown that shows it and opens no maths (`\(` and `\begin{…}` in rendered text do). */
const LITERAL_BACKSLASH = '<span>&#92;</span>';

/** ASCII punctuation, which CommonMark lets a backslash escape. */
const MARKDOWN_PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

/**
 * Text a model, a training run or an error wrote, as markdown that shows it literally: no
 * emphasis, links, HTML or code from its punctuation, and no maths from its `$` or backslashes.
 */
export function markdownLiteral(text: string): string {
  return text.replace(MARKDOWN_PUNCTUATION, c =>
    c === '$' ? LITERAL_DOLLAR : c === '\\' ? LITERAL_BACKSLASH : `\\${c}`,
  );
}
