/**
 * A reviewer's note that names a knob, from the panel in a real JupyterLab: a tiny-cpu run in step
 * mode with the offline proposer; #1 rejected with "leave <its knob> alone"; the card of #2 says
 * the rule it follows, and #2 changes another knob (docs/step-mode-notes.md).
 */
import { expect, test } from '@jupyterlab/galata';
import { execute } from './commands';

test.use({ autoGoto: true, viewport: { width: 1400, height: 1200 } });
// The baseline, measured twice for the noise, then two proposals offered (the first never trains).
test.setTimeout(300_000);

test.afterEach(async ({ page, tmpPath }) => {
  await page.request.post('/autoresearch/runs/stop', { data: { path: `${tmpPath}/knob` } }).catch(() => undefined);
});

test('the review card says which knob a note froze, and the next proposal leaves it alone', async ({
  page,
  tmpPath,
}) => {
  const ws = `${tmpPath}/knob`;
  await execute(page, 'autoresearch:new-workspace', { path: ws, budget_s: 3 });
  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel).toBeVisible();
  await panel.locator('.jp-AutoresearchToolbar-proposer').selectOption('offline');
  await panel.locator('button[data-command="autoresearch:review-each"]').click();
  await panel.locator('button[data-command="autoresearch:start"]').click();
  await expect(panel).toHaveAttribute('data-state', 'running', { timeout: 30_000 });

  const review = panel.locator('.jp-AutoresearchReview');
  await expect(review).toHaveAttribute('data-n', '1', { timeout: 180_000 });
  await expect(review.locator('.jp-AutoresearchReview-proposer')).toBeVisible();
  await expect(review.locator('.jp-AutoresearchReview-rule')).toHaveCount(0);
  // The offline proposer's description: "NAME old → new".
  const description = await review.locator('.jp-AutoresearchExperiment-description').innerText();
  const knob = description.split(' ')[0];
  expect(knob).toMatch(/^[A-Z][A-Z0-9_]*$/);

  await review.locator('.jp-AutoresearchReview-note').fill(`too bold; leave ${knob.toLowerCase()} alone`);
  await review.locator('button[data-command="autoresearch:reject"]').click();

  await expect(review).toHaveAttribute('data-n', '2', { timeout: 60_000 });
  await expect(review.locator('.jp-AutoresearchReview-rule')).toHaveText(
    `Leaving ${knob} alone (from your note on #1)`,
  );
  // The knob as a whole name (another may contain it: LR in MATRIX_LR).
  const named = new RegExp(`(^|[^A-Z0-9_])${knob}([^A-Z0-9_]|$)`);
  await expect(review.locator('.jp-AutoresearchExperiment-description')).not.toHaveText(named);
  await expect(review.locator('.jp-AutoresearchExperiment-diffLine.jp-mod-add').first()).not.toHaveText(named);
});
