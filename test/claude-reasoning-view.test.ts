// @vitest-environment jsdom
/** The experiment output in JupyterLab shows the model's prediction, its lesson and, collapsed, its reasoning. */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it } from 'vitest';
import { experimentBundle, EXPERIMENT_MIME } from '../src/core/views/bundle';
import { renderExperiment } from '../src/lab/renderer/experiment-view';
import { record } from './helpers/records';

const trans = nullTranslator.load('jupyterlab');

describe("the model's reasoning in the experiment output", () => {
  it('shows the prediction against the outcome, the lesson, the cache hit rate and the reasoning collapsed', () => {
    const r = record(7, {
      delta: 0.0021,
      usage: {
        input_tokens: 1000,
        output_tokens: 500,
        cache_creation_input_tokens: 4000,
        cache_read_input_tokens: 45_000,
      },
      proposal_meta: {
        effort: 'high',
        reasoning: 'The last keeps added steps.\n\n<b>So</b> faster beats bigger.',
        expected_delta: -0.004,
        lesson: { about: 6, text: 'width costs steps' },
      },
    });
    const root = renderExperiment(experimentBundle(r)[EXPERIMENT_MIME], trans);
    expect(root.querySelector('.jp-AutoresearchExperiment-prediction')!.textContent).toBe(
      'Prediction: expected -0.004000, got +0.002100',
    );
    expect(root.querySelector('.jp-AutoresearchExperiment-lesson')!.textContent).toBe(
      'Lesson on #6: width costs steps',
    );
    expect(root.querySelector('[data-key="cached"]')!.textContent).toBe('prompt cached90%');
    const details = root.querySelector<HTMLDetailsElement>('details.jp-AutoresearchExperiment-reasoning')!;
    expect(details.open).toBe(false);
    expect(details.querySelector('summary')!.textContent).toBe("the model's reasoning (effort high)");
    const paras = Array.from(details.querySelectorAll('p')).map(p => p.textContent);
    expect(paras).toEqual(['The last keeps added steps.', '<b>So</b> faster beats bigger.']);
    // Model text is text, never markup.
    expect(details.querySelector('b')).toBeNull();
  });

  it('shows none of it for a proposal without notes', () => {
    const root = renderExperiment(experimentBundle(record(3))[EXPERIMENT_MIME], trans);
    expect(root.querySelector('.jp-AutoresearchExperiment-reasoning')).toBeNull();
    expect(root.querySelector('.jp-AutoresearchExperiment-prediction')).toBeNull();
    expect(root.querySelector('[data-key="cached"]')).toBeNull();
  });
});
