#!/usr/bin/env node
// bench/panel: how long the Autoresearch panel takes to open on a long run, in Chromium.
//
// Two synthetic workspaces under a temp server root, `bench-1000` and `bench-10000`, each with a
// stopped run of 1,000 or 10,000 finished experiments (bench/panel-journal.mjs) and the
// state.json the engine writes beside it (`autoresearch state`, as a real run has). A token-less
// JupyterLab from .venv serves that root on a free 127.0.0.1 port; Debian's Chromium
// (/usr/bin/chromium, never a downloaded browser) loads /lab, 1400×1000.
//
// The measure, per open (fresh page load each time, so nothing is cached in the page):
//   t0 = performance.now() in the page, then `autoresearch:open {path}`; then, every animation
//   frame, until all of these hold:
//     - the panel's data-experiments is the journal's number of finished experiments
//       (the event stream has replayed the whole journal and the model has caught up);
//     - program.md's text is rendered in its cell and the chart's `.vega-embed` exists;
//     - at least one experiment output intersects the panel's scrolling viewport
//       (`.jp-AutoresearchPanel-content`) and every one that does has `jp-mod-rendered`.
//   If the list starts below the fold (program cell and chart fill the first screen), the
//   content is scrolled on that frame so the list's top is at the viewport's top, as a user
//   scrolling to the history would: the measure is always "the last output visible rendered".
//   The time of the first frame where all hold is the open time. Each milestone's first frame
//   is also recorded (command resolved, panel attached, program rendered, first output in the
//   list, journal replayed, chart drawn, first output rendered, visible outputs rendered); the
//   visible outputs are checked from the replay's end on only, since reading layout on every
//   frame of the replay would slow down what is measured.
// Memory: one second after the open, through CDP: HeapProfiler.collectGarbage, then
// Runtime.getHeapUsage (used JS heap), minus the same taken once of the lab alone on a page of
// its own (labHeapMb says why not just before the open); with the number of rendered outputs
// and the DOM nodes inside the panel.
//
// 5 rounds per workspace, interleaved (1000, 10000, 1000, 10000, …) so noise hits both alike;
// the figures are medians. The first round is also printed on its own (`first_open_s_N`): it is
// cold twice over, the server reading and validating each journal for the first time and the
// browser opening its first panel ever (later pages of a browser that has opened one get Vega
// ready while the lab is idle, src/lab/panel/warm-up.ts; the lab-alone page below comes first,
// so it has no warm-up). Prints `panel_open_s: X` (the median for the largest workspace) last.
// Targets: 1,000 experiments under 1.5 s; 10,000 under 1.0 s with a heap under 100 MB.
//
// Env: BENCH_ROUNDS (5), BENCH_SIZES ("1000,10000"), CHROMIUM (/usr/bin/chromium),
//      BENCH_KEEP=1 keeps the temp folder, BENCH_PROFILE=file.cpuprofile writes a CPU profile
//      of the largest workspace's open (the last round's), BENCH_SCREENSHOT=prefix a screenshot
//      after each open (prefix-N.png), BENCH_NET=1 each HTTP request and the event stream's
//      frames of the largest workspace's opens, timed from the open's start.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeWorkspace, PROGRAM_SENTENCE } from './panel-journal.mjs';
import { freePort, labScratch, startLab } from './common.mjs';

process.env.PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD = '1';
const { chromium } = await import('@playwright/test');

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const VENV_BIN = path.join(ROOT, '.venv', 'bin');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SIZES = (process.env.BENCH_SIZES ?? '1000,10000').split(',').map(Number);
/** The engine the server runs, for the state.json a real run has beside its journal. */
const ENGINE = path.join(ROOT, 'jupyter_server_ext', 'jupyterlab_autoresearch', 'engine', 'autoresearch.cjs');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const OPEN_TIMEOUT_MS = 90_000;

const { tmp, serverRoot, onSpawn, cleanup } = labScratch('ar-bench-panel-', 'BENCH_KEEP');
let browser = null;

const sleep = ms => new Promise(r => setTimeout(r, ms));
const median = xs => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const f3 = x => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(3));
const f1 = x => (x === null || x === undefined || Number.isNaN(x) ? 'n/a' : x.toFixed(1));

/** The JupyterLab this script drives (bench/common.mjs startLab); its process group is stopped on exit (labScratch). */
async function startServer(port) {
  const { base } = await startLab({ venvBin: VENV_BIN, tmp, serverRoot, port, onSpawn });
  return base;
}

/** In the page: open the panel and wait for the last visible output (see the header). */
function openAndWait({ wsPath, expected, timeoutMs, programSentence }) {
  const app = window.jupyterapp;
  const t0 = performance.now();
  window.__benchT0Epoch = performance.timeOrigin + t0;
  const marks = {};
  const mark = (name, t) => {
    if (marks[name] === undefined) {
      marks[name] = (t - t0) / 1000;
    }
  };
  let scrolled = false;
  const opened = app.commands
    .execute('autoresearch:open', { path: wsPath })
    .then(() => mark('command', performance.now()));
  return new Promise((resolve, reject) => {
    const frame = () => {
      const now = performance.now();
      if (now - t0 > timeoutMs) {
        const panel = document.getElementById(`autoresearch-${wsPath}`);
        reject(
          new Error(
            `not open after ${timeoutMs} ms: marks ${JSON.stringify(marks)}, data-experiments ${panel?.dataset.experiments}`,
          ),
        );
        return;
      }
      const panel = document.getElementById(`autoresearch-${wsPath}`);
      if (!panel || !panel.isConnected) {
        requestAnimationFrame(frame);
        return;
      }
      mark('panel', now);
      const content = panel.querySelector('.jp-AutoresearchPanel-content');
      const count = Number(panel.dataset.experiments ?? -1);
      if (count === expected) {
        mark('replayed', now);
      }
      const chart = panel.querySelector('.jp-AutoresearchChart .vega-embed');
      if (chart) {
        mark('chart', now);
      }
      const program = panel.querySelector('.jp-AutoresearchProgram-cell .jp-RenderedMarkdown');
      // The program's own text (not the cell's placeholder, shown until program.md is read).
      if (program && program.textContent.includes(programSentence)) {
        mark('program', now);
      }
      const list = panel.querySelector('.jp-AutoresearchExperimentList');
      const items = panel.getElementsByClassName('jp-AutoresearchExperimentList-item');
      if (items.length) {
        mark('first_item', now);
      }
      if (panel.querySelector('.jp-AutoresearchExperimentList-item.jp-mod-rendered')) {
        mark('first_rendered', now);
      }
      // Geometry (a forced layout) only once the journal is replayed: before, the open cannot be
      // complete, and reading layout every frame of the replay would slow what is measured.
      if (count === expected && content && list && items.length) {
        let view = content.getBoundingClientRect();
        const top = list.getBoundingClientRect().top;
        // The list below the fold: scroll to it, as the user would to see the history.
        if (top > view.bottom - 40 && content.scrollTop + view.height < content.scrollHeight) {
          content.scrollTop += top - view.top;
          scrolled = true;
          view = content.getBoundingClientRect();
        }
        let visible = 0;
        let rendered = 0;
        for (const item of items) {
          const r = item.getBoundingClientRect();
          if (r.top >= view.bottom) {
            break; // in document order: the rest are further down
          }
          if (r.bottom > view.top && r.height > 0) {
            visible += 1;
            rendered += item.classList.contains('jp-mod-rendered') ? 1 : 0;
          }
        }
        if (visible > 0 && rendered === visible) {
          mark('visible_rendered', now);
          if (count === expected && chart && marks.program !== undefined) {
            opened.then(() =>
              resolve({
                open_s: (now - t0) / 1000,
                marks,
                scrolled,
                visible,
                scrollTop: content.scrollTop,
                listTop: list.getBoundingClientRect().top - view.top,
                viewHeight: view.height,
              }),
            );
            return;
          }
        }
      }
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  });
}

async function heapMb(cdp) {
  await cdp.send('HeapProfiler.collectGarbage');
  const { usedSize } = await cdp.send('Runtime.getHeapUsage');
  return usedSize / 2 ** 20;
}

/** A fresh /lab page, started and restored, with no panel open, its start-up work settled. */
async function freshLab(page, base) {
  await page.goto(`${base}/lab?reset`, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(() => !!window.jupyterapp, null, { timeout: 120_000 });
  await page.evaluate(async () => {
    const app = window.jupyterapp;
    await app.started;
    await app.restored;
    // No panel from an earlier round (the ?reset layout should have none).
    for (const w of Array.from(app.shell.widgets('main'))) {
      if (w.id.startsWith('autoresearch-')) {
        w.close();
      }
    }
  });
  // Let the lab's own start-up work (kernelspecs, extensions, the launcher) settle.
  await sleep(1500);
}

/**
 * The used JS heap of the lab alone (no panel opened), after a GC: what each open's heap is
 * measured against. Taken on a page of its own, since a forced GC also throws away compiled
 * code and type feedback: an open right after one ran its code cold (about 0.3 s slower here),
 * which no user's open does.
 */
async function labHeapMb(page, base) {
  await freshLab(page, base);
  const cdp = await page.context().newCDPSession(page);
  const heap = await heapMb(cdp);
  await cdp.detach();
  return heap;
}

/**
 * BENCH_NET=1: the largest workspace's opens print each HTTP request and the event stream's
 * frames against the open's start (CDP's Network domain), to see what waits on what.
 */
async function traceNetwork(cdp) {
  await cdp.send('Network.enable');
  const events = [];
  let offset = null; // wallTime - timestamp, seconds
  const at = ts => (offset === null ? null : (ts + offset) * 1000);
  cdp.on('Network.requestWillBeSent', e => {
    offset = e.wallTime - e.timestamp;
    events.push({
      t: e.wallTime * 1000,
      what: `→ ${e.request.method} ${e.request.url.replace(/^https?:\/\/[^/]+/, '').slice(0, 90)}`,
      id: e.requestId,
    });
  });
  cdp.on('Network.loadingFinished', e =>
    events.push({ t: at(e.timestamp), what: `✓ ${e.encodedDataLength} B`, id: e.requestId }),
  );
  cdp.on('Network.webSocketCreated', e =>
    events.push({ t: null, what: `ws ${e.url.replace(/^wss?:\/\/[^/]+/, '').slice(0, 90)}`, id: e.requestId }),
  );
  const frames = new Map();
  cdp.on('Network.webSocketFrameSent', e =>
    events.push({ t: at(e.timestamp), what: `ws ↑ ${e.response.payloadData.slice(0, 80)}`, id: e.requestId }),
  );
  cdp.on('Network.webSocketFrameReceived', e => {
    const f = frames.get(e.requestId) ?? { first: at(e.timestamp), last: 0, n: 0, bytes: 0 };
    f.last = at(e.timestamp);
    f.n += 1;
    f.bytes += e.response.payloadData.length;
    frames.set(e.requestId, f);
  });
  return {
    print(t0, openS) {
      console.log(`    network of this open (ms from its start; open at ${Math.round(openS * 1000)}):`);
      for (const e of events.filter(e => e.t !== null && e.t >= t0 - 50).sort((a, b) => a.t - b.t)) {
        console.log(`      ${String(Math.round(e.t - t0)).padStart(6)} [${e.id}] ${e.what}`);
      }
      for (const [id, f] of frames) {
        if (f.last >= t0) {
          console.log(
            `      ws [${id}] ${f.n} frames, ${(f.bytes / 1e6).toFixed(2)} MB received, ${Math.round(f.first - t0)}–${Math.round(f.last - t0)} ms`,
          );
        }
      }
    },
  };
}

async function measure(page, base, wsPath, expected, heapBefore) {
  await freshLab(page, base);
  const cdp = await page.context().newCDPSession(page);
  const profile = process.env.BENCH_PROFILE && expected === Math.max(...SIZES);
  if (profile) {
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await cdp.send('Profiler.start');
  }
  const net = process.env.BENCH_NET && expected === Math.max(...SIZES) ? await traceNetwork(cdp) : null;
  const result = await page.evaluate(openAndWait, {
    wsPath,
    expected,
    timeoutMs: OPEN_TIMEOUT_MS,
    programSentence: PROGRAM_SENTENCE,
  });
  if (net) {
    net.print(await page.evaluate(() => window.__benchT0Epoch), result.open_s);
  }
  if (profile) {
    const { profile: p } = await cdp.send('Profiler.stop');
    fs.writeFileSync(process.env.BENCH_PROFILE, JSON.stringify(p));
  }
  if (process.env.BENCH_SCREENSHOT) {
    await page.screenshot({ path: `${process.env.BENCH_SCREENSHOT}-${expected}.png` });
  }
  await sleep(1000);
  const heapAfter = await heapMb(cdp);
  const dom = await page.evaluate(p => {
    const panel = document.getElementById(`autoresearch-${p}`);
    return {
      items: panel.querySelectorAll('.jp-AutoresearchExperimentList-item').length,
      rendered: panel.querySelectorAll('.jp-AutoresearchExperimentList-item.jp-mod-rendered').length,
      nodes: panel.querySelectorAll('*').length,
    };
  }, wsPath);
  await cdp.detach();
  return { ...result, heapBefore, heapAfter, heapDelta: heapAfter - heapBefore, ...dom };
}

async function main() {
  fs.mkdirSync(serverRoot, { recursive: true });
  const sizes = {};
  for (const n of SIZES) {
    const ws = `bench-${n}`;
    makeWorkspace(path.join(serverRoot, ws), n, { tag: 'bench' });
    execFileSync(process.execPath, [ENGINE, 'state', '--tag', 'bench', path.join(serverRoot, ws)]);
    sizes[n] = ws;
  }
  const port = await freePort();
  const base = await startServer(port);
  console.log(`bench/panel: JupyterLab on ${base}, root ${serverRoot}; workspaces ${Object.values(sizes).join(', ')}`);

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
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const results = Object.fromEntries(SIZES.map(n => [n, []]));
  const labHeap = await labHeapMb(page, base);
  console.log(`  the lab alone: heap ${f1(labHeap)} MB`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const n of SIZES) {
      const r = await measure(page, base, sizes[n], n, labHeap);
      results[n].push(r);
      const m = r.marks;
      console.log(
        `  round ${round} n=${n}: open ${f3(r.open_s)} s ` +
          `(command ${f3(m.command)}, panel ${f3(m.panel)}, program ${f3(m.program)}, first item ${f3(m.first_item)}, ` +
          `replayed ${f3(m.replayed)}, chart ${f3(m.chart)}, first rendered ${f3(m.first_rendered)}, visible rendered ${f3(m.visible_rendered)}); ` +
          `${r.visible} visible${r.scrolled ? ' after scrolling to the list' : ''}, ${r.rendered}/${r.items} rendered, ` +
          `list top ${Math.round(r.listTop)} px in a ${Math.round(r.viewHeight)} px view, ${r.nodes} DOM nodes, heap ${f1(r.heapBefore)} → ${f1(r.heapAfter)} MB`,
      );
    }
  }
  await browser.close();
  browser = null;

  const med = (n, key) => median(results[n].map(r => r[key]));
  const [small, large] = [Math.min(...SIZES), Math.max(...SIZES)];
  const lines = [];
  for (const n of SIZES) {
    lines.push(`panel_open_s_${n}: ${f3(med(n, 'open_s'))}  first_open_s_${n}: ${f3(results[n][0].open_s)}`);
  }
  lines.push(`open_ratio_${large}_vs_${small}: ${f3(med(large, 'open_s') / med(small, 'open_s'))}`);
  for (const key of ['replayed', 'chart', 'visible_rendered']) {
    lines.push(SIZES.map(n => `${key}_s_${n}: ${f3(median(results[n].map(r => r.marks[key])))}`).join('  '));
  }
  lines.push(
    SIZES.map(n => `heap_mb_${n}: ${f1(med(n, 'heapAfter'))}`).join('  ') +
      `  heap_ratio: ${f3(med(large, 'heapAfter') / med(small, 'heapAfter'))}`,
  );
  lines.push(
    SIZES.map(n => `heap_delta_mb_${n}: ${f1(med(n, 'heapDelta'))}`).join('  ') +
      '  (used JS heap after the open minus the lab alone, each after a GC)',
  );
  for (const n of SIZES) {
    lines.push(`rendered_outputs_${n}: ${med(n, 'rendered')} of ${n}`);
  }
  lines.push(SIZES.map(n => `panel_dom_nodes_${n}: ${med(n, 'nodes')}`).join('  '));
  lines.push(`panel_open_s: ${f3(med(large, 'open_s'))}`);
  console.log(lines.join('\n'));
}

try {
  await main();
} catch (error) {
  console.error(`bench/panel failed: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  if (browser) {
    await browser.close().catch(() => {});
  }
  cleanup();
}
