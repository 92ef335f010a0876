#!/usr/bin/env node
// scripts/readme-pictures.mjs: the README's pictures, made again from a real run (`make pictures`).
//
// 1. A tiny-cpu workspace under a temp server root, and a real short run on it through the
//    engine's command (lib/engine/autoresearch.cjs): budget 5 s, offline proposer, 6 experiments
//    after the baseline, the strict keep rule; torch trains on the CPU with .venv's Python.
// 2. A token-less JupyterLab from .venv on a free 127.0.0.1 port serves that root (its own
//    settings and workspaces folders in the temp folder, so nothing of the user's is read or
//    written); Debian's Chromium (/usr/bin/chromium, never a downloaded browser) loads /lab at
//    1400×900. `autoresearch:open` opens the panel; once it has replayed every experiment and
//    drawn the chart, with the file browser collapsed, the main area is saved as it opened
//    (program.md, the chart) as docs/images/panel-light.png; then in JupyterLab Dark, once the
//    chart is redrawn in it, scrolled to the chart and the newest experiments under it, as
//    docs/images/panel-dark.png; then back to the light theme.
// 3. `autoresearch export` writes the run as <tag>.ipynb; opened with `docmanager:open`, once
//    its experiment outputs are rendered, scrolled to the first (the baseline), the main area is
//    saved as docs/images/exported-notebook.png.
// A picture with an error on it (the panel's error notice, an experiment output's error, an
// error toast) fails the script rather than land in the README.
//
// Env: CHROMIUM (/usr/bin/chromium), PICTURES_OUT (docs/images), PICTURES_KEEP=1 keeps the temp folder.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, labScratch, startLab } from '../bench/common.mjs';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const { chromium } = await import('@playwright/test');

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const VENV_BIN = path.join(ROOT, '.venv', 'bin');
const ENGINE = path.join(ROOT, 'lib', 'engine', 'autoresearch.cjs');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const OUT = path.resolve(ROOT, process.env.PICTURES_OUT ?? path.join('docs', 'images'));
const WS = 'tiny-cpu'; // the workspace's folder under the server root: the panel's title
const TAG = 'readme';
const EXPERIMENTS = 6; // after the baseline
const MAX_BYTES = 400 * 1024;
const WAIT_MS = 90_000;

const started = Date.now();
const { tmp, serverRoot, onSpawn, cleanup } = labScratch('ar-readme-pictures-', 'PICTURES_KEEP');
const wsDir = path.join(serverRoot, WS);
let browser = null;

const sleep = ms => new Promise(r => setTimeout(r, ms));
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
const log = msg => console.log(`readme-pictures [${elapsed()}]: ${msg}`);

/** The engine's command, its output shown as it comes; rejects with its last output on failure. */
function engine(args, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ENGINE, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, PATH: `${VENV_BIN}:${process.env.PATH}` },
    });
    let tail = '';
    const show = d => {
      tail = (tail + d).slice(-4000);
      for (const line of String(d)
        .split('\n')
        .filter(l => l.trim())) {
        console.log(`  ${line}`);
      }
    };
    child.stdout.on('data', show);
    child.stderr.on('data', show);
    const timer = setTimeout(() => child.kill('SIGINT'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) {
        resolve();
      } else {
        reject(new Error(`autoresearch ${args[0]} failed (${signal ?? `exit ${code}`}):\n${tail}`));
      }
    });
  });
}

/** The JupyterLab this script drives (bench/common.mjs startLab); its process group is stopped on exit (labScratch). */
async function startServer(port) {
  const { base } = await startLab({ venvBin: VENV_BIN, tmp, serverRoot, port, onSpawn });
  return base;
}

/** Fails when something on the page says error: it must not end up in a picture. */
async function checkNoErrors(page, what) {
  const errors = await page.evaluate(() => {
    const shown = el => el.getClientRects().length > 0;
    const found = [];
    for (const sel of [
      '.jp-AutoresearchPanel-notice.jp-mod-error',
      '.jp-AutoresearchExperiment-error',
      '.Toastify__toast--error',
      '.jp-Dialog',
    ]) {
      for (const el of document.querySelectorAll(sel)) {
        if (shown(el)) {
          found.push(`${sel}: ${el.textContent.trim().slice(0, 200)}`);
        }
      }
    }
    return found;
  });
  if (errors.length) {
    throw new Error(`${what}: the page shows an error, no picture taken:\n  ${errors.join('\n  ')}`);
  }
}

/** The main area (the dock panel: tabs and the open document) as a PNG. */
async function shoot(page, name) {
  await page.mouse.move(0, 0); // no hover or tooltip in the picture
  await sleep(500); // the last layout and paint
  await checkNoErrors(page, name);
  const file = path.join(OUT, name);
  await page.locator('#jp-main-dock-panel').screenshot({ path: file, animations: 'disabled' });
  log(`saved ${path.relative(ROOT, file)}`);
  return file;
}

/** Waits for the panel's chart to be drawn (again) in the given theme. */
async function waitForChart(page, theme) {
  await page.waitForFunction(
    ({ theme }) => {
      const chart = document.querySelector('.jp-AutoresearchPanel .jp-AutoresearchChart');
      const svg = chart?.querySelector('.vega-embed svg.marks');
      return !!svg && svg.getBoundingClientRect().width > 0 && chart.dataset.theme === theme;
    },
    { theme },
    { timeout: WAIT_MS },
  );
}

/** Waits until the element's size and scroll height hold still for half a second (late renders, fonts). */
async function settle(page, selector) {
  let last = '';
  let still = 0;
  const deadline = Date.now() + WAIT_MS;
  while (still < 3) {
    if (Date.now() > deadline) {
      throw new Error(`${selector} did not settle within ${WAIT_MS / 1000} s`);
    }
    await sleep(200);
    const now = await page.evaluate(sel => {
      const el = document.querySelector(sel);
      const r = el?.getBoundingClientRect();
      return el ? `${r.width}x${r.height} ${el.scrollHeight} ${el.scrollTop}` : 'none';
    }, selector);
    still = now === last && now !== 'none' ? still + 1 : 0;
    last = now;
  }
}

/**
 * Scrolls the panel's content so the chart's top is just under the sticky run strip, then waits
 * for every experiment output in view to be rendered (the list renders them as they come near).
 */
async function scrollPanelToChart(page) {
  await page.evaluate(() => {
    const content = document.querySelector('.jp-AutoresearchPanel .jp-AutoresearchPanel-content');
    const chart = content.querySelector('.jp-AutoresearchChart');
    const strip = content.querySelector('.jp-AutoresearchRunStrip');
    const under = strip ? strip.getBoundingClientRect().bottom : content.getBoundingClientRect().top;
    content.scrollTop += chart.getBoundingClientRect().top - under;
  });
  await page.waitForFunction(
    () => {
      const content = document.querySelector('.jp-AutoresearchPanel .jp-AutoresearchPanel-content');
      const view = content.getBoundingClientRect();
      const items = [...content.querySelectorAll('.jp-AutoresearchExperimentList-item')].filter(item => {
        const r = item.getBoundingClientRect();
        return r.bottom > view.top && r.top < view.bottom && r.height > 0;
      });
      return items.length > 0 && items.every(item => item.classList.contains('jp-mod-rendered'));
    },
    null,
    { timeout: WAIT_MS },
  );
  await settle(page, '.jp-AutoresearchPanel .jp-AutoresearchPanel-content');
}

async function setTheme(page, theme, light) {
  await page.evaluate(theme => window.jupyterapp.commands.execute('apputils:change-theme', { theme }), theme);
  await page.waitForFunction(light => document.body.dataset.jpThemeLight === String(light), light, {
    timeout: WAIT_MS,
  });
}

async function main() {
  if (!fs.existsSync(path.join(VENV_BIN, 'jupyter')) || !fs.existsSync(ENGINE)) {
    throw new Error('no .venv or engine build: run `make setup` first (or `make pictures`)');
  }
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`no Chromium at ${CHROMIUM} (Debian's chromium package; set CHROMIUM to use another)`);
  }
  fs.mkdirSync(serverRoot, { recursive: true });
  fs.mkdirSync(OUT, { recursive: true });

  log(`a real run on ${wsDir}: tiny-cpu, 5 s budget, ${EXPERIMENTS} experiments after the baseline`);
  await engine(['init', wsDir, '--template', 'tiny-cpu', '--budget', '5'], 60_000);
  await engine(
    [
      'run',
      wsDir,
      '--tag',
      TAG,
      '--proposer',
      'offline',
      '--max-experiments',
      String(EXPERIMENTS),
      '--noise-runs',
      '1',
      '--python',
      path.join(VENV_BIN, 'python'),
    ],
    15 * 60_000,
  );
  const state = JSON.parse(fs.readFileSync(path.join(wsDir, '.autoresearch', TAG, 'state.json'), 'utf8'));
  const finished = state.experiments;
  if (!(finished > 1)) {
    throw new Error(`the run finished ${finished} experiments; the pictures need more than the baseline`);
  }
  if (state.counts?.crash) {
    throw new Error(`${state.counts.crash} of the run's experiments crashed; see the output above`);
  }

  const base = await startServer(await freePort());
  log(`JupyterLab on ${base}, root ${serverRoot}`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', e => pageErrors.push(String(e)));
  await page.goto(`${base}/lab?reset`, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => !!window.jupyterapp, null, { timeout: 120_000 });
  await page.evaluate(async () => {
    const app = window.jupyterapp;
    await app.started;
    await app.restored;
    for (const w of Array.from(app.shell.widgets('main'))) {
      w.close(); // the launcher: the panel's tab alone in the picture
    }
    app.shell.collapseLeft(); // the file browser: the room goes to the panel
    app.shell.collapseRight();
  });

  // The panel.
  await page.evaluate(p => window.jupyterapp.commands.execute('autoresearch:open', { path: p }).then(() => {}), WS);
  const panel = page.locator('.jp-AutoresearchPanel');
  await panel.waitFor({ timeout: WAIT_MS });
  await page.waitForFunction(
    n => document.querySelector('.jp-AutoresearchPanel')?.dataset.experiments === String(n),
    finished,
    { timeout: WAIT_MS },
  );
  await page.waitForFunction(
    () => !!document.querySelector('.jp-AutoresearchPanel .jp-AutoresearchProgram-cell .jp-RenderedMarkdown'),
    null,
    { timeout: WAIT_MS },
  );
  await waitForChart(page, 'JupyterLab Light');
  await page.evaluate(() => window.jupyterapp.shell.collapseLeft()); // in case opening it showed the sidebar
  await settle(page, '.jp-AutoresearchPanel .jp-AutoresearchPanel-content');
  const pictures = [await shoot(page, 'panel-light.png')]; // as it opens: program.md, the chart

  await setTheme(page, 'JupyterLab Dark', false);
  await waitForChart(page, 'JupyterLab Dark');
  await scrollPanelToChart(page); // the chart whole and the newest experiments under it
  pictures.push(await shoot(page, 'panel-dark.png'));
  await setTheme(page, 'JupyterLab Light', true);
  await waitForChart(page, 'JupyterLab Light');

  // The exported notebook.
  await engine(['export', wsDir, '--tag', TAG], 60_000);
  await page.evaluate(
    p => window.jupyterapp.commands.execute('docmanager:open', { path: p }).then(() => {}),
    `${WS}/${TAG}.ipynb`,
  );
  await page.evaluate(() => {
    for (const w of Array.from(window.jupyterapp.shell.widgets('main'))) {
      if (w.id.startsWith('autoresearch-')) {
        w.close(); // the notebook's tab alone (closing every tab would bring the launcher back)
      }
    }
  });
  await page.waitForFunction(
    n => document.querySelectorAll('.jp-Notebook .jp-AutoresearchExperiment').length === n,
    finished,
    { timeout: WAIT_MS },
  );
  // The kept experiments' diffs are open, their Python highlighted by CodeMirror (token spans).
  await page.waitForFunction(
    () => !!document.querySelector('.jp-Notebook .jp-AutoresearchExperiment-diffCode span'),
    null,
    { timeout: WAIT_MS },
  );
  // The experiments from the baseline on (the panel's picture has the chart).
  await page.evaluate(() =>
    document.querySelector('.jp-Notebook .jp-AutoresearchExperiment').scrollIntoView({ block: 'start' }),
  );
  await settle(page, '.jp-NotebookPanel .jp-WindowedPanel-outer');
  await page.evaluate(() => window.jupyterapp.shell.collapseLeft());
  pictures.push(await shoot(page, 'exported-notebook.png'));

  await browser.close();
  browser = null;
  if (pageErrors.length) {
    console.warn(`readme-pictures: errors in the page (pictures kept):\n  ${pageErrors.join('\n  ')}`);
  }
  let tooBig = false;
  for (const file of pictures) {
    const size = fs.statSync(file).size;
    tooBig ||= size > MAX_BYTES;
    console.log(`  ${path.relative(ROOT, file)}  ${(size / 1024).toFixed(0)} KB`);
  }
  log(`done (${finished} experiments, best ${state.best?.metric} ${state.run?.metric ?? ''})`);
  if (tooBig) {
    throw new Error(`a picture is over ${MAX_BYTES / 1024} KB: too heavy for the README`);
  }
}

try {
  await main();
} catch (error) {
  console.error(`readme-pictures failed: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  if (browser) {
    await browser.close().catch(() => {});
  }
  cleanup();
}
