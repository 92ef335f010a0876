/** The exported notebook's summary line and outputs for a noise-aware journal, and for an older one. */
import { describe, expect, it } from 'vitest';
import { EXPERIMENT_MIME } from '../src/core/views/bundle';
import type { JournalRecord } from '../src/core/journal/journal';
import { LITERAL_DOLLAR } from '../src/core/views/markdown-text';
import { buildNotebook } from '../src/core/views/notebook';
import { noisyJournal, RUN_START } from './helpers/noisy-journal';
import { record } from './helpers/records';

const summaryOf = (records: JournalRecord[]) =>
  buildNotebook({ program: '# P\n', records, tag: 't' })
    .cells.find(c => c.id === 'summary')!
    .source.join('');

describe('buildNotebook summary', () => {
  it('a noise-aware run: the best as mean ± se over its runs, σ with its df, and the trust cost by proposer', () => {
    const records = noisyJournal();
    // A second proposer, so the per-proposer figures differ from the total.
    const two = records.map(r => (r.type === 'experiment' && r.n === 1 ? { ...r, proposer: 'offline' } : r));
    const text = summaryOf(two);
    expect(text).toMatch(
      /best val_bpb 0\.982333 ± 0\.00\d\d \(3 runs\) \(#2, `bbbbbbb`, from 1\.000000 at the baseline; lower is better\)/,
    );
    expect(text).toMatch(/ · σ 0\.00\d\d \(6 df\) · /);
    const $ = LITERAL_DOLLAR;
    expect(text).toContain(
      `trust: 6 of 11 runs on measurement and confirmation (2 noise, 3 confirmation, 1 re-measuring the best); 0.6 accelerator-min and ${$}0.0028 per 0.001 gained (offline: no gain yet; claude: 0.4 accelerator-min and ${$}0.0022 per 0.001 gained).`,
    );
    // No `$` left: two in a cell are a formula to every notebook renderer (src/core/views/markdown-text.ts).
    expect(text).not.toContain('$');
    // Still one line of figures after the heading, then the order the experiments come in.
    expect(text.split('\n').filter(Boolean)).toHaveLength(3);
    expect(text.split('\n').filter(Boolean)[2]).toBe('The experiments below are in the order they ran, #0 first.');
  });

  it('each experiment output carries its runs and verdict', () => {
    const nb = buildNotebook({ program: '', records: noisyJournal(), tag: 't' });
    const cell = nb.cells.find(c => c.id === 'experiment-2')!;
    const data = (cell as { outputs: Array<{ data: Record<string, unknown> }> }).outputs[0].data;
    expect((data[EXPERIMENT_MIME] as { runs: unknown[] }).runs).toHaveLength(2);
    expect((data['text/html'] as string[]).join('')).toContain('2 runs: mean 0.982000 ± 0.0028, confirmed');
  });

  it('a run from before repeats has the summary it always had', () => {
    const start = {
      ...RUN_START,
      config: { ...(RUN_START as { config: object }).config, noise_runs: undefined },
    } as JournalRecord;
    const old = [
      start,
      record(0, { status: 'keep', metric: 1 }),
      record(1, { status: 'keep', metric: 0.99, cost_usd: 0.5 }),
    ];
    expect(summaryOf(old)).toBe(
      '## Run `t` on branch `autoresearch/t`\n\n2 experiments (2 keep) · best val_bpb 0.990000 (#1, `bbbbbbb`, from 1.000000 at the baseline; lower is better) · proposals cost ' +
        `${LITERAL_DOLLAR}0.5000.\n\n` +
        'The experiments below are in the order they ran, #0 first.\n',
    );
  });
});
