/**
 * The panel at a real size, in a real JupyterLab and Debian's Chromium: a tiny-cpu run of 21
 * experiments (the baseline and 20, the real engine and the offline proposer, a 1-second budget),
 * then two more proposals in step mode, each waiting for its reviewer. Viewed at 760 px (the file
 * browser open beside it, which leaves the panel about 430 px) and at 1,400 px wide, in the light
 * and the dark theme:
 * - nothing scrolls sideways: the panel, its toolbar and each of its rows (the next run's fields
 *   and kernel picker, the run strip, program.md, the chart, the review card, the filter, a
 *   comparison, the experiments) are no wider than they are shown;
 * - a proposal's notification is a toast only while the panel is out of view (one per proposal,
 *   gone once decided), and the card's Reject and Approve all stay clickable (Playwright's
 *   actionability check) while a notification shows: the proposal's own, in the notification
 *   center, and another's toast;
 * - the strip, the best's own header, the chart's noise line and the status bar show the same
 *   best, ± and σ (ui-tests/panel-figures.ts);
 * - no console error and no failed request (status 400 or more) from the first page load on.
 * Screenshots of the panel's top (toolbar, next run, strip, program.md, chart) at each width and
 * theme are snapshots (ui-tests/real-size.spec.ts-snapshots/); what a wall-clock budget makes
 * differ from one run to the next (the figures, the chart's marks) is masked or hidden.
 */
import * as path from 'node:path';
import { expect, test } from '@jupyterlab/galata';
import type { Locator, Page } from '@playwright/test';
import { cli, startCli } from '../test/helpers/workspace';
import { expectOneValue, panelFigures } from './panel-figures';
import { execute } from './commands';

test.use({ autoGoto: true, viewport: { width: 1400, height: 900 } });
// The 21 experiments (22 runs) take 3 to 7 minutes on two cores (each run is a Python start with
// torch, 1 s of training and an evaluation: 7 s alone, 15 s with the cores shared); the views after
// them, a minute or two.
test.setTimeout(600_000);

const TAG = 'r1';
/**
 * The run's flags: the real engine at a 1-second budget, one run per experiment after the
 * baseline's two (which measure σ, so the strip, the header and the chart carry their ± and σ).
 */
const RUN = [
  '--tag',
  TAG,
  '--proposer',
  'offline',
  '--seed',
  '7',
  '--budget',
  '1',
  '--noise-runs',
  '2',
  '--confirm-runs',
  '0',
];
/** Room for anti-aliasing and the masked figures' neighbours, no more. */
const SCREENSHOT = { maxDiffPixelRatio: 0.01 };
/**
 * Holds still what a wall-clock budget changes from one run to the next, so the snapshots show the
 * layout: the best's and the noise line's words take a fixed room (they are masked as well), the
 * chart keeps its frame, titles and legend but not what the figures place.
 */
const STEADY = path.join(__dirname, 'real-size-steady.css');

test.afterEach(async ({ page, tmpPath }) => {
  await page.request.post('/autoresearch/runs/stop', { data: { path: `${tmpPath}/real` } }).catch(() => undefined);
});

/** The messages in JupyterLab's notification center (opened and closed again with the bell's command). */
async function notificationCenter(page: Page): Promise<string[]> {
  await execute(page, 'apputils:display-notifications', {});
  const center = page.locator('.jp-Notification-Center');
  await expect(center).toBeVisible();
  const messages = await center.locator('.jp-toast-message').allTextContents();
  await execute(page, 'apputils:display-notifications', {});
  await expect(center).toBeHidden();
  return messages;
}

/**
 * What scrolls sideways in the panel: the panel, its toolbar, its content and each row shown,
 * and any box inside them that scrolls (its own scrollbar is a sideways scroll too), as
 * `what: scrollWidth > clientWidth`. Empty when nothing does.
 */
function sidewaysScrolls(panel: Locator): Promise<string[]> {
  return panel.evaluate(node => {
    const name = (el: Element) =>
      `${el.tagName.toLowerCase()}.${[...el.classList].filter(c => c.startsWith('jp-')).join('.')}`;
    const out: string[] = [];
    const check = (el: Element) => {
      if (el.scrollWidth > el.clientWidth) {
        out.push(`${name(el)}: ${el.scrollWidth} > ${el.clientWidth}`);
      }
    };
    const content = node.querySelector('.jp-AutoresearchPanel-content')!;
    const rows = [...content.children].filter(row => (row as HTMLElement).offsetParent !== null);
    [node, node.querySelector('.jp-Toolbar')!, content, ...rows].forEach(check);
    for (const el of node.querySelectorAll('*')) {
      const { overflowX } = getComputedStyle(el);
      if ((overflowX === 'auto' || overflowX === 'scroll') && (el as HTMLElement).offsetParent !== null) {
        check(el);
      }
    }
    return [...new Set(out)];
  });
}

/** Each row of the panel this test expects to see, by its class: all must be shown for the check to mean anything. */
const ROWS = [
  '.jp-AutoresearchNextRun',
  '.jp-AutoresearchToolbar-kernelItem',
  '.jp-AutoresearchRunStrip',
  '.jp-AutoresearchProgram',
  '.jp-AutoresearchChart',
  '.jp-AutoresearchReview',
  '.jp-AutoresearchFilter',
  '.jp-AutoresearchCompare',
  '.jp-AutoresearchExperimentList',
];

test('a real run of 21 experiments at 760 and 1,400 px, light and dark: no sideways scroll, the review reachable', async ({
  page,
  tmpPath,
}) => {
  const errors: string[] = [];
  page.on('console', message => {
    if (message.type() === 'error') {
      errors.push(message.text());
    }
  });
  page.on('response', response => {
    if (response.status() >= 400) {
      errors.push(`${response.status()} ${response.request().method()} ${response.url()}`);
    }
  });
  page.on('requestfailed', request => {
    // An event stream closed on purpose (a page leaving) is not a failure of the panel's.
    if (!/ERR_ABORTED/.test(request.failure()?.errorText ?? '')) {
      errors.push(`failed ${request.method()} ${request.url()}: ${request.failure()?.errorText}`);
    }
  });

  const ws = `${tmpPath}/real`;
  await execute(page, 'autoresearch:new-workspace', { path: ws, budget_s: 1 });
  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel.locator('.jp-AutoresearchRunStrip-state')).toHaveText('no runs yet', { timeout: 30_000 });
  const root = await page.evaluate(
    () =>
      (JSON.parse(document.getElementById('jupyter-config-data')!.textContent!) as { serverRoot: string }).serverRoot,
  );
  const dir = path.join(root, ws);

  // The run, from the CLI on the server's files as from a terminal; the panel follows it live.
  const started = Date.now();
  const run = await cli(['run', dir, ...RUN, '--max-experiments', '20']);
  expect(run.code, run.stderr).toBe(0);
  await expect(panel).toHaveAttribute('data-experiments', '21', { timeout: 60_000 });
  console.log(`21 tiny-cpu experiments in ${Math.round((Date.now() - started) / 1000)} s`);

  // One more proposal, in step mode, while the panel is out of view: a toast says so.
  await execute(page, 'launcher:create', {});
  await expect(panel).toBeHidden();
  const engine = startCli(['run', dir, ...RUN, '--resume', '--step', '--more-experiments', '2']);
  try {
    const toast = page.locator('.Toastify__toast', { hasText: '#21 awaits review' });
    await expect(toast).toHaveCount(1, { timeout: 120_000 });
    // Its Review brings the panel and the card; the toast gives way to the card, which is the notice.
    await toast.getByRole('button', { name: 'Review' }).click();
    await expect(panel).toBeVisible();
    const review = panel.locator('.jp-AutoresearchReview');
    await expect(review).toHaveAttribute('data-n', '21');
    await expect(toast).toHaveCount(0);
    // The notification is still there, once, in the notification center the status bar's bell opens.
    const pending = async () => (await notificationCenter(page)).filter(m => m.includes('awaits review'));
    expect(await pending()).toEqual([expect.stringContaining('#21 awaits review')]);
    const reject = review.locator('button[data-command="autoresearch:reject"]');
    const approveAll = review.locator('button[data-command="autoresearch:approve-all"]');
    await expect(reject).toBeEnabled({ timeout: 30_000 });

    // A comparison open too, so its row is measured: #1 against the best.
    await panel.locator('.jp-AutoresearchExperimentList-item[data-n="1"] .jp-AutoresearchCompare-pick input').check();
    await panel.locator('.jp-AutoresearchCompare-open').click();
    await expect(panel.locator('.jp-AutoresearchCompare')).toHaveAttribute('data-a', '1', { timeout: 30_000 });

    for (const width of [760, 1400]) {
      await page.setViewportSize({ width, height: 900 });
      for (const theme of ['light', 'dark'] as const) {
        await (theme === 'light' ? page.theme.setLightTheme() : page.theme.setDarkTheme());
        const where = `${width} px, ${theme}`;
        for (const row of ROWS) {
          await expect(panel.locator(row).first(), `${row} at ${where}`).toBeVisible();
        }
        // Once the chart has been redrawn for this width (it redraws on a resize, not at once).
        await expect.poll(() => sidewaysScrolls(panel), { message: where, timeout: 15_000 }).toEqual([]);

        // One figure, one value at this size too: the strip, the best's header, the chart, the status bar.
        expectOneValue(await panelFigures(page, panel), where);

        // Reachable with the proposal's notification up (in the center), and with another's toast over the page.
        await reject.click({ trial: true });
        await approveAll.click({ trial: true });
        const id = await execute(page, 'apputils:notify', {
          message: `Galata: another notification at ${where}`,
          type: 'info',
          options: { autoClose: false },
        });
        const other = page.locator('.Toastify__toast', { hasText: `another notification at ${where}` });
        await expect(other).toBeVisible();
        await reject.click({ trial: true });
        await approveAll.click({ trial: true });
        await execute(page, 'apputils:dismiss-notification', { id });
        await expect(other).toHaveCount(0);

        // The panel's top as the user sees it: toolbar, next run, strip, program.md, the chart.
        await panel.locator('.jp-AutoresearchPanel-content').evaluate(c => c.scrollTo(0, 0));
        await page.mouse.move(0, 0);
        await expect(panel).toHaveScreenshot(`panel-${width}-${theme}.png`, {
          ...SCREENSHOT,
          stylePath: STEADY,
          mask: [
            panel.locator('.jp-AutoresearchRunStrip-best'),
            panel.locator('.jp-AutoresearchRunStrip-state'),
            panel.locator('.jp-AutoresearchChart-noise'),
            panel.locator('.jp-AutoresearchToolbar-tag'),
          ],
        });
      }
    }

    // Decided from the panel: the notification goes with the proposal. The next one comes while
    // the panel is in view: no toast over the card, one quiet entry, the buttons reachable at once.
    await page.setViewportSize({ width: 760, height: 900 });
    await review.locator('.jp-AutoresearchReview-note').fill('Galata: not this one');
    await reject.click();
    await expect(review).toHaveAttribute('data-n', '22', { timeout: 120_000 });
    await expect(reject).toBeEnabled({ timeout: 30_000 });
    await expect(page.locator('.Toastify__toast', { hasText: 'awaits review' })).toHaveCount(0);
    expect(await pending()).toEqual([expect.stringContaining('#22 awaits review')]);
    await approveAll.click({ trial: true });
    await reject.click();
    await expect(panel.locator('.jp-AutoresearchExperimentList-item[data-n="22"]')).toBeAttached({ timeout: 60_000 });
    await expect.poll(pending).toEqual([]);
  } finally {
    engine.kill('SIGTERM');
  }
  expect(errors).toEqual([]);
});
