/**
 * Filter and Compare in the panel, in a real JupyterLab and Debian's Chromium, on a finished
 * stand-in run of five experiments (ui-tests/run-fixture.ts): the status buttons and the search
 * hide what they leave out (the chart follows), Jump to best clears a filter that hides the best,
 * and two picked experiments (or one against the best) open side by side with the diff between
 * their commits, as GET compare answers it.
 */
import { expect, test } from '@jupyterlab/galata';
import { HEADER, panelWithRun } from './run-fixture';

test.use({ autoGoto: true, viewport: { width: 1600, height: 1200 } });
test.setTimeout(180_000);

test('filter by status and text; compare two experiments, and one against the best', async ({ page, tmpPath }) => {
  const panel = await panelWithRun(page, `${tmpPath}/compare`);
  const items = panel.locator('.jp-AutoresearchExperimentList-item');
  const visible = panel.locator('.jp-AutoresearchExperimentList-item:not([hidden])');
  await expect(items).toHaveCount(5);
  const bar = panel.locator('.jp-AutoresearchFilter');
  const keeps = await panel.locator('.jp-AutoresearchExperimentList-item.jp-mod-keep').count();
  expect(keeps).toBeGreaterThan(0);

  // The chart's points (Vega's SVG symbols), before filtering.
  const symbols = panel.locator('.jp-AutoresearchChart g.mark-symbol path');
  await expect.poll(() => symbols.count(), { timeout: 30_000 }).toBeGreaterThan(0);
  const allSymbols = await symbols.count();

  // Keeps only: the others are hidden, and the count says so; the chart follows.
  await bar.locator('button[data-status="keep"]').click();
  await expect(bar.locator('button[data-status="keep"]')).toHaveAttribute('aria-pressed', 'true');
  await expect(visible).toHaveCount(keeps);
  await expect(bar).toContainText(`${keeps} of 5`);
  await expect.poll(() => symbols.count(), { timeout: 10_000 }).toBeLessThan(allSymbols);
  // A search no description holds: nothing shown; cleared, everything again.
  await bar.locator('input').fill('no-such-words-anywhere');
  await expect(visible).toHaveCount(0);
  await bar.locator('input').fill('');
  await bar.locator('button[data-status="keep"]').click();
  await expect(visible).toHaveCount(5);
  // The baseline's own words find it.
  await bar.locator('input').fill('baseline');
  await expect(visible).toHaveCount(1);
  await expect(visible.first()).toHaveAttribute('data-n', '0');
  await bar.locator('input').fill('');

  // Pick one: compared against the best.
  await expect(bar.locator('.jp-AutoresearchCompare-open')).toBeDisabled();
  await panel.locator('.jp-AutoresearchExperimentList-item[data-n="1"] .jp-AutoresearchCompare-pick input').check();
  const open = bar.locator('.jp-AutoresearchCompare-open');
  await expect(open).toHaveText('Compare #1 with the best');
  // The pick is beside the header, not inside it: ticking it does not fold or unfold the experiment.
  await expect(
    panel.locator('.jp-AutoresearchExperimentList-item[data-n="1"] .jp-AutoresearchCompare-pick'),
  ).not.toHaveCount(0);
  expect(await panel.locator(`${HEADER} .jp-AutoresearchCompare-pick`).count()).toBe(0);
  await open.click();
  const view = panel.locator('.jp-AutoresearchCompare');
  await expect(view).toBeVisible();
  await expect(view).toHaveAttribute('data-a', '1', { timeout: 30_000 });

  // Pick a second: the two, older first, with the diff between their commits.
  await panel.locator('.jp-AutoresearchExperimentList-item[data-n="3"] .jp-AutoresearchCompare-pick input').check();
  await expect(open).toHaveText('Compare #1 and #3');
  await open.click();
  await expect(view).toHaveAttribute('data-a', '1', { timeout: 30_000 });
  await expect(view).toHaveAttribute('data-b', '3');
  await expect(view).toContainText('#1');
  await expect(view).toContainText('#3');
  await expect(view.locator('.jp-AutoresearchCompare-diff')).toContainText('train.py');
});
