// @vitest-environment jsdom
/**
 * The panel's transfer study: the dialog's fields read as a request (or refused in words), and
 * the table of a summary.json the schema accepts, one row per kept change with its verdict.
 */
import { describe, expect, it, vi } from 'vitest';
import { TransferSummaryFile } from '../../src/core/views/transfer-view';
import { envLines, parseTransferFields } from '../../src/lab/panel/transfer/transfer-fields';
import { transferTable } from '../../src/lab/panel/transfer/transfer-section';
import { TransferState } from '../../src/lab/api/transfer';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

// The real module pulls in JupyterLab's web components, which need a browser build; the section
// only constructs MimeModels with it, and these tests never draw a chart.
vi.mock('@jupyterlab/rendermime', () => ({ MimeModel: class {} }));

const est = (mean: number | null, runs = 2) => ({ mean, runs });
const SUMMARY = TransferSummaryFile.parse({
  tag: 't1',
  metric: 'val_bpb',
  direction: 'lower',
  keep_sigma: 2,
  env: { AUTORESEARCH_SCALE: '2' },
  scale: '2×',
  budget_s: 6,
  search_budget_s: 3,
  runs: 2,
  baseline: { n: 0, commit: 'a'.repeat(40), search: est(2.5), transfer: est(2.4) },
  changes: [
    {
      n: 3,
      commit: 'b'.repeat(40),
      description: 'LEARNING_RATE up',
      delta_search: -0.02,
      se_search: 0.004,
      delta_transfer: -0.03,
      se_transfer: 0.005,
      verdict: 'transferred',
      search: est(2.48),
      transfer: est(2.37),
      ablate: { delta: -0.018, se: 0.004, delta_kept: -0.02, verdict: 'holds', runs: 2, conflict: null },
    },
    {
      n: 5,
      commit: 'c'.repeat(40),
      description: 'BATCH_SIZE down',
      delta_search: -0.01,
      se_search: 0.004,
      delta_transfer: 0.02,
      se_transfer: 0.005,
      verdict: 'reversed',
      search: est(2.47),
      transfer: est(2.39),
      ablate: { delta: null, se: null, delta_kept: -0.01, verdict: 'conflict', runs: 0, conflict: 'train.py' },
    },
  ],
  summary: {
    changes: 2,
    transferred: 1,
    neutral: 0,
    reversed: 1,
    unmeasured: 0,
    total_delta_search: -0.03,
    total_delta_transfer: -0.01,
    total_gain_search: 0.03,
    total_gain_transfer: 0.01,
    sigma_search: 0.006,
    sigma_transfer: 0.007,
    complete: true,
    line: '1 of 2 changes transferred; total gain 0.030 at search scale, 0.010 at 2×',
  },
});

describe('the transfer dialog', () => {
  const fields = { env: '', budget: '', runs: '', ablate: false };

  it('reads KEY=VALUE lines, a budget, runs and ablate as the request POST transfer takes', () => {
    const env = `${envLines({ AUTORESEARCH_SCALE: '2' })}\n\n# a comment\n DEPTH = 8 \nURL=http://x/?a=b`;
    expect(parseTransferFields({ env, budget: '6', runs: '3', ablate: true })).toEqual({
      request: {
        env: { AUTORESEARCH_SCALE: '2', DEPTH: '8', URL: 'http://x/?a=b' },
        budget_s: 6,
        runs: 3,
        ablate: true,
      },
    });
    expect(parseTransferFields({ ...fields, env: 'A=' })).toEqual({ request: { env: { A: '' } } });
  });

  it('says what is wrong rather than sending it', () => {
    const error = (f: Partial<typeof fields>) => {
      const r = parseTransferFields({ ...fields, env: 'A=1', ...f });
      return 'error' in r ? r.error : null;
    };
    expect(error({ env: '' })).toMatch(/at least one KEY=VALUE/);
    expect(error({ env: 'A=1\nnot a pair' })).toMatch(/^line 2: "not a pair" is not KEY=VALUE/);
    expect(error({ env: '1A=2' })).toMatch(/line 1/);
    expect(error({ budget: '0' })).toMatch(/budget must be a number of seconds above 0/);
    expect(error({ runs: '1.5' })).toMatch(/runs must be a whole number of 2 or more/);
    expect(error({ runs: '1' })).toMatch(/runs must be a whole number of 2 or more/);
    expect(error({})).toBeNull();
  });
});

describe('GET transfer as the panel reads it', () => {
  it('takes program.md’s values as YAML typed them, and absent defaults as none', () => {
    const state = TransferState.parse({
      tag: 't1',
      running: false,
      summary: null,
      defaults: { env: { AUTORESEARCH_SCALE: 2 }, budget_s: null },
      failure: null,
      log: null,
    });
    expect(state.defaults).toEqual({ env: { AUTORESEARCH_SCALE: '2' }, budget_s: null });
    expect(TransferState.parse({ tag: 't1', running: true, summary: null, defaults: {} }).defaults).toEqual({
      env: {},
      budget_s: null,
    });
    expect(TransferState.safeParse({ tag: 't1', running: 'yes', summary: null }).success).toBe(false);
  });
});

describe('the transfer table', () => {
  it('has a row per kept change with both deltas, the verdict and the ablation', () => {
    const table = transferTable(SUMMARY);
    const head = [...table.querySelectorAll('th')].map(th => th.textContent);
    expect(head).toEqual([
      '#',
      'commit',
      'change',
      'Δ search (3 s)',
      'Δ at 2× (6 s)',
      'verdict',
      'Δ removed from best',
      'ablation',
    ]);
    const rows = [...table.querySelectorAll('tbody tr')].map(tr => [...tr.children].map(td => td.textContent));
    expect(rows).toHaveLength(2);
    expect(rows[0].slice(0, 3)).toEqual(['#3', 'bbbbbbb', 'LEARNING_RATE up']);
    expect(rows[0][3]).toMatch(/^−?-?0\.02\d* ± 0\.004/);
    expect(rows[0][5]).toBe('transferred');
    expect(rows[1][5]).toBe('reversed');
    expect(rows[1][6]).toBe('revert conflicts');
    expect(table.querySelector('tbody tr.jp-mod-reversed')?.getAttribute('data-n')).toBe('5');
  });
});
