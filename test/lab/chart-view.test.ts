// @vitest-environment jsdom
/** The panel's chart: the line of σ, the best as mean ± se and the trust cost above the plot. */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it, vi } from 'vitest';
import type { JournalRecord } from '../../src/core/journal';
import { deriveRunState } from '../../src/core/run-state';
import { ChartView } from '../../src/lab/panel/chart-view';
import { RunModel } from '../../src/lab/panel/run-model';
import { noisyJournal, RUN_START } from '../helpers/noisy-journal';
import { record } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

// The real module pulls in JupyterLab's web components, which need a browser build; the view
// only constructs MimeModels with it, and this test never gets that far.
vi.mock('@jupyterlab/rendermime', () => ({ MimeModel: class {} }));

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
