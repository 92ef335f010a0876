/**
 * The transfer study from the panel, in a real JupyterLab and Debian's Chromium: a short tiny-cpu
 * run (made with the CLI, which the panel follows), then *Transfer Study…* from the toolbar; its
 * dialog prefilled from program.md's `transfer:` block, refusing a line that is not KEY=VALUE,
 * then starting the study at twice the depth; the strip saying a study runs; and the *Transfer
 * study* output: the summary line, a row per kept change, and the two-series chart.
 */
import * as path from 'node:path';
import { expect, test } from '@jupyterlab/galata';
import { cli } from '../test/helpers/workspace';

test.use({ autoGoto: true, viewport: { width: 1400, height: 1200 } });
// A baseline and two experiments of ~8 s each on two cores, then their replays at twice the depth.
test.setTimeout(480_000);

interface IExperiment {
  n: number;
  status: string;
}

test('a transfer study from the panel: the dialog, the table and the chart', async ({ page, tmpPath }, testInfo) => {
  const ws = `${tmpPath}/study`;
  await page.evaluate(async p => {
    await (
      window as unknown as { jupyterapp: { commands: { execute(id: string, a: unknown): Promise<unknown> } } }
    ).jupyterapp.commands.execute('autoresearch:new-workspace', { path: p, budget_s: 3 });
  }, ws);
  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel.locator('.jp-AutoresearchRunStrip-state')).toHaveText('no runs yet');

  // The run, from a terminal's CLI on the server's files; the panel follows it.
  const root = await page.evaluate(
    () =>
      (JSON.parse(document.getElementById('jupyter-config-data')!.textContent!) as { serverRoot: string }).serverRoot,
  );
  const dir = path.join(root, ws);
  const args = ['run', dir, '--tag', 's1', '--max-experiments', '2', '--proposer', 'offline', '--noise-runs', '1'];
  const run = await cli(args);
  expect(run.code, run.stderr).toBe(0);
  await expect(panel).toHaveAttribute('data-state', 'stopped', { timeout: 60_000 });
  await expect(panel).toHaveAttribute('data-experiments', '3', { timeout: 30_000 });
  const response = await page.request.get(`/autoresearch/experiments?path=${encodeURIComponent(ws)}&tag=s1`);
  const done = ((await response.json()) as { experiments: IExperiment[] }).experiments;
  const kept = done.filter(e => e.status === 'keep' && e.n > 0).map(e => `#${e.n}`);

  // Transfer Study… folds into the toolbar's overflow menu first on a screen this wide.
  const transfer = page.locator('button[data-command="autoresearch:transfer"]');
  if (!(await transfer.isVisible())) {
    await panel.locator('.jp-Toolbar-responsive-opener').click();
  }
  await expect(transfer).toHaveText('Transfer Study…');
  await expect(transfer).toBeEnabled();
  await transfer.click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-Dialog-header')).toHaveText('Transfer study of s1');
  const env = dialog.locator('.jp-AutoresearchTransferDialog-env');
  await expect(env).toHaveValue('AUTORESEARCH_SCALE=2');
  await env.fill('AUTORESEARCH_SCALE=2\nnot a pair');
  await dialog.getByRole('button', { name: 'Start study' }).click();
  // Refused, and asked again with the problem said and the fields kept.
  await expect(dialog.locator('.jp-AutoresearchTransferDialog-error')).toContainText('line 2: "not a pair"');
  await expect(env).toHaveValue('AUTORESEARCH_SCALE=2\nnot a pair');
  await env.fill('AUTORESEARCH_SCALE=2');
  await dialog.locator('.jp-AutoresearchTransferDialog-runs').fill('2');
  // Ablate: the box right beside its word, in one label (a click on the word ticks it).
  const ablate = dialog.getByRole('checkbox', { name: 'Ablate' });
  const word = dialog.locator('.jp-AutoresearchTransferDialog-check span', { hasText: 'Ablate' });
  const [box, text] = await Promise.all([ablate.boundingBox(), word.boundingBox()]);
  expect(text!.x - (box!.x + box!.width)).toBeGreaterThanOrEqual(0);
  expect(text!.x - (box!.x + box!.width)).toBeLessThan(12);
  expect(Math.abs(text!.y + text!.height / 2 - (box!.y + box!.height / 2))).toBeLessThan(4);
  await expect(ablate).toHaveAccessibleDescription(/remove each kept change/);
  await word.click();
  await expect(ablate).toBeChecked();
  await word.click();
  await expect(ablate).not.toBeChecked();
  await dialog.getByRole('button', { name: 'Start study' }).click();
  await expect(dialog).toHaveCount(0);

  const strip = panel.locator('.jp-AutoresearchRunStrip-state');
  await expect(strip).toHaveText('transfer study running', { timeout: 30_000 });
  await expect(page.locator('button[data-command="autoresearch:start"]')).toBeDisabled();
  const section = panel.locator('.jp-AutoresearchTransfer');
  await expect(section).toBeVisible({ timeout: 60_000 });
  await expect(section).toHaveAttribute('data-running', 'false', { timeout: 360_000 });
  await expect(strip).not.toHaveText('transfer study running');

  // Which changes the offline proposer's two experiments kept is the run's to say: none is a study too.
  await expect(section.locator('.jp-AutoresearchTransfer-summary')).toHaveText(
    kept.length
      ? new RegExp(`^\\d+ of ${kept.length} changes transferred; total gain `)
      : /kept no change beyond the baseline/,
  );
  const rows = section.locator('.jp-AutoresearchTransfer-table tbody tr');
  await expect(rows).toHaveCount(kept.length);
  expect(await rows.locator('td:first-child').allTextContents()).toEqual(kept);
  await expect(section.locator('th')).toContainText(['Δ search (3 s)', 'verdict']);
  if (kept.length) {
    await expect(rows.first().locator('.jp-AutoresearchTransfer-verdict')).toHaveText(
      /^(transferred|neutral|reversed|unmeasured)$/,
    );
    await expect(section.locator('.jp-AutoresearchTransfer-chart .vega-embed')).toBeVisible();
  }
  await section.scrollIntoViewIfNeeded();
  await page.screenshot({ path: testInfo.outputPath('transfer.png') });

  // At 760 px (the file browser open beside the panel) the study's section, its table and chart
  // included, does not scroll the panel sideways.
  await page.setViewportSize({ width: 760, height: 900 });
  const content = panel.locator('.jp-AutoresearchPanel-content');
  const sideways = () =>
    content.evaluate(c =>
      [c, ...c.children]
        .filter(el => el.scrollWidth > el.clientWidth)
        .map(el => `${el.className}: ${el.scrollWidth} > ${el.clientWidth}`),
    );
  await expect.poll(sideways, { timeout: 15_000 }).toEqual([]);
});
