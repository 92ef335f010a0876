// @vitest-environment jsdom
/**
 * The model's research notes in the exported notebook: each version as a markdown cell before the
 * experiment whose proposal wrote it, every line of it literal text when JupyterLab renders it.
 */
import { removeMath, replaceMath } from '@jupyterlab/rendermime/lib/latex.js';
import { marked } from 'marked';
import { describe, expect, it } from 'vitest';
import type { JournalRecord } from '../src/core/journal/journal';
import { buildNotebook } from '../src/core/views/notebook';
import { notesMarkdown } from '../src/core/views/notes-markdown';
import { record, runStartRecord } from './helpers/records';

/** JupyterLab's markdown rendering up to typesetting (as test/markdown-text.test.ts does it). */
function render(markdown: string): { math: string[]; host: HTMLElement } {
  const parts = removeMath(markdown);
  const host = document.createElement('div');
  host.innerHTML = replaceMath(marked.parse(parts.text, { async: false }), parts.math);
  return { math: parts.math, host };
}

const PLANTED = [
  '## Findings',
  '- #3 kept: [click](javascript:alert(1)) <img src=x onerror=alert(2)> cost $5 and $6',
  '    * indented **bold** `code` \\(x\\)',
  '',
  '## Dead ends',
  '1. <script>alert(3)</script>',
  '## Open hypotheses',
  '> quoted',
].join('\n');

describe('the research notes in the export', () => {
  it('puts each version before the experiment whose proposal wrote it', () => {
    const records: JournalRecord[] = [
      runStartRecord(),
      record(0),
      record(1),
      record(2, { proposal_meta: { notes: { text: '## Findings\nfirst', through: 1 } } }),
      record(3),
      record(4, { proposal_meta: { notes: { text: '## Findings\nsecond', through: 3 } } }),
      // Not notes the engine writes (too long): left out.
      record(5, { proposal_meta: { notes: { text: 'x'.repeat(9000), through: 4 } } }),
    ];
    const ids = buildNotebook({ program: '', records, tag: 't1' }).cells.map(c => c.id);
    expect(ids.slice(ids.indexOf('experiment-0'))).toEqual([
      'experiment-0',
      'experiment-1',
      'notes-experiment-2',
      'experiment-2',
      'experiment-3',
      'notes-experiment-4',
      'experiment-4',
      'experiment-5',
    ]);
    const cell = buildNotebook({ program: '', records, tag: 't1' }).cells.find(c => c.id === 'notes-experiment-4')!;
    expect(cell.cell_type).toBe('markdown');
    expect(cell.source.join('')).toBe(
      '### Research notes\n\n*Written by the proposal of #4, after #3 had finished.*\n\n**Findings**  \nsecond\n',
    );
  });

  it('renders what a run could plant as text: no link, image, script, code, list or maths', () => {
    const { math, host } = render(notesMarkdown({ text: PLANTED, through: 7, n: 8 }));
    expect(math).toEqual([]);
    expect(host.querySelectorAll('a, img, script, code, ul, ol, blockquote, pre')).toHaveLength(0);
    expect([...host.querySelectorAll('strong')].map(s => s.textContent)).toEqual([
      'Findings',
      'Dead ends',
      'Open hypotheses',
    ]);
    const text = host.textContent!;
    expect(text).toContain('- #3 kept: [click](javascript:alert(1)) <img src=x onerror=alert(2)> cost $5 and $6');
    expect(text).toContain('* indented **bold** `code` \\(x\\)');
    expect(text).toContain('1. <script>alert(3)</script>');
    expect(text).toContain('> quoted');
    // Each line stays a line.
    expect(host.querySelectorAll('br').length).toBeGreaterThanOrEqual(5);
  });
});
