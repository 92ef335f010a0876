/**
 * A notebook's kernel and a workspace from a repository, end to end in a real JupyterLab and
 * Debian's Chromium. *New Autoresearch Workspace* clones a local git repository laid out like the
 * original (program.md without front matter, prepare.py, train.py), after showing the server's
 * refusal of a path that is no repository. Then a notebook in that workspace, its kernel started
 * and holding a variable: *Autoresearch with this kernel* (the notebook's toolbar button; the
 * context menu has it too) opens the panel with that kernel chosen; Start with *this very kernel*
 * shows the notebook's kernel busy while the experiment trains in it, the experiment lands, and
 * after Stop the notebook still runs cells in the same kernel, its variable intact.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Page } from '@playwright/test';
import { makeWorkspace, standInTrain } from '../test/helpers/workspace';
import { execute } from './commands';

test.use({ autoGoto: true, viewport: { width: 1600, height: 1000 } });
// Three runs of the baseline (the noise) of ~4 s each in the kernel, with the kernel's start-up.
test.setTimeout(240_000);

// Engines outlive the server by design: a failed test must not leave one training.
test.afterEach(async ({ page, tmpPath }) => {
  await page.request.post('/autoresearch/runs/stop', { data: { path: `${tmpPath}/from-repo` } }).catch(() => undefined);
});

/** The original's layout: program.md with no front matter, prepare.py, and a train.py that trains for ~3 s. */
const PROGRAM = '# Tune the stand-in\n\nMake val_bpb lower. Change train.py only.\n';

function originRepository(): string {
  return makeWorkspace({
    program: PROGRAM,
    train: standInTrain({ sleep: 3 }),
  });
}

/** Runs a JupyterLab command without waiting for it (it may open a dialog). */
async function startCommand(page: Page, command: string, args: Record<string, unknown> = {}): Promise<void> {
  await page.evaluate(
    ([id, a]) =>
      void (
        window as unknown as { jupyterapp: { commands: { execute(id: string, a: unknown): Promise<unknown> } } }
      ).jupyterapp.commands.execute(id, a),
    [command, args] as const,
  );
}

async function readFile(page: Page, path: string): Promise<string> {
  const response = await page.request.get(`/api/contents/${path}?content=1&type=file&format=text`);
  expect(response.ok()).toBe(true);
  return ((await response.json()) as { content: string }).content;
}

test('a new workspace from a repository: the clone’s refusal shown, then the workspace opened', async ({
  page,
  tmpPath,
}) => {
  const origin = originRepository();
  const ws = `${tmpPath}/cloned`;
  await startCommand(page, 'autoresearch:new-workspace');
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-AutoresearchNewWorkspace')).toBeVisible();
  // The template is the default: the repository's fields wait for the other choice.
  await expect(dialog.locator('input.jp-AutoresearchNewWorkspace-template')).toBeChecked();
  await expect(dialog.locator('.jp-AutoresearchNewWorkspace-from')).toBeDisabled();
  await dialog.locator('.jp-AutoresearchNewWorkspace-folder').fill(ws);
  await dialog.locator('input.jp-AutoresearchNewWorkspace-repository').check();
  await dialog.locator('.jp-AutoresearchNewWorkspace-from').fill(`${origin}-missing`);
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();
  // The server's refusal, in the dialog asked again, the fields kept.
  await expect(dialog.locator('.jp-AutoresearchNewWorkspace-error')).toContainText('cannot clone', {
    timeout: 30_000,
  });
  await expect(dialog.locator('.jp-AutoresearchNewWorkspace-folder')).toHaveValue(ws);
  await expect(dialog.locator('input.jp-AutoresearchNewWorkspace-repository')).toBeChecked();
  await dialog.locator('.jp-AutoresearchNewWorkspace-from').fill(origin);
  await dialog.locator('.jp-AutoresearchNewWorkspace-ref').fill('main');
  await dialog.locator('.jp-Dialog-button.jp-mod-accept').click();

  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel).toBeVisible({ timeout: 30_000 });
  await expect(dialog).toHaveCount(0);
  await expect(panel.locator('.jp-AutoresearchProgram-cell .jp-RenderedMarkdown')).toContainText('Make val_bpb lower');
  await expect(panel.locator('.jp-AutoresearchRunStrip-state')).toHaveText('no runs yet');
  // The clone, as committed: program.md as written (no front matter added), train.py.
  expect(await readFile(page, `${ws}/program.md`)).toBe(PROGRAM);
  expect(await readFile(page, `${ws}/train.py`)).toContain('time.sleep(3)');
});

test('a notebook’s very kernel: chosen from the notebook, busy while it trains, still usable after Stop', async ({
  page,
  tmpPath,
}, testInfo) => {
  const ws = `${tmpPath}/from-repo`;
  const notebookPath = `${ws}/train-gpu.ipynb`;
  await execute(page, 'autoresearch:new-workspace', { path: ws, from: originRepository() });
  await expect(page.locator('.jp-AutoresearchPanel')).toBeVisible({ timeout: 30_000 });
  await page.activity.closeAll();

  // A notebook in the workspace, its kernel started, with state of its own.
  await page.contents.uploadContent(
    JSON.stringify({
      cells: [{ cell_type: 'code', source: 'answer = 6 * 7', metadata: {}, outputs: [], execution_count: null }],
      metadata: { kernelspec: { name: 'python3', display_name: 'Python 3 (ipykernel)', language: 'python' } },
      nbformat: 4,
      nbformat_minor: 5,
    }),
    'text',
    notebookPath,
  );
  await page.filebrowser.openDirectory(ws);
  await page.notebook.openByPath(notebookPath);
  const notebook = page.locator('.jp-NotebookPanel');
  const indicator = notebook.locator('.jp-Notebook-ExecutionIndicator');
  await expect(indicator).toHaveAttribute('data-status', 'idle', { timeout: 60_000 });
  await page.notebook.runCell(0);

  // The notebook's context menu offers it; its toolbar button runs it.
  await notebook.locator('.jp-Notebook').click({ button: 'right', position: { x: 200, y: 300 } });
  await expect(page.locator('.lm-Menu-item', { hasText: 'Autoresearch with this kernel' })).toBeVisible();
  await page.keyboard.press('Escape');
  await notebook.locator('[data-command="autoresearch:open-with-kernel"]').click();

  const panel = page.locator('.jp-AutoresearchPanel');
  await expect(panel).toBeVisible();
  const picker = panel.locator('.jp-AutoresearchToolbar-kernel');
  await expect(picker).toHaveValue(`notebook:${notebookPath}`);
  await expect(picker.locator('optgroup[label="Open notebooks"] option')).toHaveText([
    'train-gpu.ipynb — Python 3 (ipykernel)',
  ]);
  const mode = panel.locator('.jp-AutoresearchToolbar-kernelMode');
  await expect(mode).toBeVisible();
  await expect(mode).toHaveValue('environment'); // the default: the notebook stays free
  await mode.selectOption('attach');
  await panel.locator('.jp-AutoresearchToolbar-proposer').selectOption('offline');
  await panel.locator('.jp-AutoresearchToolbar-budget').fill('5');

  // Side by side, so the notebook's toolbar shows its kernel's state while the panel runs.
  await page.evaluate(() => {
    const app = (
      window as unknown as {
        jupyterapp: {
          shell: {
            widgets(a: string): Iterable<{ id: string; hasClass(c: string): boolean }>;
            add(w: unknown, a: string, o: unknown): void;
          };
        };
      }
    ).jupyterapp;
    const panel = [...app.shell.widgets('main')].find(w => w.hasClass('jp-AutoresearchPanel'));
    app.shell.add(panel, 'main', { mode: 'split-right' });
  });
  // Narrower now, the toolbar folds its buttons into its overflow menu: run them as commands.
  await execute(page, 'autoresearch:start', { path: ws });
  await expect(panel).toHaveAttribute('data-state', 'running', { timeout: 30_000 });
  // The experiment trains in the notebook's kernel: the notebook shows it busy.
  await expect(indicator).toHaveAttribute('data-status', 'busy', { timeout: 60_000 });
  await page.screenshot({ path: testInfo.outputPath('notebook-kernel-busy.png') });
  await expect
    .poll(async () => Number(await panel.getAttribute('data-experiments')), { timeout: 150_000 })
    .toBeGreaterThanOrEqual(1);
  const baseline = panel.locator('.jp-AutoresearchExperimentList-item').last();
  await expect(baseline.locator('.jp-AutoresearchExperiment-status')).toHaveText('keep');

  await execute(page, 'autoresearch:stop', { path: ws });
  await expect(panel).toHaveAttribute('data-state', 'stopped', { timeout: 60_000 });
  // The engine never shuts an attached kernel down: the notebook's state is still there.
  await expect(indicator).toHaveAttribute('data-status', 'idle', { timeout: 30_000 });
  await page.activity.activateTab('train-gpu.ipynb');
  await page.notebook.setCell(0, 'code', 'print(answer + 1)');
  await page.notebook.runCell(0);
  await page.screenshot({ path: testInfo.outputPath('notebook-after-stop.png') });
  await expect(notebook.locator('.jp-Cell').first().locator('.jp-OutputArea-output')).toHaveText('43');
});
