/**
 * The panel for keyboards and screen readers, in a real JupyterLab and Debian's Chromium: a
 * workspace cloned from a stand-in repository (its train.py prints its summary at once) and a
 * short run from the CLI, which the panel follows. Then axe-core on the panel, light and dark,
 * with every experiment folded and unfolded (no serious or critical violation); the experiments'
 * headers from the keyboard (Tab to one, Enter, the arrows, Home and End) and what was expanded
 * kept across a reload; the shortcuts (Start, Stop, Resume, Edit program.md, Jump to best, Expand
 * and Collapse all) and the keys they leave alone; the toolbar's controls by the arrow keys; the
 * panel's context menu and the command palette.
 */
import AxeBuilder from '@axe-core/playwright';
import { expect, test } from '@jupyterlab/galata';
import type { Locator, Page } from '@playwright/test';
import { HEADER, panelWithRun } from './run-fixture';

// Wide enough that the toolbar folds nothing into its ⋯ menu (outside the panel's node).
test.use({ autoGoto: true, viewport: { width: 1920, height: 1200 } });
// A clone, five stand-in experiments of well under a second each, and (for the shortcuts) a run
// started, stopped and resumed from the panel, whose kernel takes a few seconds to start.
test.setTimeout(180_000);

// Engines outlive the server by design: a failed test must not leave one running.
test.afterEach(async ({ page, tmpPath }) => {
  await page.request.post('/autoresearch/runs/stop', { data: { path: `${tmpPath}/a11y` } }).catch(() => undefined);
});

/** Experiment n's list item, and its header. */
const itemOf = (panel: Locator, n: number) => panel.locator(`.jp-AutoresearchExperimentList-item[data-n="${n}"]`);
const headerOf = (panel: Locator, n: number) => itemOf(panel, n).locator('.jp-AutoresearchExperiment-header');

/** The number of the experiment whose header has the focus, or null. */
function focusedExperiment(page: Page): Promise<number | null> {
  return page.evaluate(() => {
    const el = document.activeElement;
    const item = el?.matches('.jp-AutoresearchExperiment-header') ? el.closest('[data-n]') : null;
    return item ? Number((item as HTMLElement).dataset.n) : null;
  });
}

/** Axe's serious and critical findings in the panel, one line each. */
async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page })
    .include('.jp-AutoresearchPanel')
    // JupyterLab's own markup, not the panel's: the toolbar's overflow opener (a jp-button with
    // aria-pressed but no button role) and the actions menu vega-embed puts on the chart (a
    // <summary> holding only an icon).
    .exclude('.jp-Toolbar-responsive-opener')
    .exclude('.vega-embed > details')
    .analyze();
  return results.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map(n => n.target.join(' ')).join('; ')}`);
}

test('axe finds no serious or critical violation in the panel, light or dark, folded or not', async ({
  page,
  tmpPath,
}) => {
  const panel = await panelWithRun(page, `${tmpPath}/a11y`);
  // The model field shows for the claude proposer: in the toolbar, it is checked too.
  await panel.locator('.jp-AutoresearchToolbar-proposer').selectOption('claude');
  await expect(panel.locator('.jp-AutoresearchToolbar-model')).toBeVisible();
  expect(await seriousViolations(page)).toEqual([]);
  await page.evaluate(() =>
    (
      window as unknown as { jupyterapp: { commands: { execute(id: string): Promise<unknown> } } }
    ).jupyterapp.commands.execute('autoresearch:expand-all'),
  );
  await expect(panel.locator('.jp-AutoresearchExperimentList-item.jp-mod-collapsed')).toHaveCount(0);
  await expect(panel.locator('.jp-AutoresearchExperiment-diff').first()).toBeVisible();
  expect(await seriousViolations(page)).toEqual([]);
  await page.theme.setDarkTheme();
  await expect(page.locator('body[data-jp-theme-light="false"]')).toBeAttached();
  expect(await seriousViolations(page)).toEqual([]);
});

test('the headers from the keyboard, and what was expanded after a reload', async ({ page, tmpPath }) => {
  const panel = await panelWithRun(page, `${tmpPath}/a11y`);
  // From the panel's own content, Tab reaches the newest experiment's header (after program.md's cell).
  await panel.locator('.jp-AutoresearchRunStrip').click();
  let presses = 0;
  // Past program.md's cell and the filter bar (its status buttons, search, Show all, Compare).
  while ((await focusedExperiment(page)) === null && presses < 25) {
    await page.keyboard.press('Tab');
    presses += 1;
  }
  expect(await focusedExperiment(page)).toBe(4);
  const header = (n: number) => headerOf(panel, n);
  await expect(header(4)).toHaveAttribute('role', 'button');
  const before = await header(4).getAttribute('aria-expanded');
  const toggled = before === 'true' ? 'false' : 'true';

  // The state database is written through the workspace, which Galata keeps in memory: wait for
  // the write that holds this run's expansion (#4 flipped from the default) before reloading.
  const saved = page.waitForRequest(
    r =>
      r.method() === 'PUT' &&
      /api\/workspaces/.test(r.url()) &&
      /autoresearch:expanded:[^"]*:a1":\{"base":"kept","flipped":\[4\]\}/.test(r.postData() ?? ''),
  );
  await page.keyboard.press('Enter');
  await expect(header(4)).toHaveAttribute('aria-expanded', toggled);
  if (toggled === 'true') {
    await expect(itemOf(panel, 4)).not.toHaveClass(/jp-mod-collapsed/);
  } else {
    await expect(itemOf(panel, 4)).toHaveClass(/jp-mod-collapsed/);
  }
  await page.keyboard.press('Space');
  await expect(header(4)).toHaveAttribute('aria-expanded', before!);
  await page.keyboard.press('Space');
  await expect(header(4)).toHaveAttribute('aria-expanded', toggled);

  await page.keyboard.press('ArrowDown');
  await expect.poll(() => focusedExperiment(page)).toBe(3);
  await page.keyboard.press('End');
  await expect.poll(() => focusedExperiment(page)).toBe(0);
  await page.keyboard.press('ArrowUp');
  await expect.poll(() => focusedExperiment(page)).toBe(1);
  await page.keyboard.press('Home');
  await expect.poll(() => focusedExperiment(page)).toBe(4);

  await saved;
  await page.reload({ waitForIsReady: false });
  await page.locator('#jupyterlab-splash').waitFor({ state: 'detached' });
  await expect(panel).toHaveAttribute('data-experiments', '5', { timeout: 30_000 });
  await expect(header(4)).toHaveAttribute('aria-expanded', toggled);
});

test('the shortcuts, the toolbar by the arrow keys, the context menu and the palette', async ({ page, tmpPath }) => {
  const panel = await panelWithRun(page, `${tmpPath}/a11y`);
  const items = panel.locator('.jp-AutoresearchExperimentList-item');
  await panel.locator(HEADER).first().focus();

  // Ctrl+Shift+→ and ← unfold and fold them all, as a notebook's headings.
  await page.keyboard.press('Control+Shift+ArrowRight');
  await expect(items.and(panel.locator('.jp-mod-collapsed'))).toHaveCount(0);
  await page.keyboard.press('Control+Shift+ArrowLeft');
  await expect(items.and(panel.locator('.jp-mod-collapsed'))).toHaveCount(5);

  // B: the best experiment, expanded, its header focused.
  const best = Number(
    /\(#(\d+)\)/.exec((await panel.locator('.jp-AutoresearchRunStrip-best').textContent()) ?? '')?.[1],
  );
  expect(Number.isInteger(best)).toBe(true);
  await page.keyboard.press('b');
  await expect.poll(() => focusedExperiment(page)).toBe(best);
  await expect(itemOf(panel, best)).not.toHaveClass(/jp-mod-collapsed/);

  // E: program.md's editor. The panel's letter shortcuts leave what is typed there alone.
  await page.keyboard.press('e');
  const editor = panel.locator('.jp-AutoresearchProgram-cell .cm-content');
  await expect(editor).toBeFocused();
  await page.keyboard.press('Control+End');
  await page.keyboard.type(' Be bold; iib.');
  await expect(editor).toContainText('Be bold; iib.');
  await page.keyboard.press('Escape');
  await expect(panel.locator('.jp-AutoresearchProgram-cell .jp-RenderedMarkdown')).toContainText('Be bold; iib.');
  await expect(panel).toHaveAttribute('data-state', 'stopped');

  // Ctrl+Enter starts a run with the toolbar's settings, I I stops it, Ctrl+Shift+Enter resumes it.
  await panel.locator(HEADER).first().focus();
  await page.keyboard.press('Control+Enter');
  await expect(panel).toHaveAttribute('data-state', 'running', { timeout: 60_000 });
  await panel.locator(HEADER).first().focus();
  await page.keyboard.press('i');
  await page.keyboard.press('i');
  await expect(panel).toHaveAttribute('data-state', 'stopped', { timeout: 60_000 });
  await panel.locator(HEADER).first().focus();
  await page.keyboard.press('Control+Shift+Enter');
  await expect(panel).toHaveAttribute('data-state', 'running', { timeout: 60_000 });
  await panel.locator('button[data-command="autoresearch:stop"]').click();
  await expect(panel).toHaveAttribute('data-state', 'stopped', { timeout: 60_000 });

  // The toolbar is one Tab stop (JupyterLab's toolbar pattern); the arrow keys reach each control.
  const exportButton = panel.locator('button[data-command="autoresearch:export"]');
  await expect(exportButton).toBeEnabled();
  await panel.locator('.jp-AutoresearchToolbar-runs').focus();
  let presses = 0;
  while (!(await exportButton.evaluate(el => el === document.activeElement)) && presses < 8) {
    await page.keyboard.press('ArrowLeft');
    presses += 1;
  }
  await expect(exportButton).toBeFocused();
  // The next run's fields are a row of ordinary Tab stops: the model field comes after the
  // proposer once the claude proposer shows it, and the caret keys stay the field's.
  await panel.locator('.jp-AutoresearchToolbar-proposer').selectOption('claude');
  const model = panel.locator('.jp-AutoresearchToolbar-model');
  await expect(model).toBeVisible();
  await panel.locator('.jp-AutoresearchToolbar-proposer').focus();
  await page.keyboard.press('Tab');
  await expect(model).toBeFocused();
  await page.keyboard.type('claude-x');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.type('y');
  await expect(model).toHaveValue('claude-yx');
  await expect(model).toBeFocused();

  // The panel's context menu: its commands, for the panel right-clicked.
  await panel.locator('.jp-AutoresearchRunStrip').click({ button: 'right' });
  const menu = page.locator('.lm-Menu');
  for (const label of ['Start', 'Resume', 'Export as notebook', 'Edit program.md', 'Jump to best experiment']) {
    await expect(menu.locator('.lm-Menu-itemLabel', { hasText: new RegExp(`^${label}$`) })).toBeVisible();
  }
  await expect(menu.locator('.lm-Menu-item', { hasText: 'Expand all experiments' })).toBeVisible();
  await page.keyboard.press('Escape');

  // The palette: the panel in focus's commands, with their shortcuts.
  await panel.locator(HEADER).first().focus();
  await page.keyboard.press('Control+Shift+C');
  await page.locator('.lm-CommandPalette-input').fill('Autoresearch');
  const palette = page.locator('.lm-CommandPalette-item');
  for (const label of ['Start', 'Stop', 'Resume', 'Export as notebook', 'Jump to best experiment']) {
    await expect(
      palette.filter({ has: page.locator('.lm-CommandPalette-itemLabel', { hasText: new RegExp(`^${label}$`) }) }),
    ).toHaveCount(1);
  }
  const expandAll = palette.filter({ hasText: 'Expand all experiments' });
  await expect(expandAll.locator('.lm-CommandPalette-itemShortcut')).toHaveText(
    /Ctrl\s*\+?\s*Shift\s*\+?\s*→|Ctrl.*Shift.*Right/i,
  );
  await expandAll.click();
  await expect(items.and(panel.locator('.jp-mod-collapsed'))).toHaveCount(0);
});
