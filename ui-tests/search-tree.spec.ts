/**
 * The search tree in the panel's experiment list (issue 28), in a real JupyterLab and Debian's
 * Chromium: a stopped run whose journal has a plateau branch from near-miss #1 (#2, then #3 from
 * #2) and a re-test of #1 (#4). The branch's and the move's headers say how they searched, a plain
 * experiment on the best says nothing more, and the branch's items are indented by depth.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect, test } from '@jupyterlab/galata';
import type { ExperimentRecord } from '../src/core/journal/journal';
import { cli, makeWorkspace, STAND_IN_PROGRAM, standInTrain } from '../test/helpers/workspace';
import { record, runStartRecord } from '../test/helpers/records';

test.use({ autoGoto: true, viewport: { width: 1400, height: 1000 } });
test.setTimeout(120_000);

const commitOf = (n: number) => n.toString(16).padStart(40, 'b');
const exp = (n: number, from: number | null, over: Partial<ExperimentRecord> = {}) =>
  record(n, { parent_commit: from === null ? 'a'.repeat(40) : commitOf(from), ...over });

test('each experiment says how it searched, and a branch is indented by depth', async ({ page, tmpPath }) => {
  const ws = `${tmpPath}/tree`;
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
  // A stopped run written as the engine writes one, with the moves the search journals.
  const dir = path.join(root, ws);
  const records = [
    runStartRecord(),
    exp(0, null, { status: 'keep', description: 'baseline' }),
    exp(1, 0, { description: 'warmup 100 steps' }),
    exp(2, 1, { move: { kind: 'branch', of: [1] } }),
    exp(3, 2, { move: { kind: 'branch', of: [1] } }),
    exp(4, 0, { move: { kind: 'retest', of: [1] } }),
    {
      type: 'run_end',
      ts: new Date(0).toISOString(),
      reason: 'max-experiments',
      message: null,
      best_commit: commitOf(0),
      best_metric: 1,
    },
  ];
  fs.mkdirSync(path.join(dir, '.autoresearch', 't1'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, '.autoresearch', 't1', 'journal.jsonl'),
    records.map(r => JSON.stringify(r)).join('\n') + '\n',
  );
  const state = await cli(['state', '--tag', 't1', dir]);
  expect(state.code, state.stderr).toBe(0);

  await page.reload();
  await page.evaluate(async p => {
    const app = (
      window as unknown as { jupyterapp: { commands: { execute(id: string, a: unknown): Promise<unknown> } } }
    ).jupyterapp;
    await app.commands.execute('autoresearch:open', { path: p });
  }, ws);
  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel).toHaveAttribute('data-experiments', '5', { timeout: 30_000 });
  const item = (n: number) => panel.locator(`.jp-AutoresearchExperimentList-item[data-n="${n}"]`);
  const move = (n: number) => item(n).locator('.jp-AutoresearchExperiment-move');
  await expect(move(2)).toHaveText('branch of #1', { timeout: 30_000 });
  await expect(move(3)).toHaveText('branch of #1 · from #2');
  await expect(move(4)).toHaveText('retest of #1');
  await expect(item(1).locator('.jp-AutoresearchExperiment-header')).toBeVisible();
  await expect(move(1)).toHaveCount(0);
  await expect(item(3)).toHaveClass(/jp-mod-branch/);
  await expect(item(3)).toHaveAttribute('data-depth', '2');
  // Indented: the deeper, the further right.
  const x = async (n: number) => (await item(n).boundingBox())!.x;
  expect(await x(2)).toBeGreaterThan(await x(1));
  expect(await x(3)).toBeGreaterThan(await x(2));
  expect(await x(4)).toBe(await x(1));
});
