/**
 * Vega made ready before a panel opens (src/lab/panel/warm-up.ts), in a real JupyterLab and
 * Debian's Chromium: a browser that has never opened the panel loads nothing for it; once a panel
 * was opened, the next page draws the made-up chart off the page while the lab is idle, without a
 * warning, and a panel opened then draws its own chart as before.
 */
import * as path from 'node:path';
import { expect, test } from '@jupyterlab/galata';
import { cli, makeWorkspace, STAND_IN_PROGRAM, standInTrain } from '../test/helpers/workspace';

test.use({ autoGoto: true });
test.setTimeout(120_000);

test('a browser that has opened the panel gets Vega ready on its next page, before any panel opens', async ({
  page,
  tmpPath,
}) => {
  const warnings: string[] = [];
  page.on('console', message => {
    if (['warning', 'error'].includes(message.type()) && /vega|autoresearch/i.test(message.text())) {
      warnings.push(message.text());
    }
  });
  const body = page.locator('body');
  // Never opened in this browser (a fresh context): nothing is loaded for the panel.
  await expect(body).toHaveAttribute('data-autoresearch-warm-up', 'skipped', { timeout: 30_000 });

  const ws = `${tmpPath}/warm`;
  const origin = makeWorkspace({ program: STAND_IN_PROGRAM, train: standInTrain() });
  await page.evaluate(
    async ([p, from]) => {
      const app = (
        window as unknown as { jupyterapp: { commands: { execute(id: string, a: unknown): Promise<unknown> } } }
      ).jupyterapp;
      await app.commands.execute('autoresearch:new-workspace', { path: p, from });
    },
    [ws, origin] as const,
  );
  await expect(page.locator('.jp-AutoresearchPanel')).toBeVisible();
  const root = await page.evaluate(
    () =>
      (JSON.parse(document.getElementById('jupyter-config-data')!.textContent!) as { serverRoot: string }).serverRoot,
  );
  const run = await cli(['run', path.join(root, ws), '--tag', 'w1', '--max-experiments', '2', '--proposer', 'offline']);
  expect(run.code, run.stderr).toBe(0);

  // The next page, with no panel in its layout: the warm-up is drawn while the lab is idle.
  // ?reset: the workspace's layout starts empty, so no panel is restored to draw first.
  const next = new URL(page.url());
  next.search = 'reset';
  await page.goto(next.toString(), { waitForIsReady: false });
  await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
  await expect(body).toHaveAttribute('data-autoresearch-warm-up', 'done', { timeout: 30_000 });
  await expect(page.locator('.jp-AutoresearchPanel')).toHaveCount(0);
  // Nothing of it is on the page, and a panel opened now draws its chart.
  await expect(page.locator('.vega-embed')).toHaveCount(0);
  await page.evaluate(async p => {
    const app = (
      window as unknown as { jupyterapp: { commands: { execute(id: string, a: unknown): Promise<unknown> } } }
    ).jupyterapp;
    await app.commands.execute('autoresearch:open', { path: p });
  }, ws);
  await expect(page.locator('.jp-AutoresearchChart .vega-embed svg.marks')).toBeVisible({ timeout: 30_000 });
  expect(warnings).toEqual([]);
});
