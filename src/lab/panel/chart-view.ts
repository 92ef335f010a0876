/**
 * The progress chart: the Vega-Lite spec of src/core/chart.ts rendered by JupyterLab's own
 * Vega renderer (its vega5 mime extension), redrawn at most every couple of seconds. Above it,
 * for a run measured with repeats, a line of what the keep rule saw: σ, the best as mean ± se,
 * and what trust cost.
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { MimeModel } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { progressChart, VEGALITE_MIME } from '../../core/chart';
import type { ExperimentRecord } from '../../core/journal';
import type { RunModel } from './run-model';
import { describeNoise } from './run-state';

const REDRAW_MS = 2000;

export class ChartView extends Widget {
  private renderer: IRenderMime.IRenderer | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private last = 0;
  private readonly message: HTMLElement;
  private readonly host: HTMLElement;
  /** σ, the best as mean ± se, and the trust cost; hidden for a run from before repeats. */
  readonly noiseLine: HTMLElement;

  constructor(
    private readonly rendermime: IRenderMimeRegistry,
    private readonly trans: TranslationBundle,
    private readonly source: () => {
      experiments: readonly ExperimentRecord[];
      metric: string;
      direction: 'lower' | 'higher';
      model?: RunModel;
    },
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
  }

  /** Redraws soon: now if the last draw is old enough, else once the interval has passed. */
  schedule(): void {
    if (this.timer !== null) {
      return;
    }
    const wait = Math.max(0, this.last + REDRAW_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.draw();
    }, wait);
  }

  dispose(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
    }
    this.renderer?.dispose();
    super.dispose();
  }

  async draw(): Promise<void> {
    this.last = Date.now();
    const { experiments, metric, direction, model } = this.source();
    this.showNoise(model ? describeNoise(model, this.trans) : []);
    if (!experiments.some(e => e.metric !== null || e.status === 'crash')) {
      this.showMessage(this.trans.__('The chart appears after the first experiment.'));
      return;
    }
    if (!this.rendermime.mimeTypes.includes(VEGALITE_MIME)) {
      this.showMessage(this.trans.__('This JupyterLab has no Vega-Lite renderer, so the chart cannot be shown.'));
      return;
    }
    const spec = progressChart(experiments, { metric, direction });
    if (!this.renderer) {
      this.renderer = this.rendermime.createRenderer(VEGALITE_MIME);
      Widget.attach(this.renderer, this.host);
    }
    await this.renderer.renderModel(new MimeModel({ data: { [VEGALITE_MIME]: spec as never } }));
    this.message.hidden = true;
    this.host.hidden = false;
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

  private showMessage(text: string): void {
    this.message.textContent = text;
    this.message.hidden = false;
    this.host.hidden = this.renderer === null;
  }
}
