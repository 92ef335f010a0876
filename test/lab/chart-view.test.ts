// @vitest-environment jsdom
/** The panel's chart: the line of σ, the best as mean ± se and the trust cost above the plot. */
import { nullTranslator } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { VEGALITE_MIME } from '../../src/core/views/chart';
import type { JournalRecord } from '../../src/core/journal/journal';
import { deriveRunState } from '../../src/core/journal/run-state';
import { ChartView } from '../../src/lab/panel/chart-view';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { noisyJournal, RUN_START } from '../helpers/noisy-journal';
import { record } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

// The real module pulls in JupyterLab's web components, which need a browser build; the view
// only constructs MimeModels with it, which here just keep their data.
vi.mock('@jupyterlab/rendermime', () => ({
  MimeModel: class {
    readonly data: Record<string, unknown>;
    constructor(options: { data: Record<string, unknown> }) {
      this.data = options.data;
    }
  },
}));

const trans = nullTranslator.load('jupyterlab_autoresearch');

/** A model fed the records and the engine's state file for them, as the server sends both. */
function modelOf(records: JournalRecord[]): RunModel {
  const model = new RunModel();
  model.reset('t');
  model.handle({ type: 'records', start: 0, records });
  model.handle({ type: 'run_state', run_state: deriveRunState(records, 0, 't') });
  return model;
}

async function drawn(model: RunModel): Promise<ChartView> {
  // A JupyterLab without Vega: the chart says so, and the noise line is still shown.
  const rendermime = { mimeTypes: [] } as never;
  const view = new ChartView(rendermime, trans, () => ({
    experiments: model.experiments,
    metric: model.metric,
    direction: model.direction,
    model,
  }));
  await view.draw();
  return view;
}

describe('ChartView noise line', () => {
  it('shows σ, the best as mean ± se and the trust cost for a run measured with repeats', async () => {
    const view = await drawn(modelOf(noisyJournal()));
    expect(view.noiseLine.hidden).toBe(false);
    const lines = [...view.noiseLine.children].map(l => l.textContent);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^σ 0\.00\d\d \(6 df\) · best val_bpb 0\.982333 ± 0\.00\d\d \(3 runs\) \(#2\)$/);
    expect(lines[1]).toMatch(/^trust: 6 of 11 runs on measurement and confirmation/);
  });

  it('stays hidden before the engine’s state file came', async () => {
    const model = new RunModel();
    model.reset('t');
    model.handle({ type: 'records', start: 0, records: noisyJournal() });
    const view = await drawn(model);
    expect(view.noiseLine.hidden).toBe(true);
  });

  it('stays hidden for a run from before repeats', async () => {
    const start = {
      ...RUN_START,
      config: { ...(RUN_START as { config: object }).config, noise_runs: undefined },
    } as JournalRecord;
    const view = await drawn(modelOf([start, record(0, { status: 'keep' })]));
    expect(view.noiseLine.hidden).toBe(true);
    expect(view.noiseLine.textContent).toBe('');
  });
});

/**
 * A stand-in for JupyterLab's Vega renderer (which needs a browser build): a widget that keeps
 * each spec it is given, as the real one draws it.
 */
class SpecRenderer extends Widget {
  readonly specs: Array<Record<string, unknown>> = [];
  /** The MIME types of each model given (the real renderer draws a PNG too unless one is there). */
  readonly types: string[][] = [];
  async renderModel(model: { data: Record<string, unknown> }): Promise<void> {
    this.specs.push(model.data[VEGALITE_MIME] as Record<string, unknown>);
    this.types.push(Object.keys(model.data));
    this.node.textContent = `chart ${this.specs.length}`;
  }
}

/** A view attached to the page, with a Vega-Lite renderer that records specs. */
function attached(source: { experiments: JournalRecord[] }): { view: ChartView; renderer: SpecRenderer } {
  const renderer = new SpecRenderer();
  const rendermime = { mimeTypes: [VEGALITE_MIME], createRenderer: () => renderer } as never;
  const view = new ChartView(rendermime, trans, () => ({
    experiments: source.experiments.filter(r => r.type === 'experiment') as never,
    metric: 'val_bpb',
    direction: 'lower',
  }));
  Widget.attach(view, document.body);
  return { view, renderer };
}

describe('ChartView', () => {
  afterEach(() => {
    document.body.replaceChildren();
    delete document.body.dataset.jpThemeName;
  });

  it('a new run shows the placeholder alone, at once: the old run’s chart goes', async () => {
    const source = { experiments: [record(0, { status: 'keep', metric: 1 }), record(1, { status: 'discard' })] };
    const { view, renderer } = attached(source);
    await view.draw();
    const plot = view.node.querySelector<HTMLElement>('.jp-AutoresearchChart-plot')!;
    const message = view.node.querySelector<HTMLElement>('.jp-AutoresearchChart-message')!;
    expect(renderer.specs).toHaveLength(1);
    // With a PNG already in the model, JupyterLab's renderer does not draw the chart a second time into one.
    expect(renderer.types[0]).toEqual([VEGALITE_MIME, 'image/png']);
    expect(plot.hidden).toBe(false);
    expect(message.hidden).toBe(true);
    // Start again: the model is reset and has nothing to plot. No waiting out the redraw interval.
    source.experiments = [];
    view.schedule();
    await view.draw();
    expect(message.hidden).toBe(false);
    expect(message.textContent).toBe('The chart appears after the first experiment.');
    expect(plot.hidden).toBe(true);
    expect(view.noiseLine.hidden).toBe(true);
    // The new run's first experiment brings the chart back, drawn from its rows alone.
    source.experiments = [record(0, { status: 'keep', metric: 0.9 })];
    await view.draw();
    expect(plot.hidden).toBe(false);
    expect((renderer.specs.at(-1)!.data as { values: unknown[] }).values).toHaveLength(1);
    view.dispose();
  });

  it('draws in the colours of JupyterLab’s CSS variables, and again when the theme changes', async () => {
    const { view, renderer } = attached({ experiments: [record(0, { status: 'keep', metric: 1 })] });
    // On the chart's own node: jsdom does not inherit custom properties, as a browser does from the theme's :root.
    view.node.style.setProperty('--jp-success-color1', '#388e3c');
    view.node.style.setProperty('--jp-ui-font-color1', 'rgba(0, 0, 0, 0.87)');
    await view.draw();
    const keeps = (spec: Record<string, unknown>) =>
      (spec.layer as Array<{ name: string; encoding: { color: { scale: { range: string[] } } } }>).find(
        l => l.name === 'keeps',
      )!.encoding.color.scale.range[0];
    expect(keeps(renderer.specs[0])).toBe('#388e3c');
    expect((renderer.specs[0].config as { axis: { titleColor: string } }).axis.titleColor).toBe('rgba(0, 0, 0, 0.87)');
    // JupyterLab loads the dark theme's CSS, then marks the body: the chart redraws in its colours.
    view.node.style.setProperty('--jp-success-color1', '#4caf50');
    document.body.dataset.jpThemeName = 'JupyterLab Dark';
    await vi.waitFor(() => expect(view.node.dataset.theme).toBe('JupyterLab Dark'));
    expect(renderer.specs).toHaveLength(2);
    expect(keeps(renderer.specs[1])).toBe('#4caf50');
    view.dispose();
    // Disposed, it no longer listens.
    document.body.dataset.jpThemeName = 'JupyterLab Light';
    await new Promise(resolve => setTimeout(resolve, 20));
    expect(renderer.specs).toHaveLength(2);
  });
});
