// @vitest-environment jsdom
/**
 * Generated markdown holds no maths for JupyterLab's pipeline: its own removeMath, then marked (the
 * parser JupyterLab's markedparser-extension uses), then the runs of text MathJax scans, which
 * end at every element. ui-tests/notebook-math.spec.ts renders the same in a real JupyterLab.
 */
import { removeMath, replaceMath } from '@jupyterlab/rendermime/lib/latex.js';
import { marked } from 'marked';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../src/core/journal/journal';
import { LITERAL_DOLLAR, literalDollars, markdownLiteral } from '../src/core/views/markdown-text';
import { buildNotebook } from '../src/core/views/notebook';
import type { TransferSummary } from '../src/core/study/transfer';
import { noisyJournal } from './helpers/noisy-journal';
import { record } from './helpers/records';

/** JupyterLab's markdown rendering up to typesetting: the maths it set aside, and the element. */
function render(markdown: string): { math: string[]; host: HTMLElement } {
  const parts = removeMath(markdown);
  const host = document.createElement('div');
  host.innerHTML = replaceMath(marked.parse(parts.text, { async: false }), parts.math);
  return { math: parts.math, host };
}

/** The strings MathJax's FindTeX searches: each element's runs of text, cut at every child element. */
function textRuns(node: Node, out: string[] = []): string[] {
  let run = '';
  for (const child of node.childNodes) {
    if (child.nodeType === child.TEXT_NODE) {
      run += child.nodeValue;
    } else {
      out.push(run);
      run = '';
      if (!['CODE', 'PRE'].includes((child as Element).tagName)) textRuns(child, out);
    }
  }
  out.push(run);
  return out;
}

/** Maths as JupyterLab would typeset it: set aside by removeMath, or a `$…$` in one run of text. */
function mathIn(markdown: string): string[] {
  const { math, host } = render(markdown);
  return [...math, ...textRuns(host).filter(run => /\$[^$]*\$|\\\(|\\\[|\\begin\{/.test(run))];
}

describe('literalDollars', () => {
  it('writes amounts that render as plain dollars, and that `\\$` (the old way) did not', () => {
    const md = literalDollars('proposals cost $0.4200 · trust: $0.0028 per 0.001 gained');
    expect(md).not.toContain('$');
    expect(mathIn(md)).toEqual([]);
    expect(render(md).host.textContent?.trim()).toBe('proposals cost $0.4200 · trust: $0.0028 per 0.001 gained');
    // What the export wrote before: marked turns `\$` into `$`, and MathJax pairs the two.
    expect(mathIn('proposals cost \\$0.4200 · trust: \\$0.0028 per 0.001 gained')).not.toEqual([]);
  });

  it('leaves a `$` in inline code alone (code is never typeset; markup there would show)', () => {
    expect(literalDollars('cost $1 and `echo $HOME` then ``a`$b``')).toBe(
      `cost ${LITERAL_DOLLAR}1 and \`echo $HOME\` then \`\`a\`$b\`\``,
    );
    expect(literalDollars('an unclosed ` then $2')).toBe(`an unclosed \` then ${LITERAL_DOLLAR}2`);
  });
});

describe('markdownLiteral', () => {
  it("shows a model's text as written: no maths, emphasis, links, HTML or code", () => {
    const texts = [
      'cut lr from $3e-4 to $1e-4',
      'scale by \\(\\sqrt{d}\\) as in \\begin{equation}x\\end{equation}',
      '**bold** _it_ [link](http://x) <img src=x onerror=alert(1)> `code` # not a heading',
      'a \\$ and a \\\\ and $$x$$',
    ];
    for (const text of texts) {
      const md = markdownLiteral(text);
      expect(mathIn(md), text).toEqual([]);
      const { host } = render(md);
      expect(host.textContent?.trim(), text).toBe(text);
      expect(host.querySelector('strong, em, a, img, code, h1'), text).toBeNull();
    }
  });
});

describe('the exported notebook', () => {
  it("the summary's amounts (cost and trust) render as text, not maths", () => {
    const records = noisyJournal();
    const nb = buildNotebook({ program: '# P\n', records, tag: 't' });
    const summary = nb.cells.find(c => c.id === 'summary')!.source.join('');
    expect(summary).toContain(`and ${LITERAL_DOLLAR}0.0028 per 0.001 gained`);
    expect(mathIn(summary)).toEqual([]);
    expect(render(summary).host.textContent).toMatch(/proposals cost \$0\.\d{4} · /);
  });

  it('a run from before repeats: one amount, the same markup', () => {
    const records: JournalRecord[] = [
      record(0, { status: 'keep', metric: 1 }),
      record(1, { status: 'keep', metric: 0.99, cost_usd: 0.42 }),
    ];
    const summary = buildNotebook({ program: '', records, tag: 't' })
      .cells.find(c => c.id === 'summary')!
      .source.join('');
    expect(summary).toContain(`proposals cost ${LITERAL_DOLLAR}0.4200.`);
  });

  it("a transfer study's problem quoted from a file is shown literally", () => {
    const problem = 'transfer/summary.json is not JSON: "$a$ and *b*" at line 1; delete it';
    const nb = buildNotebook({ program: '', records: noisyJournal(), tag: 't', transfer: problem });
    const cell = nb.cells.find(c => c.id === 'transfer')!.source.join('');
    expect(mathIn(cell)).toEqual([]);
    expect(render(cell).host.textContent).toContain(problem);
  });

  it('experiment and transfer HTML fallbacks carry the classes MathJax 2, 3 and 4 leave alone', () => {
    const exps = noisyJournal().map(r => (r.type === 'experiment' ? { ...r, description: 'from $2 to $1' } : r));
    const nb = buildNotebook({ program: '', records: exps, tag: 't', transfer: null as TransferSummary | null });
    const html = nb.cells
      .filter(c => c.id.startsWith('experiment-'))
      .map(c =>
        ((c as { outputs: Array<{ data: Record<string, string[]> }> }).outputs[0].data['text/html'] ?? []).join(''),
      );
    expect(html.length).toBeGreaterThan(0);
    for (const h of html) expect(h.startsWith('<div class="tex2jax_ignore mathjax_ignore">')).toBe(true);
  });
});
