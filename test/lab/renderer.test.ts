// @vitest-environment jsdom
/** The experiment MIME renderer, on bundles made by the engine's own experimentBundle. */
import { describe, expect, it, vi } from 'vitest';
import { experimentBundle, EXPERIMENT_MIME } from '../../src/core/views/bundle';
import type { ExperimentRecord } from '../../src/core/journal/journal';
import { parseDiff } from '../../src/lab/renderer/diff';
import { deltaQuality } from '../../src/lab/renderer/experiment-view';
import extension, { ExperimentRenderer, rendererFactory } from '../../src/lab/renderer/index';
import { noisyExperiments } from '../helpers/noisy-journal';
import { record } from '../helpers/records';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

/** Renders a record's bundle the way JupyterLab would: a renderer from the factory and a mime model. */
async function render(r: ExperimentRecord, opts: Parameters<typeof experimentBundle>[1] = {}): Promise<HTMLElement> {
  const bundle = experimentBundle(r, opts);
  const renderer = rendererFactory.createRenderer({
    mimeType: EXPERIMENT_MIME,
    sanitizer: { sanitize: (s: string) => s },
    resolver: null,
    linkHandler: null,
    latexTypesetter: null,
  }) as ExperimentRenderer;
  await renderer.renderModel({ trusted: false, data: bundle as never, metadata: {}, setData: () => undefined });
  document.body.appendChild(renderer.node);
  return renderer.node;
}

const q = (root: HTMLElement, sel: string): HTMLElement => {
  const found = root.querySelector<HTMLElement>(sel);
  expect(found, sel).not.toBeNull();
  return found!;
};

describe('experiment renderer', () => {
  it('shows Slurm’s queue time after the run time, labelled and explained, apart from it', async () => {
    const node = await render(record(4, { timings: { propose_s: 1, run_s: 42, total_s: 170, queue_s: 125 } }));
    const keys = [...node.querySelectorAll<HTMLElement>('.jp-AutoresearchExperiment-resource')].map(i => i.dataset.key);
    expect(keys).toEqual(['lines', 'memory', 'time', 'queue', 'cost', 'commit']);
    const queue = q(node, '[data-key="queue"]');
    expect(q(queue, '.jp-AutoresearchExperiment-resourceLabel').textContent).toBe('queue time');
    expect(q(queue, '.jp-AutoresearchExperiment-resourceValue').textContent).toBe('2.1 min');
    expect(queue.title).toContain('not in the run time');
    expect(q(node, '[data-key="time"] .jp-AutoresearchExperiment-resourceValue').textContent).toBe('42.0 s');
  });

  it('is a safe mime extension for the experiment type, ranked ahead of text/html', () => {
    expect(extension.rendererFactory.mimeTypes).toEqual([EXPERIMENT_MIME]);
    expect(extension.rendererFactory.safe).toBe(true);
    expect(extension.rank).toBeLessThan(50);
  });

  it('renders a keep: badge, metric, better delta, rationale, resources, diff open with +/- lines', async () => {
    const node = await render(
      record(3, { status: 'keep', metric: 0.99, best_before: 1, delta: -0.01, memory_gb: 44.1, cost_usd: 0.0123 }),
    );
    expect(q(node, '.jp-AutoresearchExperiment-number').textContent).toBe('#3');
    const badge = q(node, '.jp-AutoresearchExperiment-status');
    expect(badge.textContent).toBe('keep');
    expect(badge.classList).toContain('jp-mod-keep');
    expect(q(node, '.jp-AutoresearchExperiment-metricName').textContent).toBe('val_bpb');
    expect(q(node, '.jp-AutoresearchExperiment-metricValue').textContent).toBe('0.990000');
    const delta = q(node, '.jp-AutoresearchExperiment-delta');
    expect(delta.textContent).toBe('-0.010000');
    expect(delta.classList).toContain('jp-mod-better');
    expect(q(node, '.jp-AutoresearchExperiment-description').textContent).toBe(record(3).description);
    expect(q(node, '.jp-AutoresearchExperiment-rationale').textContent).toBe('Why: because experiment 2 suggested it');
    expect(q(node, '[data-key="memory"] .jp-AutoresearchExperiment-resourceValue').textContent).toBe('44.1 GB');
    expect(q(node, '[data-key="cost"] .jp-AutoresearchExperiment-resourceValue').textContent).toBe('$0.0123');
    expect(q(node, '[data-key="time"] .jp-AutoresearchExperiment-resourceValue').textContent).toBe('5.0 min');
    expect(q(node, '[data-key="lines"] .jp-AutoresearchExperiment-resourceValue').textContent).toBe('+1 −1');
    expect(node.querySelector('[data-key="queue"]')).toBeNull(); // not run through Slurm
    const diff = q(node, 'details.jp-AutoresearchExperiment-diff') as HTMLDetailsElement;
    expect(diff.open).toBe(true);
    const lines = [...diff.querySelectorAll('.jp-AutoresearchExperiment-diffLine')];
    expect(lines.map(l => l.className.replace('jp-AutoresearchExperiment-diffLine jp-mod-', ''))).toEqual([
      'file',
      'file',
      'hunk',
      'del',
      'add',
      'context',
    ]);
    expect(lines[3].textContent).toBe('-LEARNING_RATE = 0.001');
    expect(lines[4].textContent).toBe('+LEARNING_RATE = 0.0040');
    expect(node.querySelector('.jp-AutoresearchExperiment-log')).toBeNull();
  });

  it('renders a discard: worse delta in red, diff collapsed', async () => {
    const node = await render(record(4, { status: 'discard', metric: 1.02, best_before: 1, delta: 0.02 }));
    expect(q(node, '.jp-AutoresearchExperiment-status').textContent).toBe('discard');
    const delta = q(node, '.jp-AutoresearchExperiment-delta');
    expect(delta.textContent).toBe('+0.020000');
    expect(delta.classList).toContain('jp-mod-worse');
    expect((q(node, 'details.jp-AutoresearchExperiment-diff') as HTMLDetailsElement).open).toBe(false);
    expect(node.querySelector('.jp-AutoresearchExperiment-worker')).toBeNull();
  });

  it('names the worker of an experiment from a run with several', async () => {
    const node = await render(record(5, { status: 'discard', worker: 2 }));
    expect(q(node, '.jp-AutoresearchExperiment-worker').textContent).toBe('worker 2');
  });

  it('reads the delta against the direction: for a higher-is-better metric a rise is better', async () => {
    const node = await render(record(5, { status: 'keep', metric: 0.8, best_before: 0.7, delta: 0.1 }), {
      metric: 'accuracy',
      direction: 'higher',
    });
    expect(q(node, '.jp-AutoresearchExperiment-metricName').textContent).toBe('accuracy');
    expect(q(node, '.jp-AutoresearchExperiment-delta').classList).toContain('jp-mod-better');
    expect(deltaQuality(0, 'lower')).toBe('same');
    expect(deltaQuality(null, 'higher')).toBeNull();
  });

  it('renders a crash with its reason and log tail, as text, never as markup', async () => {
    const log =
      Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n') +
      '\n<img src=x onerror=alert(1)> RuntimeError: boom\n';
    const node = await render(record(6, { status: 'crash' }), { log });
    expect(q(node, '.jp-AutoresearchExperiment-status').textContent).toBe('crash');
    expect(q(node, '.jp-AutoresearchExperiment-metricValue').textContent).toBe('—');
    expect(node.querySelector('.jp-AutoresearchExperiment-delta')).toBeNull();
    expect(q(node, '.jp-AutoresearchExperiment-reason').textContent).toBe(
      'Reason: exited with code 1: RuntimeError: boom',
    );
    expect((q(node, 'details.jp-AutoresearchExperiment-diff') as HTMLDetailsElement).open).toBe(false);
    const logBox = q(node, 'details.jp-AutoresearchExperiment-log') as HTMLDetailsElement;
    expect(logBox.open).toBe(true);
    const tail = q(logBox, 'pre').textContent!;
    expect(tail.split('\n')).toHaveLength(30);
    expect(tail).toContain('<img src=x onerror=alert(1)> RuntimeError: boom');
    expect(tail).not.toContain('line 10\n');
    expect(node.querySelector('img')).toBeNull();
  });

  it('shows each status with its own badge class', async () => {
    for (const status of ['interrupted', 'rejected'] as const) {
      const node = await render(record(7, { status, metric: null, delta: null, commit: null }));
      const badge = q(node, '.jp-AutoresearchExperiment-status');
      expect(badge.textContent).toBe(status);
      expect(badge.classList).toContain(`jp-mod-${status}`);
      expect(q(node, '[data-key="commit"] .jp-AutoresearchExperiment-resourceValue').textContent).toBe('—');
    }
  });

  it('renders data that is not an experiment as a one-line error', async () => {
    const renderer = new ExperimentRenderer();
    await renderer.renderModel({
      trusted: false,
      data: { [EXPERIMENT_MIME]: { n: 'x' } },
      metadata: {},
      setData: () => undefined,
    });
    expect(q(renderer.node, '.jp-AutoresearchExperiment-error').textContent).toMatch(
      /^Not a valid autoresearch experiment/,
    );
  });

  /** A renderer whose line highlighter wraps each line in a `.tok` span and keeps the lines it was given. */
  async function highlighted(status: 'keep' | 'discard'): Promise<{ renderer: ExperimentRenderer; seen: string[] }> {
    const seen: string[] = [];
    const renderer = new ExperimentRenderer({
      highlight: async (code, el) => {
        seen.push(code);
        el.replaceChildren(Object.assign(document.createElement('span'), { className: 'tok', textContent: code }));
      },
    });
    await renderer.renderModel({
      trusted: false,
      data: experimentBundle(record(1, { status })) as never,
      metadata: {},
      setData: () => undefined,
    });
    await new Promise(resolve => setTimeout(resolve, 0));
    return { renderer, seen };
  }

  it('uses a line highlighter for code lines when one is given', async () => {
    const { renderer, seen } = await highlighted('keep');
    expect(seen).toEqual(['LEARNING_RATE = 0.001', 'LEARNING_RATE = 0.0020', 'N_LAYER = 4']);
    const add = q(renderer.node, '.jp-mod-add');
    expect(q(add, '.jp-AutoresearchExperiment-diffCode .tok').textContent).toBe('LEARNING_RATE = 0.0020');
    expect(q(add, '.jp-AutoresearchExperiment-diffPrefix').textContent).toBe('+');
    expect(add.textContent).toBe('+LEARNING_RATE = 0.0020');
  });

  it('highlights a folded diff (a discard’s) only once it is opened', async () => {
    const { renderer, seen } = await highlighted('discard');
    const details = q(renderer.node, 'details.jp-AutoresearchExperiment-diff') as HTMLDetailsElement;
    expect(details.open).toBe(false);
    expect(seen).toEqual([]);
    expect(q(renderer.node, '.jp-mod-add').textContent).toBe('+LEARNING_RATE = 0.0020');
    details.open = true;
    details.dispatchEvent(new Event('toggle'));
    details.dispatchEvent(new Event('toggle')); // once only, however often it is toggled
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(seen).toEqual(['LEARNING_RATE = 0.001', 'LEARNING_RATE = 0.0020', 'N_LAYER = 4']);
    expect(q(q(renderer.node, '.jp-mod-add'), '.tok').textContent).toBe('LEARNING_RATE = 0.0020');
  });
});

describe('experiment renderer, noise-aware records', () => {
  const [, discard, keep, withinNoise, crash, reused] = noisyExperiments();

  it('a confirmed keep: mean ± se (k runs) in the header, each run with metric and seed, σ and the floor', async () => {
    const node = await render(keep);
    expect(q(node, '.jp-AutoresearchExperiment-metricValue').textContent).toBe('0.982000');
    expect(q(node, '.jp-AutoresearchExperiment-spread').textContent).toBe('± 0.0028 (2 runs)');
    expect(q(node, '.jp-AutoresearchExperiment-reason').textContent).toBe(
      'Reason: beats the noise (−0.0180; floor 0.0073 at 2σ, 2 runs)',
    );
    expect(q(node, '.jp-AutoresearchExperiment-noise').textContent).toBe(
      'Noise: σ 0.0040 per run; a gain counts beyond 0.0073 (2σ of the difference, best over 3 runs); runs spent: 1 measure, 1 confirm',
    );
    expect(q(node, '.jp-AutoresearchExperiment-confirmed').textContent).toBe('confirmed');
    const runs = [...node.querySelectorAll('.jp-AutoresearchExperiment-run')];
    expect(runs.map(r => r.textContent)).toEqual(['0.980000seed 2001', '0.984000seed 2002']);
    expect(runs.map(r => (r as HTMLElement).dataset.k)).toEqual(['1', '2']);
    expect(node.querySelector('.jp-AutoresearchExperiment-sameAs')).toBeNull();
  });

  it('a discard shows its runs but no confirmation badge; a crashed run says so', async () => {
    const node = await render(withinNoise);
    expect(q(node, '.jp-AutoresearchExperiment-spread').textContent).toBe('± 0.0023 (3 runs)');
    expect(node.querySelector('.jp-AutoresearchExperiment-confirmed')).toBeNull();
    expect(node.querySelectorAll('.jp-AutoresearchExperiment-run')).toHaveLength(3);
    expect(q(await render(discard), '.jp-AutoresearchExperiment-spread').textContent).toBe('± 0.0040 (1 run)');
    const crashed = await render(crash);
    expect(q(crashed, '.jp-AutoresearchExperiment-run.jp-mod-crashed').textContent).toBe('crashedseed 4001');
    expect(crashed.querySelector('.jp-AutoresearchExperiment-spread')).toBeNull();
  });

  it('a reused result names the experiment whose result it reports; its runs are marked reused', async () => {
    const node = await render(reused);
    const same = q(node, '.jp-AutoresearchExperiment-sameAs');
    expect(same.textContent).toBe('Reused: same code as #2: its result is reported, nothing ran again');
    expect(same.dataset.sameAs).toBe('2');
    expect(node.querySelectorAll('.jp-AutoresearchExperiment-run.jp-mod-reused')).toHaveLength(2);
  });

  it('a record from before repeats has none of it', async () => {
    const node = await render(record(3, { status: 'keep', metric: 0.99, best_before: 1, delta: -0.01 }));
    for (const sel of ['spread', 'noise', 'runs', 'sameAs', 'confirmed']) {
      expect(node.querySelector(`.jp-AutoresearchExperiment-${sel}`), sel).toBeNull();
    }
  });
});

describe('parseDiff', () => {
  it('tells file headers from removed lines that start with dashes', () => {
    const kinds = parseDiff(
      'diff --git a/t.py b/t.py\nindex 1..2 100644\n--- a/t.py\n+++ b/t.py\n@@ -1,2 +1,2 @@\n--- x\n+++y\n ctx\n',
    ).map(l => l.kind);
    expect(kinds).toEqual(['file', 'file', 'file', 'file', 'hunk', 'del', 'add', 'context']);
    expect(parseDiff('')).toEqual([]);
  });
});
