/**
 * What a panel's first open on a page needs, made ready while JupyterLab is idle, in a browser
 * that has opened the panel before.
 *
 * A page's first chart has JupyterLab's Vega renderer load vega-embed (Vega and Vega-Lite, ~0.8 MB
 * of script) and run their compiler, dataflow and SVG renderer cold: in bench/panel that draw took
 * 0.5–0.6 s where the same chart drawn again took 0.2 s, and it came last in the open, after the
 * replay of the run's journal. Warming it up while the replay came in only moved that time (the
 * replay then shared the main thread), so it is done before: once per page, when the lab is idle
 * after start-up, off the page, into a renderer thrown away after, drawing a made-up long run in
 * the shape of a real chart (chart.ts's warmUpSpec: every layer, scale and mark kind a real chart
 * may draw). The experiment renderer's schema chunk, which its first output waits for, is loaded
 * then too.
 *
 * Only in a browser where a panel was opened before (a flag in localStorage), since a page where
 * nobody opens one would carry Vega (~6 MB of heap) for nothing; the first open in a browser is
 * cold. A panel that draws before the warm-up starts makes it unneeded (noteVegaUsed).
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { chartTheme, VEGALITE_MIME, warmUpSpec } from '../../core/chart';

/** The renderer's model of a chart spec, as the panel's chart makes it (chart-view.ts). */
export type ChartModel = (spec: Record<string, unknown>) => IRenderMime.IMimeModel;

/** The localStorage key saying this browser has opened an Autoresearch panel. */
export const OPENED_KEY = 'jupyterlab-autoresearch:panel-opened';
/** How long an idle moment is waited for before warming up anyway. */
const IDLE_TIMEOUT_MS = 10_000;

let vegaStarted = false;

/** Marks Vega as in use: a panel's real draw warms it as well as a warm-up would. */
export function noteVegaUsed(): void {
  vegaStarted = true;
}

/** Remembers, for later pages, that this browser opens the panel. */
export function notePanelOpened(): void {
  try {
    window.localStorage.setItem(OPENED_KEY, '1');
  } catch {
    // no storage (a private window, say): every page then opens cold
  }
}

function panelOpenedBefore(): boolean {
  try {
    return window.localStorage.getItem(OPENED_KEY) === '1';
  } catch {
    return false;
  }
}

/**
 * Warms up once JupyterLab is idle, if this browser has opened a panel before. `model` makes the
 * renderer's model of a spec as the panel's chart does (its embed options and stand-in PNG), so
 * the warm-up takes the code path of a real draw.
 */
export function warmUpWhenIdle(rendermime: IRenderMimeRegistry, model: ChartModel): void {
  // What became of it, on <body> for tests: `skipped` (never opened here, or a panel drew first), `done`.
  const say = (what: string) => void (document.body.dataset.autoresearchWarmUp = what);
  if (!panelOpenedBefore()) {
    say('skipped');
    return;
  }
  const run = () => {
    void import('../renderer/schema').catch(() => undefined);
    void warmUpVega(rendermime, model).then(done => say(done ? 'done' : 'skipped'));
  };
  if (typeof requestIdleCallback === 'function') {
    requestIdleCallback(run, { timeout: IDLE_TIMEOUT_MS });
  } else {
    setTimeout(run, 0);
  }
}

/**
 * Draws the made-up chart once, off the page; once per page, not at all without a Vega-Lite
 * renderer or once a panel has drawn. A failure is dropped: the panel's own draw says what is wrong.
 */
export async function warmUpVega(rendermime: IRenderMimeRegistry, model: ChartModel): Promise<boolean> {
  if (vegaStarted || !rendermime.mimeTypes.includes(VEGALITE_MIME)) {
    return false;
  }
  vegaStarted = true;
  const style = getComputedStyle(document.body);
  const theme = chartTheme(name => style.getPropertyValue(name));
  const spec = warmUpSpec({ metric: 'val_bpb', direction: 'lower', theme, width: 800 });
  const renderer = rendermime.createRenderer(VEGALITE_MIME);
  try {
    await renderer.renderModel(model(spec));
    return true;
  } catch {
    return false;
  } finally {
    renderer.dispose();
  }
}
