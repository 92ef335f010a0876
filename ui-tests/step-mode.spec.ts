/**
 * Step mode from the panel, end to end in a real JupyterLab and Debian's Chromium: a tiny-cpu
 * run started with *Review each proposal* on; the first proposal rejected with a note, the second
 * edited in the code editor and approved, the third approved with Approve all (which ends step
 * mode); then the experiments as the server's journal has them: the rejection with its reason,
 * the edit, the approvals, all from the panel. Screenshots of the pending proposal and of its
 * editor are kept as test artifacts.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Page } from '@playwright/test';
import { execute } from './commands';

test.use({ autoGoto: true, viewport: { width: 1400, height: 1200 } });
// The baseline (measured twice for the noise) and three reviewed proposals of ~8 s each on two
// cores, with the reviewer's clicks in between, then one unreviewed experiment.
test.setTimeout(420_000);

// A failed test must not leave its engine waiting for a reviewer after the server is gone
// (engines outlive the server by design): stop whatever still runs on the workspace.
test.afterEach(async ({ page, tmpPath }) => {
  await page.request.post('/autoresearch/runs/stop', { data: { path: `${tmpPath}/step` } }).catch(() => undefined);
});

const NOTE = 'Galata: not this direction, try the learning rate';
const EDIT_LINE = '# edited in the Galata step-mode test';

interface IExperiment {
  n: number;
  status: string;
  reason: string | null;
  review?: { action: string; source: string; waited_s: number };
}

/** The run's experiments as GET /autoresearch/experiments reads them from the journal. */
async function experiments(page: Page, ws: string, tag: string): Promise<IExperiment[]> {
  const response = await page.request.get(`/autoresearch/experiments?path=${encodeURIComponent(ws)}&tag=${tag}`);
  expect(response.ok()).toBe(true);
  return ((await response.json()) as { experiments: IExperiment[] }).experiments;
}

test('step mode from the panel: reject with a note, edit and approve, approve all', async ({
  page,
  tmpPath,
}, testInfo) => {
  const ws = `${tmpPath}/step`;
  await execute(page, 'autoresearch:new-workspace', { path: ws, budget_s: 3 });
  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel).toBeVisible();
  await expect(panel.locator('.jp-AutoresearchRunStrip-state')).toHaveText('no runs yet');
  await panel.locator('.jp-AutoresearchToolbar-proposer').selectOption('offline');

  // The toggle before Start: the next run reviews each proposal.
  const toggle = panel.locator('button[data-command="autoresearch:review-each"]');
  await expect(toggle).toHaveText('Review each proposal');
  await expect(toggle).toHaveAttribute('aria-pressed', 'false');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-pressed', 'true');
  await panel.locator('button[data-command="autoresearch:start"]').click();
  await expect(panel).toHaveAttribute('data-state', 'running', { timeout: 30_000 });
  // The run picker may sit in the toolbar's overflow menu: ask the server which run started.
  const runs = await page.request.get(`/autoresearch/runs?path=${encodeURIComponent(ws)}`);
  const tag = ((await runs.json()) as { engine: { tag: string } | null }).engine?.tag ?? '';
  expect(tag).toMatch(/\S/);

  // #0, the baseline, trains unreviewed; #1 waits for its reviewer. The reviewer is elsewhere
  // meanwhile (the launcher), so a notification says so, once, with its way back to the panel.
  await execute(page, 'launcher:create', {});
  await expect(panel).toBeHidden();
  const toast = page.locator('.Toastify__toast', { hasText: '#1 awaits review' });
  await expect(toast).toHaveCount(1, { timeout: 180_000 });
  await toast.getByRole('button', { name: 'Review' }).click();
  await expect(panel).toBeVisible();
  // In view, the card is the notice: the toast gives way to it rather than cover its buttons.
  await expect(toast).toHaveCount(0);
  const review = panel.locator('.jp-AutoresearchReview');
  const strip = panel.locator('.jp-AutoresearchRunStrip-state');
  await expect(review).toHaveAttribute('data-n', '1');
  await expect(review).toBeVisible();
  await expect(strip).toHaveText('#1 awaiting review');
  await expect(panel).toHaveAttribute('data-review', '1');
  await expect(page.locator('.jp-AutoresearchStatus')).toContainText('#1 awaiting review');
  await expect(page.locator('.jp-AutoresearchStatus')).toHaveAttribute('data-state', 'awaiting-review');
  await expect(panel.locator('.jp-AutoresearchLive-badge.jp-mod-pending')).toHaveText('awaiting review');
  // The proposal as an output: who proposed it and why, the rationale, the diff.
  await expect(review.locator('.jp-AutoresearchReview-proposer')).toContainText('offline — offline move:');
  await expect(review.locator('.jp-AutoresearchExperiment-rationale')).toContainText(/\S/);
  await expect(review.locator('.jp-AutoresearchExperiment-diffLine.jp-mod-add').first()).toBeAttached();
  await page.screenshot({ path: testInfo.outputPath('step-pending.png') });

  // Reject #1 with a note.
  await review.locator('.jp-AutoresearchReview-note').fill(NOTE);
  await review.locator('button[data-command="autoresearch:reject"]').click();
  const item = (n: number) => panel.locator(`.jp-AutoresearchExperimentList-item[data-n="${n}"]`);
  await expect(item(1).locator('.jp-AutoresearchExperiment-status')).toHaveText('rejected', { timeout: 60_000 });

  // Edit #2 in the code editor and approve the edited version.
  await expect(review).toHaveAttribute('data-n', '2', { timeout: 60_000 });
  // #2 came while the panel was in view: no toast over the card for it.
  await expect(page.locator('.Toastify__toast', { hasText: 'awaits review' })).toHaveCount(0);
  await expect(review.locator('.jp-AutoresearchReview-proposer')).toBeVisible();
  const edit = review.locator('button[data-command="autoresearch:edit-proposal"]');
  await expect(edit).toHaveText('Edit');
  await edit.click();
  const editor = review.locator('.jp-AutoresearchReviewEditor-editor[data-path="train.py"] .cm-content');
  await expect(editor).toBeVisible();
  await expect(edit).toHaveText('Cancel');
  const approve = review.locator('button[data-command="autoresearch:approve"]');
  await expect(approve).toHaveText('Approve edited');
  await editor.click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type(`\n${EDIT_LINE}\n`);
  await expect(editor).toContainText(EDIT_LINE);
  await page.screenshot({ path: testInfo.outputPath('step-edit.png') });
  await approve.click();

  // #3: Approve all, which leaves step mode.
  await expect(review).toHaveAttribute('data-n', '3', { timeout: 120_000 });
  await expect(approve).toHaveText('Approve');
  await review.locator('button[data-command="autoresearch:approve-all"]').click();
  await expect(review).toBeHidden({ timeout: 30_000 });
  await expect(toggle).toHaveAttribute('aria-pressed', 'false', { timeout: 30_000 });
  // #4 trains unreviewed.
  await expect(item(4)).toBeAttached({ timeout: 120_000 });
  await expect(review).toBeHidden();

  // The experiment outputs say how the reviewer decided.
  // (The list renders outputs near the view: bring #2's in.)
  await item(2).scrollIntoViewIfNeeded();
  await expect(item(2).locator('.jp-AutoresearchExperiment-review')).toContainText(
    /^Review: edited and approved in the panel after \d/,
  );

  await panel.locator('button[data-command="autoresearch:stop"]').click();
  await expect(panel).toHaveAttribute('data-state', 'stopped', { timeout: 60_000 });

  const done = new Map((await experiments(page, ws, tag)).map(e => [e.n, e]));
  expect(done.get(0)?.review).toBeUndefined();
  expect(done.get(1)).toMatchObject({
    status: 'rejected',
    reason: `rejected by reviewer: ${NOTE}`,
    review: { action: 'reject', source: 'panel' },
  });
  expect(done.get(2)?.review).toMatchObject({ action: 'edit', source: 'panel' });
  expect(done.get(2)?.status).not.toBe('rejected');
  expect(done.get(3)?.review).toMatchObject({ action: 'approve', source: 'panel' });
  expect(done.get(4)?.review).toBeUndefined();
});
