/**
 * What a panel's first open on a page needs, made ready while JupyterLab is idle, in a browser
 * that has opened the panel before.
 *
 * A page's first chart has JupyterLab's Vega renderer load vega-embed (Vega and Vega-Lite) and run
 * their compiler, dataflow and SVG renderer cold: that draw takes several times as long as the same
 * chart drawn again (bench/panel measures it), and it came last in the open, after the replay of
 * the run's journal. Warming it up while the replay came in only moved that time (the
 * replay then shared the main thread), so it is done before: once per page, when the lab is idle
 * after start-up, off the page, into a renderer thrown away after, drawing a made-up long run in
 * the shape of a real chart (chart.ts's warmUpSpec: every layer, scale and mark kind a real chart
 * may draw). The experiment renderer's schema chunk, which its first output waits for, is loaded
 * then too, and what program.md's cell loads on its first show: the markdown parser (rendering a
 * made-up program through the panel's kind of rendermime, MathJax left out as in the panel) and
 * the markdown cell's editor language, CodeMirror's markdown with the HTML, CSS and JavaScript it
 * embeds (script loaded and evaluated, which the open otherwise spends before the run's journal is
 * read).
 *
 * Only in a browser where a panel was opened before (a flag in localStorage), since a page where
 * nobody opens one would carry Vega's heap for nothing; the first open in a browser is
 * cold. A panel that draws before the warm-up starts makes it unneeded (noteVegaUsed).
 */
import type { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { VEGALITE_MIME, warmUpSpec } from '../../core/views/chart';
import { chartTheme } from '../../core/views/chart-theme';
import { withLazyMath } from './lazy-math';

/** The renderer's model of a chart spec, as the panel's chart makes it (chart-view.ts). */
export type ChartModel = (spec: Record<string, unknown>) => IRenderMime.IMimeModel;

/** The localStorage key saying this browser has opened an Autoresearch panel. */
export const OPENED_KEY = 'jupyterlab-autoresearch:panel-opened';
/** How long an idle moment is waited for before warming up anyway. */
const IDLE_TIMEOUT_MS = 10_000;
/** The language a markdown cell's editor asks for (@jupyterlab/cells' MarkdownCellModel mimeType). */
export const MARKDOWN_CELL_MIME = 'text/x-ipythongfm';
/** A made-up program.md body, in the markdown a program has: a heading, code, a list, emphasis. */
const PROGRAM_SAMPLE =
  '# Goal\n\nLower `val_bpb` by editing **train.py**.\n\n- one change at a time\n- *keep* what helps\n';

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
 * the warm-up takes the code path of a real draw; `languages` is the lab's editor languages (none:
 * the editor's language is not warmed up).
 */
export function warmUpWhenIdle(
  rendermime: IRenderMimeRegistry,
  model: ChartModel,
  languages: IEditorLanguageRegistry | null = null,
): void {
  // What became of it, on <body> for tests: `skipped` (never opened here, or a panel drew first), `done`.
  const say = (what: string) => void (document.body.dataset.autoresearchWarmUp = what);
  if (!panelOpenedBefore()) {
    say('skipped');
    return;
  }
  const run = async () => {
    void import('../renderer/schema').catch(() => undefined);
    await warmUpProgram(rendermime, languages);
    say((await warmUpVega(rendermime, model)) ? 'done' : 'skipped');
  };
  if (typeof requestIdleCallback === 'function') {
    requestIdleCallback(() => void run(), { timeout: IDLE_TIMEOUT_MS });
  } else {
    setTimeout(() => void run(), 0);
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

/**
 * Renders a made-up program off the page, as program.md's cell renders (a rendermime without
 * MathJax for text without maths, ./lazy-math), and loads a markdown cell editor's language.
 * Failures are dropped: the panel's own cell says what is wrong.
 */
export async function warmUpProgram(
  rendermime: IRenderMimeRegistry,
  languages: IEditorLanguageRegistry | null,
): Promise<void> {
  const jobs: Array<Promise<unknown>> = [];
  if (languages) {
    jobs.push(languages.getLanguage(MARKDOWN_CELL_MIME));
  }
  if (rendermime.mimeTypes.includes('text/markdown')) {
    const renderer = withLazyMath(rendermime).createRenderer('text/markdown');
    // A model as a markdown cell makes of its text (@jupyterlab/rendermime's MimeModel: untrusted).
    const model: IRenderMime.IMimeModel = {
      trusted: false,
      data: { 'text/markdown': PROGRAM_SAMPLE },
      metadata: {},
      setData: () => undefined,
    };
    jobs.push(renderer.renderModel(model).finally(() => renderer.dispose()));
  }
  await Promise.allSettled(jobs);
}
