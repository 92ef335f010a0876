/**
 * A workspace with a short finished run for the Galata specs that need experiments to look at:
 * cloned from a stand-in repository (its train.py prints its summary at once) through the panel's
 * *New Autoresearch Workspace*, then run from the CLI on the server's files, as from a terminal;
 * the panel follows it.
 */
import * as path from 'node:path';
import { expect } from '@jupyterlab/galata';
import type { Locator, Page } from '@playwright/test';
import { cli, makeWorkspace, STAND_IN_PROGRAM, standInTrain } from '../test/helpers/workspace';

export const HEADER = '.jp-AutoresearchExperimentList-item .jp-AutoresearchExperiment-header';

/**
 * A workspace at `ws` (under the server's root) with a finished run `a1` of five experiments (#0
 * the baseline), its panel open and caught up.
 */
export async function panelWithRun(page: Page, ws: string): Promise<Locator> {
  const origin = makeWorkspace({ program: STAND_IN_PROGRAM, train: standInTrain() });
  await page.evaluate(
    async ([p, from]) => {
      await (
        window as unknown as { jupyterapp: { commands: { execute(id: string, a: unknown): Promise<unknown> } } }
      ).jupyterapp.commands.execute('autoresearch:new-workspace', { path: p, from });
    },
    [ws, origin] as const,
  );
  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel.locator('.jp-AutoresearchRunStrip-state')).toHaveText('no runs yet', { timeout: 30_000 });
  // The run, from the CLI on the server's files, as from a terminal; the panel follows it.
  const root = await page.evaluate(
    () =>
      (JSON.parse(document.getElementById('jupyter-config-data')!.textContent!) as { serverRoot: string }).serverRoot,
  );
  const args = ['--tag', 'a1', '--max-experiments', '4', '--proposer', 'offline', '--noise-runs', '1'];
  const run = await cli(['run', path.join(root, ws), ...args]);
  expect(run.code, run.stderr).toBe(0);
  await expect(panel).toHaveAttribute('data-experiments', '5', { timeout: 30_000 });
  await expect(panel.locator(HEADER).first()).toBeVisible();
  return panel;
}
