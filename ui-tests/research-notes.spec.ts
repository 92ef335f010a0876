/**
 * The panel's *Research notes* in a real JupyterLab: a finished run, then a record whose proposal
 * wrote notes appended to its journal (as the claude proposer journals them), with markup a run
 * could plant. The section shows the latest notes as text, live and after a reload (the light
 * replay keeps `proposal_meta.notes`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect, test } from '@jupyterlab/galata';
import { panelWithRun } from './run-fixture';

test.use({ autoGoto: true, viewport: { width: 1400, height: 1200 } });
test.setTimeout(180_000);

const PLANTED = '## Findings\n- #3 kept <img src=x onerror="window.__planted=1"> [link](javascript:alert(1))';

test('the latest research notes, as text, live and after a reload', async ({ page, tmpPath }) => {
  const panel = await panelWithRun(page, `${tmpPath}/notes`);
  const notes = panel.locator('.jp-AutoresearchNotes');
  await expect(notes).toBeHidden();
  const root = await page.evaluate(
    () =>
      (JSON.parse(document.getElementById('jupyter-config-data')!.textContent!) as { serverRoot: string }).serverRoot,
  );
  // A later experiment that carries notes, as a claude proposal journals it.
  const journal = path.join(root, tmpPath, 'notes', '.autoresearch', 'a1', 'journal.jsonl');
  const lines = fs.readFileSync(journal, 'utf8').trim().split('\n');
  const last = JSON.parse(lines.filter(l => JSON.parse(l).type === 'experiment').at(-1)!);
  const added = { ...last, n: 5, proposal_meta: { notes: { text: PLANTED, through: 4 } } };
  fs.appendFileSync(journal, JSON.stringify(added) + '\n');
  await expect(panel).toHaveAttribute('data-experiments', '6', { timeout: 30_000 });
  const check = async () => {
    await expect(notes).toBeVisible();
    await expect(notes.locator('summary')).toHaveText(
      "The model's research notes, written by the proposal of #5 after #4 had finished",
    );
    await notes.locator('summary').click();
    await expect(notes.locator('.jp-AutoresearchNotes-text')).toHaveText(PLANTED, { useInnerText: true });
    await expect(notes.locator('img, a')).toHaveCount(0);
    expect(await page.evaluate(() => (window as unknown as { __planted?: number }).__planted)).toBeUndefined();
  };
  await check();
  // Galata's usual readiness check wants the Launcher in front; here the restored panel is.
  await page.reload({ waitForIsReady: false });
  await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
  await page.waitForSelector('.jp-AutoresearchPanel');
  await expect(page.locator('.jp-AutoresearchPanel')).toHaveAttribute('data-experiments', '6', { timeout: 30_000 });
  await check();
});
