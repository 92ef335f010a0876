/**
 * One figure, one value, and state you can trust, in a real JupyterLab and Debian's Chromium with
 * a real run of a stand-in whose metric is noisy (its seed moves it), so σ is measured and the
 * best is a mean with a ±:
 * - while it runs, the strip's phase is what the engine says (training counted down, then
 *   evaluating only after the run printed its `evaluating` line, never both at once), and every
 *   disabled control of the panel says why in its tooltip;
 * - once it ends, the strip, the best's own header, the chart's noise line and the status bar
 *   show the same best, ± and σ (df);
 * - step mode turned on and a proposal arriving cause no console error and no failed request.
 */
import * as path from 'node:path';
import { expect, test } from '@jupyterlab/galata';
import type { Locator, Page } from '@playwright/test';
import { expectOneValue, panelFigures } from './panel-figures';
import { finished, makeWorkspace, STAND_IN_PROGRAM, standInTrain, startCli } from '../test/helpers/workspace';
import { execute } from './commands';

test.use({ autoGoto: true, viewport: { width: 1400, height: 1000 } });
test.setTimeout(300_000);

// A failed test must not leave its engine running (or waiting for a reviewer) after the server is gone.
test.afterEach(async ({ page, tmpPath }) => {
  for (const ws of ['figures', 'quiet']) {
    await page.request.post('/autoresearch/runs/stop', { data: { path: `${tmpPath}/${ws}` } }).catch(() => undefined);
  }
});

/**
 * The stand-in's train.py: trains (sleeps) past its 1 s budget, says `evaluating`, evaluates
 * (sleeps), then prints a metric that the tuned constants set and the run's seed shakes.
 */
function noisyTrain(trainS: number, evalS: number): string {
  return standInTrain({ noSummary: true }).concat(
    [
      'import random',
      `time.sleep(${trainS})`,
      'print("evaluating val_bpb", flush=True)',
      `time.sleep(${evalS})`,
      'seed = int(os.environ.get("AUTORESEARCH_SEED", "0"))',
      'bpb = 1.0 + (math.log2(LEARNING_RATE) - math.log2(0.004)) ** 2 * 0.01 + (N_LAYER - 6) ** 2 * 0.01',
      'bpb += random.Random(seed).gauss(0, 0.01)',
      'print("---")',
      'print("val_bpb:          %.6f" % bpb)',
      'print("training_seconds: 1.0")',
      '',
    ].join('\n'),
  );
}

/** A new workspace cloned from a stand-in repository with this train.py, its panel open. */
async function workspace(page: Page, ws: string, train: string): Promise<Locator> {
  const origin = makeWorkspace({ program: STAND_IN_PROGRAM, train });
  await execute(page, 'autoresearch:new-workspace', { path: ws, from: origin });
  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel.locator('.jp-AutoresearchRunStrip-state')).toHaveText('no runs yet', { timeout: 30_000 });
  return panel;
}

/** The server's root folder, where the CLI finds the workspace. */
async function serverRoot(page: Page): Promise<string> {
  return page.evaluate(
    () =>
      (JSON.parse(document.getElementById('jupyter-config-data')!.textContent!) as { serverRoot: string }).serverRoot,
  );
}

/** Each disabled control of the panel (its toolbar included) with what it says of itself. */
async function disabledControls(panel: Locator): Promise<Array<{ what: string; why: string }>> {
  return panel.evaluate(root => {
    const host = root.closest('.lm-Widget.jp-MainAreaWidget') ?? root;
    return [
      ...host.querySelectorAll<HTMLElement>('button:disabled, input:disabled, select:disabled, textarea:disabled'),
    ]
      .filter(el => el.getClientRects().length > 0)
      .map(el => {
        const described = (el.getAttribute('aria-describedby') ?? '')
          .split(/\s+/)
          .map(id => (id ? (document.getElementById(id)?.textContent ?? '') : ''))
          .join(' ');
        return {
          what: el.getAttribute('data-command') ?? el.className,
          why: [el.title, el.getAttribute('aria-description') ?? '', described].join(' ').trim(),
        };
      });
  });
}

test('the strip’s phase, disabled controls’ reasons, and one value for each figure', async ({ page, tmpPath }) => {
  const ws = `${tmpPath}/figures`;
  const panel = await workspace(page, ws, noisyTrain(2, 1.5));
  const strip = panel.locator('.jp-AutoresearchRunStrip-state');
  // Every text the strip shows, recorded in the page as it changes.
  await strip.evaluate(node => {
    const seen: string[] = [];
    (window as unknown as { stripTexts: string[] }).stripTexts = seen;
    new MutationObserver(() => seen.push(node.textContent ?? '')).observe(node, {
      childList: true,
      characterData: true,
      subtree: true,
    });
  });
  const args = ['--tag', 'f1', '--max-experiments', '3', '--proposer', 'offline', '--noise-runs', '3'];
  const run = finished(startCli(['run', path.join(await serverRoot(page), ws), ...args]));

  // While it runs: a countdown, then evaluating once the run said so.
  await expect(strip).toHaveText(/^#0 training(, noise run \d)? · \d+ s (left|past the budget)$/, { timeout: 60_000 });
  await expect(strip).toHaveText(/^#\d+ evaluating$/, { timeout: 60_000 });
  const off = await disabledControls(panel);
  expect(off.map(c => c.what)).toEqual(expect.arrayContaining(['autoresearch:start', 'autoresearch:transfer']));
  for (const control of off) {
    expect(control.why, control.what).toMatch(/\S/);
  }
  const transfer = off.find(c => c.what === 'autoresearch:transfer')!;
  expect(transfer.why).toContain('Unavailable now: the run is going on');

  const done = await run;
  expect(done.code, done.stderr).toBe(0);
  await expect(panel).toHaveAttribute('data-state', /stopped|died/, { timeout: 60_000 });
  await expect(panel).toHaveAttribute('data-experiments', '4', { timeout: 30_000 });

  const texts = await page.evaluate(() => (window as unknown as { stripTexts: string[] }).stripTexts);
  // Never the old guess: "training · evaluating" from the experiment's start.
  expect(texts.filter(t => /training.*evaluating/.test(t))).toEqual([]);
  // Evaluating is said of an experiment only after its training was.
  for (const [i, text] of texts.entries()) {
    const n = /^#(\d+) evaluating$/.exec(text)?.[1];
    if (n !== undefined) {
      expect(texts.slice(0, i).some(t => t.startsWith(`#${n} training`) || t.startsWith(`#${n} re-measuring`))).toBe(
        true,
      );
    }
  }

  // Stopped: every disabled control still says why.
  for (const control of await disabledControls(panel)) {
    expect(control.why, control.what).toMatch(/\S/);
  }

  // The strip, the best's own header, the chart's noise line and the status bar: one value each.
  expectOneValue(await panelFigures(page, panel));
});

test('step mode on and a proposal arriving: no console error, no failed request', async ({ page, tmpPath }) => {
  const problems: string[] = [];
  page.on('console', message => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('response', response => {
    if (response.status() >= 400)
      problems.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  const ws = `${tmpPath}/quiet`;
  const panel = await workspace(page, ws, noisyTrain(0.2, 0.2));
  await panel.locator('.jp-AutoresearchToolbar-proposer').selectOption('offline');
  const toggle = panel.locator('button[data-command="autoresearch:review-each"]');
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-pressed', 'true');
  await panel.locator('button[data-command="autoresearch:start"]').click();
  const review = panel.locator('.jp-AutoresearchReview');
  await expect(review).toHaveAttribute('data-n', '1', { timeout: 120_000 });
  await expect(review.locator('.jp-AutoresearchExperiment-diffLine.jp-mod-add').first()).toBeAttached();
  // The decision, then the next proposal offered: the panel asks GET review around both.
  await review.locator('button[data-command="autoresearch:approve"]').click();
  await expect(review).toHaveAttribute('data-n', '2', { timeout: 120_000 });
  await panel.locator('button[data-command="autoresearch:stop"]').click();
  await expect(panel).toHaveAttribute('data-state', /stopped|died/, { timeout: 60_000 });
  expect(problems).toEqual([]);
});
