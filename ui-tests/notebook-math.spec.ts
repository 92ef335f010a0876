/**
 * Dollar amounts in an exported notebook read as money, not maths, in a real JupyterLab with its
 * MathJax: the summary cell of a run with a proposer's cost and trust figures (two `$` in one
 * cell, which `\$` did not keep apart), and a description with `$` in the HTML fallback that
 * JupyterLab shows (and typesets) when this extension is not installed. The notebook comes from
 * `autoresearch export` of a journal with known figures (test/helpers/noisy-journal.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect, type IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import { EXPERIMENT_MIME } from '../src/core/views/bundle';
import { noisyJournal } from '../test/helpers/noisy-journal';
import { cli } from '../test/helpers/workspace';

test.use({ autoGoto: true });

const DESCRIPTION = 'cut the proposer budget from $3 to $1 per hour';
/** What MathJax 2, 3 or 4 or KaTeX put in a page for each piece of maths they typeset. */
const MATH_NODES = 'mjx-container, .MathJax, .MathJax_Preview, .katex';

/** The run exported by the engine: its summary has a cost and trust figures in dollars. */
async function exported(): Promise<{ file: string; notebook: { cells: Array<Record<string, unknown>> } }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-galata-math-'));
  fs.writeFileSync(path.join(dir, 'program.md'), '# Make val_bpb lower\n');
  const records = noisyJournal().map(r =>
    r.type === 'experiment' && r.n === 1 ? { ...r, description: DESCRIPTION } : r,
  );
  fs.mkdirSync(path.join(dir, '.autoresearch', 't'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, '.autoresearch', 't', 'journal.jsonl'),
    records.map(r => JSON.stringify(r) + '\n').join(''),
  );
  const out = path.join(dir, 'money.ipynb');
  const run = await cli(['export', dir, '--tag', 't', '--out', out]);
  expect(run.code, run.stderr).toBe(0);
  return { file: out, notebook: JSON.parse(fs.readFileSync(out, 'utf8')) };
}

/** Maths that must be typeset, in the same element as what is checked: proof that MathJax ran over it. */
const CONTROL = 'control: $x^2$';

/** Writes the notebook, opens it in JupyterLab and brings `locator`'s element into view. */
async function open(page: IJupyterLabPageFixture, file: string, notebook: unknown, tmpPath: string): Promise<void> {
  fs.writeFileSync(file, JSON.stringify(notebook));
  const name = path.basename(file);
  await page.contents.uploadFile(file, `${tmpPath}/${name}`);
  expect(await page.notebook.openByPath(`${tmpPath}/${name}`)).toBe(true);
  await page.notebook.activate(name);
}

test('the summary cell shows its dollar amounts as text, with no maths typeset', async ({ page, tmpPath }) => {
  const { file, notebook } = await exported();
  const cell = notebook.cells.find(c => c.id === 'summary')!;
  cell.source = [...(cell.source as string[]), `\n${CONTROL}\n`];
  await open(page, file, notebook, tmpPath);
  const summary = page.locator('.jp-MarkdownCell').filter({ hasText: 'proposals cost' });
  await summary.scrollIntoViewIfNeeded();
  // The control is typeset (MathJax loads on first use, so allow for it); nothing else is.
  await expect(summary.locator('mjx-container')).toHaveCount(1, { timeout: 30_000 });
  await expect(summary.locator(MATH_NODES)).toHaveCount(1);
  const text = await summary.locator('p').first().innerText();
  expect(text).toMatch(/proposals cost \$0\.\d{4} · /);
  expect(text).toContain('and $0.0028 per 0.001 gained');
  expect(text).toContain('(claude: 0.4 accelerator-min and $0.0028 per 0.001 gained)');
  // The other markdown cells (program.md, the heading) hold no maths either.
  await expect(page.locator('.jp-MarkdownCell').filter({ hasNotText: 'control' }).locator(MATH_NODES)).toHaveCount(0);
});

test('an experiment described with $ shows the dollars as text in its HTML fallback', async ({ page, tmpPath }) => {
  const { file, notebook } = await exported();
  // JupyterLab without this extension: experiment outputs fall back to text/html, which
  // JupyterLab typesets as it does markdown.
  for (const cell of notebook.cells) {
    for (const output of (cell.outputs as Array<{ data: Record<string, unknown> }> | undefined) ?? []) {
      if (!output.data[EXPERIMENT_MIME]) continue;
      delete output.data[EXPERIMENT_MIME];
      output.data['text/html'] = [...(output.data['text/html'] as string[]), `<p>${CONTROL}</p>`];
    }
  }
  await open(page, file.replace(/\.ipynb$/, '-html.ipynb'), notebook, tmpPath);
  const output = page.locator('.jp-RenderedHTML').filter({ hasText: DESCRIPTION });
  await output.scrollIntoViewIfNeeded();
  await expect(output.locator('mjx-container')).toHaveCount(1, { timeout: 30_000 });
  await expect(output.locator(MATH_NODES)).toHaveCount(1);
  await expect(output.locator('p').first()).toContainText(DESCRIPTION);
});
