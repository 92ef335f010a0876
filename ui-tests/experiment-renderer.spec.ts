/** The experiment MIME renderer in a real JupyterLab, on a notebook exported from a real run. */
import * as path from 'node:path';
import { expect, test } from '@jupyterlab/galata';

// Tall enough that the screenshots show every experiment output once the chart is scrolled past.
test.use({ autoGoto: true, viewport: { width: 1280, height: 1400 } });

test('an exported run shows each experiment through the autoresearch renderer', async ({ page, tmpPath }, testInfo) => {
  const source = process.env.AR_GALATA_NOTEBOOK;
  expect(source, 'the global setup exports a notebook').toBeTruthy();
  const name = path.basename(source!);
  await page.contents.uploadFile(source!, `${tmpPath}/${name}`);
  expect(await page.notebook.openByPath(`${tmpPath}/${name}`)).toBe(true);
  await page.notebook.activate(name);

  const outputs = page.locator('.jp-AutoresearchExperiment');
  // #0 the baseline, then three experiments; the third run crashes.
  await expect(outputs).toHaveCount(4);
  const badges = outputs.locator('.jp-AutoresearchExperiment-status');
  await expect(badges.nth(0)).toHaveText('keep');
  const statuses = await badges.allTextContents();
  expect(statuses.every(s => ['keep', 'discard', 'crash'].includes(s))).toBe(true);
  expect(statuses).toContain('crash');
  for (let i = 0; i < 4; i++) {
    await expect(outputs.nth(i).locator('.jp-AutoresearchExperiment-number')).toHaveText(`#${i}`);
  }
  // Experiments after the baseline changed train.py: their diff has added and removed lines.
  for (let i = 1; i < 4; i++) {
    const diff = outputs.nth(i).locator('details.jp-AutoresearchExperiment-diff');
    await expect(diff.locator('.jp-AutoresearchExperiment-diffLine.jp-mod-add').first()).toBeAttached();
    await expect(diff.locator('.jp-AutoresearchExperiment-diffLine.jp-mod-del').first()).toBeAttached();
    const open = await diff.evaluate(d => (d as HTMLDetailsElement).open);
    expect(open).toBe(statuses[i] === 'keep');
  }
  const crash = outputs.filter({ has: page.locator('.jp-AutoresearchExperiment-status.jp-mod-crash') });
  await expect(crash.locator('.jp-AutoresearchExperiment-logBody')).toContainText('RuntimeError: <stand-in> & boom');
  // The static HTML fallback is not what shows: our renderer outranks text/html.
  await expect(page.locator('.jp-RenderedHTMLCommon:has-text("diff (+")')).toHaveCount(0);

  // The Python in the diffs goes through JupyterLab's CodeMirror highlighter (token spans): an
  // open diff (a keep's) at once, a folded one when it is first opened.
  const tokens = (i: number) => outputs.nth(i).locator('.jp-AutoresearchExperiment-diffCode span');
  const folded = [1, 2, 3].find(i => statuses[i] !== 'keep') as number;
  await expect(tokens(folded)).toHaveCount(0);
  // A collapsed diff opens on a click on its summary; open them all for the screenshots.
  for (let i = 1; i < 4; i++) {
    const diff = outputs.nth(i).locator('details.jp-AutoresearchExperiment-diff');
    if (statuses[i] !== 'keep') {
      await diff.locator('summary').click();
    }
    await expect(diff.locator('.jp-AutoresearchExperiment-diffLine.jp-mod-add').first()).toBeVisible();
    await expect(tokens(i).first()).toBeAttached();
  }

  // JupyterLab scrolls inside the notebook, not the page: bring the experiments into view.
  await outputs.nth(0).evaluate(el => el.scrollIntoView({ block: 'start' }));
  await page.screenshot({ path: testInfo.outputPath('experiments-light.png') });
  await page.theme.setDarkTheme();
  await expect(page.locator('body[data-jp-theme-light="false"]')).toBeAttached();
  await outputs.nth(0).evaluate(el => el.scrollIntoView({ block: 'start' }));
  await page.screenshot({ path: testInfo.outputPath('experiments-dark.png') });
});

test('an exported run opens clean: no kernel, not modified, no hidden-input bars', async ({ page, tmpPath }) => {
  const source = process.env.AR_GALATA_NOTEBOOK!;
  const name = path.basename(source);
  await page.contents.uploadFile(source, `${tmpPath}/${name}`);
  expect(await page.notebook.openByPath(`${tmpPath}/${name}`)).toBe(true);
  await page.notebook.activate(name);
  await expect(page.locator('.jp-AutoresearchExperiment')).toHaveCount(4);
  await expect(page.locator('.jp-NotebookPanel.jp-AutoresearchExport')).toBeAttached();
  // Long enough for JupyterLab to have looked for a kernel and, had it started one, marked it dirty.
  await page.waitForTimeout(3000);
  await expect(page.locator('.jp-NotebookPanel-toolbar .jp-KernelName')).toHaveText(/No Kernel/);
  const sessions = await (await page.request.get('/api/sessions')).json();
  expect(sessions.filter((s: { path: string }) => s.path.endsWith(name))).toEqual([]);
  await expect(page.locator('.lm-TabBar-tab.jp-mod-current')).not.toHaveClass(/jp-mod-dirty/);
  // Each experiment is an output with nothing above it: the hidden inputs draw no "•••" bar.
  const outputCells = page.locator('.jp-AutoresearchExport-output');
  expect(await outputCells.count()).toBeGreaterThanOrEqual(5); // the chart and 4 experiments
  await expect(page.locator('.jp-AutoresearchExport-output .jp-InputPlaceholder:visible')).toHaveCount(0);
  await expect(page.locator('.jp-AutoresearchExport-output .jp-Cell-inputWrapper:visible')).toHaveCount(0);
  // Only the chart's cached PNG is forgiven: a reader's own change still marks the file modified.
  await page.notebook.setCell(0, 'markdown', '# A note of my own');
  await expect(page.locator('.lm-TabBar-tab.jp-mod-current')).toHaveClass(/jp-mod-dirty/);
});
