// @vitest-environment jsdom
/**
 * One figure, one value: fed one run state, the strip, the best's own header, the chart's noise
 * line and the status bar show the same best, ± and σ (with its df), whatever the best's record
 * measured when it was judged.
 */
import { nullTranslator } from '@jupyterlab/translation';
import { CommandRegistry } from '@lumino/commands';
import { describe, expect, it, vi } from 'vitest';
import { experimentData } from '../../src/core/views/bundle';
import type { ExperimentRecord, JournalRecord } from '../../src/core/journal/journal';
import { deriveRunState } from '../../src/core/journal/run-state';
import { ChartView } from '../../src/lab/panel/chart-view';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { bestHeaderFigures, describeBest } from '../../src/lab/panel/run/state-words';
import { RunToolbar } from '../../src/lab/panel/toolbar/run-toolbar';
import { renderExperiment } from '../../src/lab/renderer/experiment-view';
import { showEstimateNow } from '../../src/lab/renderer/runs-view';
import { noisyJournal } from '../helpers/noisy-journal';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

vi.mock('@jupyterlab/rendermime', () => ({
  MimeModel: class {
    constructor(readonly options: unknown) {}
  },
}));

const trans = nullTranslator.load('jupyterlab_autoresearch');

/** The ± after the best's value, and σ with its df, as each place writes them. */
function figuresIn(text: string): { value: string | null; pm: string | null; sigma: string | null } {
  return {
    value: /(\d\.\d{6})/.exec(text)?.[1] ?? null,
    pm: /± (\d\.\d+)/.exec(text)?.[1] ?? null,
    sigma: /σ (\d\.\d+) \((\d+) df\)/.exec(text)?.slice(1).join(' ') ?? null,
  };
}

async function placesFor(records: JournalRecord[]) {
  const model = new RunModel();
  model.reset('t');
  model.handle({ type: 'records', start: 0, records });
  model.handle({ type: 'run_state', run_state: deriveRunState(records, 0, 't') });
  const strip = new RunToolbar({ trans, model, commands: new CommandRegistry(), args: () => ({ path: 'ws' }) });
  const chart = new ChartView({ mimeTypes: [] } as never, trans, () => ({
    experiments: model.experiments,
    metric: model.metric,
    direction: model.direction,
    model,
  }));
  await chart.draw();
  const best = bestHeaderFigures(model)!;
  const record = model.experiments.find(e => e.n === best.n) as ExperimentRecord;
  const output = renderExperiment(experimentData(record), trans);
  const header = output.querySelector<HTMLElement>('.jp-AutoresearchExperiment-header')!;
  const asJudged = header.textContent ?? '';
  showEstimateNow(header, best.now, trans);
  const places = {
    strip: strip.best.textContent ?? '',
    header: header.textContent ?? '',
    chart: chart.noiseLine.textContent ?? '',
    status: describeBest(model, trans),
  };
  strip.dispose();
  chart.dispose();
  return { model, places, asJudged, header };
}

describe('the best, its ± and σ', () => {
  it('read the same in the strip, the best’s header, the chart and the status bar', async () => {
    const { model, places, asJudged } = await placesFor(noisyJournal());
    // The record of #2 said 0.982000 ± 0.0028 over its 2 runs; it was re-measured since.
    expect(figuresIn(asJudged)).toMatchObject({ value: '0.982000', pm: '0.0028' });
    const state = model.runState!;
    const pm = (state.sigma! / Math.sqrt(state.best!.runs)).toFixed(4);
    for (const [place, text] of Object.entries(places)) {
      expect({ place, ...figuresIn(text) }).toMatchObject({ place, value: '0.982333', pm });
    }
    const sigma = `${state.sigma!.toFixed(4)} ${state.sigma_df}`;
    expect(figuresIn(places.chart).sigma).toBe(sigma);
    expect(figuresIn(places.status).sigma).toBe(sigma);
    expect(places.header).toContain('(3 runs)');
  });

  it('follow the next state at once, the chart’s line too, and a former best’s header says its own again', async () => {
    const records = noisyJournal();
    const { model, header, asJudged } = await placesFor(records);
    const chart = new ChartView({ mimeTypes: [] } as never, trans, () => ({
      experiments: model.experiments,
      metric: model.metric,
      direction: model.direction,
      model,
    }));
    await chart.draw();
    const before = figuresIn(chart.noiseLine.textContent ?? '').sigma;
    // One more re-measure of the best: σ and its df change; the chart's line follows the run
    // state when it comes, not at the chart's next draw (which waits out its interval).
    const more = [
      ...records,
      { ...(records.find(r => r.type === 'run' && r.n === 2) as JournalRecord), metric: 0.99, k: 4 } as JournalRecord,
    ];
    model.handle({ type: 'run_state', run_state: deriveRunState(more, 0, 't') });
    chart.schedule();
    const after = figuresIn(chart.noiseLine.textContent ?? '').sigma;
    expect(after).not.toBe(before);
    expect(after).toBe(figuresIn(describeBest(model, trans)).sigma);
    showEstimateNow(header, null, trans);
    expect(header.textContent).toBe(asJudged);
    chart.dispose();
  });
});
