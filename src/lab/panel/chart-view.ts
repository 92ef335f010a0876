/**
 * The progress chart: the Vega-Lite spec of src/core/views/chart.ts rendered by JupyterLab's own
 * Vega renderer (its vega5 mime extension), redrawn at most every couple of seconds. Above it,
 * for a run measured with repeats, a line of what the keep rule saw: σ, the best as mean ± se,
 * and what trust cost.
 *
 * Every colour is read from JupyterLab's CSS variables when the chart is drawn (chartTheme), and
 * the chart is drawn again when the theme changes. It listens for that on `document.body`'s
 * `data-jp-theme-name` and `data-jp-theme-light` attributes, which JupyterLab sets once a theme's
 * CSS has loaded, rather than on IThemeManager: the panel is built without that token, and the
 * attributes are also what the Vega renderer itself reads to choose vega-embed's dark theme.
 */
import type { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { type IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';
import { progressChart, VEGALITE_MIME } from '../../core/views/chart';
import { chartTheme } from '../../core/views/chart-theme';
import type { ExperimentRecord } from '../../core/journal/journal';
import type { RunModel } from './run/run-model';
import { describeNoise } from './run/state-words';
import { noteVegaUsed, warmUpWhenIdle } from './warm-up';

const REDRAW_MS = 2000;
/**
 * What the chart's host holds beside the chart: vega-embed's actions menu at its right
 * (`.vega-embed.has-actions`'s padding), JupyterLab's Vega renderer's 8 px margin at its left,
 * and 4 px to spare. Without the margin the chart ran 4 px past a narrow panel and scrolled it.
 */
const ACTIONS_PX = 38 + 8 + 4;
/** A change of the panel's width smaller than this does not redraw the chart. */
const RESIZE_PX = 8;
/** The widest the chart gets: a wider panel leaves room beside it rather than stretching a few points apart. */
const MAX_WIDTH = 960;
/**
 * vega-embed's options (the renderer reads them from the model's metadata): SVG rather than a
 * canvas, so the labels are text in the page, sharp at any zoom and there for a test to measure.
 */
const METADATA = { [VEGALITE_MIME]: { embed_options: { renderer: 'svg' } } };
/**
 * JupyterLab's Vega renderer draws every chart a second time, into a PNG it stores in the model
 * for notebooks saved without a renderer, unless the model already holds one. The panel's model
 * is thrown away after each draw, so it gets this stand-in (a 1×1 transparent PNG) and that
 * second render (as long as the first one on a long run) is skipped.
 */
const NO_PNG = {
  'image/png': 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
};

/** The model the chart's renderer draws a spec from (the warm-up's too, so it takes the same path). */
function chartModel(spec: Record<string, unknown>): MimeModel {
  // A fresh metadata object each time: the renderer writes the theme it chose into it.
  const metadata = JSON.parse(JSON.stringify(METADATA));
  return new MimeModel({ data: { [VEGALITE_MIME]: spec as never, ...NO_PNG }, metadata });
}

/** Gets Vega (and program.md's cell) ready for a panel's first open once JupyterLab is idle (./warm-up). */
export function warmUpPanelWhenIdle(rendermime: IRenderMimeRegistry, languages: IEditorLanguageRegistry | null): void {
  warmUpWhenIdle(rendermime, chartModel, languages);
}

type Source = () => {
  experiments: readonly ExperimentRecord[];
  metric: string;
  direction: 'lower' | 'higher';
  model?: RunModel;
  /** What the panel's filter shows (null: all): the chart follows it (ChartOptions.shown). */
  shown?: ReadonlySet<number> | null;
};

export class ChartView extends Widget {
  private renderer: IRenderMime.IRenderer | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = 0;
  /** The width the chart was last drawn for; null while the placeholder shows. */
  private drawnWidth: number | null = null;
  /** A draw asked for while the panel was hidden, done when it is shown again. */
  private pending = false;
  /** Draws one after another: a theme change landing mid-render must not interleave two renders. */
  private queue: Promise<void> = Promise.resolve();
  private readonly themeObserver: MutationObserver;
  private readonly resizeObserver: ResizeObserver | null;
  private readonly message: HTMLElement;
  private readonly host: HTMLElement;
  /** σ, the best as mean ± se, and the trust cost; hidden for a run from before repeats. */
  readonly noiseLine: HTMLElement;

  constructor(
    private readonly rendermime: IRenderMimeRegistry,
    private readonly trans: TranslationBundle,
    private readonly source: Source,
  ) {
    super();
    this.addClass('jp-AutoresearchChart');
    this.message = document.createElement('div');
    this.message.className = 'jp-AutoresearchChart-message';
    this.noiseLine = document.createElement('div');
    this.noiseLine.className = 'jp-AutoresearchChart-noise';
    this.noiseLine.hidden = true;
    this.host = document.createElement('div');
    this.host.className = 'jp-AutoresearchChart-plot jp-OutputArea-output';
    this.node.append(this.message, this.noiseLine, this.host);
    this.showMessage(trans.__('The chart appears after the first experiment.'));
    this.themeObserver = new MutationObserver(() => this.refreshTheme());
    this.themeObserver.observe(document.body, {
      attributes: true,
      attributeFilter: ['data-jp-theme-name', 'data-jp-theme-light'],
    });
    // The chart fits the panel's width: redraw when the panel is resized (jsdom has no ResizeObserver).
    this.resizeObserver =
      typeof ResizeObserver === 'undefined'
        ? null
        : new ResizeObserver(() => {
            const width = this.plotWidth();
            // Width 0: hidden (onAfterShow redraws), not resized.
            if (width > 0 && this.drawnWidth !== null && Math.abs(width - this.drawnWidth) >= RESIZE_PX) {
              this.schedule();
            }
          });
    this.resizeObserver?.observe(this.node);
  }

  /**
   * Redraws soon: now if the last draw is old enough, else once the interval has passed. A run
   * with nothing to plot (a new run just started) shows its placeholder at once, so the old
   * run's chart never lingers above it.
   */
  schedule(): void {
    if (!this.plottable()) {
      this.cancelTimer();
      void this.draw();
      return;
    }
    // The noise line is a few words from the run state: it follows the state at once, so it never
    // shows an older σ than the strip and the status bar beside it while the chart waits its turn.
    this.refreshNoise();
    if (this.timer !== null) {
      return;
    }
    const wait = Math.max(0, this.last + REDRAW_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.draw();
    }, wait);
  }

  /** Draws the chart again now, in the colours of the theme now applied. */
  refreshTheme(): void {
    if (this.drawnWidth !== null) {
      this.cancelTimer();
      void this.draw();
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.cancelTimer();
    this.themeObserver.disconnect();
    this.resizeObserver?.disconnect();
    this.renderer?.dispose();
    super.dispose();
  }

  /** Draws the chart (or the placeholder) from the source as it is now. */
  draw(): Promise<void> {
    this.queue = this.queue.then(() => this.drawNow()).catch(error => console.error('autoresearch chart:', error));
    return this.queue;
  }

  private async drawNow(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    const { experiments, metric, direction, shown } = this.source();
    if (!this.plottable()) {
      this.showMessage(this.trans.__('The chart appears after the first experiment.'));
      return;
    }
    // Only a chart drawn holds the next one back: the placeholder shown while a long run's journal
    // is replayed must not make its first chart wait out the interval.
    this.last = Date.now();
    this.refreshNoise();
    if (this.isAttached && !this.isVisible) {
      // Hidden (a panel behind another, or JupyterLab hiding its shell while it swaps themes):
      // there is no width to fit, so draw once shown rather than at a width of nothing.
      this.pending = true;
      return;
    }
    this.pending = false;
    if (!this.rendermime.mimeTypes.includes(VEGALITE_MIME)) {
      this.showMessage(this.trans.__('This JupyterLab has no Vega-Lite renderer, so the chart cannot be shown.'));
      return;
    }
    // The host is shown before measuring, so the width is the panel's even on the first draw.
    this.host.hidden = false;
    const width = this.plotWidth();
    const style = getComputedStyle(this.node);
    const theme = chartTheme(name => style.getPropertyValue(name));
    const spec = progressChart(experiments, { metric, direction, theme, width, shown });
    if (!this.renderer) {
      noteVegaUsed();
      this.renderer = this.rendermime.createRenderer(VEGALITE_MIME);
      Widget.attach(this.renderer, this.host);
    }
    await this.renderer.renderModel(chartModel(spec));
    this.message.hidden = true;
    this.drawnWidth = width;
    // For tests and styles: which theme and how many rows the chart now shows.
    this.node.dataset.theme = document.body.dataset.jpThemeName ?? '';
    this.node.dataset.points = String(experiments.length);
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    if (this.pending) {
      this.cancelTimer();
      void this.draw();
    }
  }

  /** Whether the source has anything to plot: a metric or a crash. */
  private plottable(): boolean {
    return this.source().experiments.some(e => e.metric !== null || e.status === 'crash');
  }

  /** The width the chart may take: the host's, less vega-embed's actions menu, up to MAX_WIDTH. */
  private plotWidth(): number {
    return Math.min(MAX_WIDTH, Math.max(0, (this.host.clientWidth || this.node.clientWidth) - ACTIONS_PX));
  }

  private cancelTimer(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
  }

  /** The noise line from the run state as it is now. */
  private refreshNoise(): void {
    const model = this.source().model;
    this.showNoise(model ? describeNoise(model, this.trans) : []);
  }

  private showNoise(lines: string[]): void {
    this.noiseLine.replaceChildren(
      ...lines.map(text => {
        const line = document.createElement('div');
        line.textContent = text;
        return line;
      }),
    );
    this.noiseLine.hidden = lines.length === 0;
  }

  /**
   * The placeholder (or why there is no chart) alone: the last chart drawn, a previous run's
   * perhaps, is hidden with the noise line that described it.
   */
  private showMessage(text: string): void {
    this.message.textContent = text;
    this.message.hidden = false;
    this.host.hidden = true;
    this.drawnWidth = null;
    delete this.node.dataset.points;
    if (!this.plottable()) {
      this.showNoise([]);
    }
  }
}
