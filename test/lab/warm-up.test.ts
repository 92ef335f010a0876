// @vitest-environment jsdom
/**
 * What the panel readies before its first open on a page (src/lab/panel/warm-up.ts) and the
 * typesetter that leaves MathJax unloaded for text without maths (src/lab/panel/lazy-math.ts).
 */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { VEGALITE_MIME } from '../../src/core/views/chart';

/** A rendermime with a Vega-Lite renderer (and the markdown one, when listed) that keeps what it was asked to draw. */
function recordingRendermime(mimeTypes = [VEGALITE_MIME]) {
  const drawn: Array<{ data: Record<string, unknown>; metadata: Record<string, unknown> }> = [];
  const markdown: string[] = [];
  let disposed = 0;
  const rendermime = {
    mimeTypes,
    latexTypesetter: null,
    createRenderer: (mime: string) => {
      expect(mimeTypes).toContain(mime);
      return {
        renderModel: async (model: (typeof drawn)[number]) =>
          void (mime === VEGALITE_MIME ? drawn.push(model) : markdown.push(String(model.data[mime]))),
        dispose: () => void (disposed += 1),
      };
    },
  };
  return { rendermime: rendermime as never, drawn, markdown, disposed: () => disposed };
}

/** Editor languages that note what was asked for. */
function recordingLanguages() {
  const asked: string[] = [];
  return { languages: { getLanguage: async (mime: string) => void asked.push(mime) } as never, asked };
}

/** The module afresh: its once-per-page state starts over. */
async function warmUp() {
  vi.resetModules();
  return import('../../src/lab/panel/warm-up');
}

/** A chart model maker as the panel's chart has one: the spec, a stand-in PNG, the embed options. */
const METADATA = { [VEGALITE_MIME]: { embed_options: { renderer: 'svg' } } };
const chartModel = (spec: Record<string, unknown>) =>
  ({ data: { [VEGALITE_MIME]: spec, 'image/png': 'x' }, metadata: METADATA }) as never;

/** Lets requestIdleCallback (jsdom has none: setTimeout) and the warm-up's awaits run. */
const settle = () => new Promise(resolve => setTimeout(resolve, 20));

describe('warming up for the panel', () => {
  beforeEach(() => window.localStorage.clear());

  it('does nothing in a browser that has never opened a panel', async () => {
    const { warmUpWhenIdle } = await warmUp();
    const { rendermime, drawn } = recordingRendermime();
    warmUpWhenIdle(rendermime, chartModel);
    await settle();
    expect(drawn).toHaveLength(0);
  });

  it('draws the made-up long run once, off the page, with the panel chart’s metadata, then lets it go', async () => {
    const { notePanelOpened, warmUpWhenIdle } = await warmUp();
    notePanelOpened();
    const { rendermime, drawn, disposed } = recordingRendermime();
    warmUpWhenIdle(rendermime, chartModel);
    warmUpWhenIdle(rendermime, chartModel);
    await settle();
    expect(drawn).toHaveLength(1);
    expect(drawn[0].metadata).toEqual(METADATA);
    expect(drawn[0].data['image/png']).toBe('x');
    const spec = drawn[0].data[VEGALITE_MIME] as { layer: Array<{ name: string }> };
    expect(spec.layer.map(l => l.name)).toContain('discard spread');
    expect(disposed()).toBe(1);
  });

  it('renders a made-up program and loads a markdown cell editor’s language, once, in a browser that opened a panel', async () => {
    const { notePanelOpened, warmUpWhenIdle, MARKDOWN_CELL_MIME } = await warmUp();
    const never = recordingRendermime([VEGALITE_MIME, 'text/markdown']);
    const neverLanguages = recordingLanguages();
    warmUpWhenIdle(never.rendermime, chartModel, neverLanguages.languages);
    await settle();
    expect([never.markdown, neverLanguages.asked]).toEqual([[], []]);

    notePanelOpened();
    const { rendermime, markdown, drawn, disposed } = recordingRendermime([VEGALITE_MIME, 'text/markdown']);
    const { languages, asked } = recordingLanguages();
    warmUpWhenIdle(rendermime, chartModel, languages);
    await settle();
    expect(asked).toEqual([MARKDOWN_CELL_MIME]);
    expect(markdown).toHaveLength(1);
    expect(markdown[0]).toMatch(/^# .*`val_bpb`/s);
    expect(drawn).toHaveLength(1);
    expect(disposed()).toBe(2); // the markdown renderer and the chart's
    expect(document.body.dataset.autoresearchWarmUp).toBe('done');
  });

  it('is not needed once a panel has drawn its chart, nor possible without a Vega-Lite renderer', async () => {
    let module = await warmUp();
    module.notePanelOpened();
    module.noteVegaUsed();
    const first = recordingRendermime();
    module.warmUpWhenIdle(first.rendermime, chartModel);
    module = await warmUp();
    const none = recordingRendermime([]);
    module.warmUpWhenIdle(none.rendermime, chartModel);
    await settle();
    expect(first.drawn).toHaveLength(0);
    expect(none.drawn).toHaveLength(0);
  });
});

describe('MathJax only for what may hold maths', () => {
  it('tells text MathJax would leave alone from text it may typeset', async () => {
    const { mayHoldMath } = await import('../../src/lab/panel/lazy-math');
    for (const text of ['Lower `val_bpb`. One change at a time.', 'a\\b', 'cost: 5 dollars', '']) {
      expect(mayHoldMath(text), text).toBe(false);
    }
    for (const text of ['$x$', 'costs $5', '$$a$$', '\\(x\\)', '\\[x\\]', '\\begin{align}x\\end{align}']) {
      expect(mayHoldMath(text), text).toBe(true);
    }
  });

  it('hands the typesetter only elements with maths, and a registry without one is left as it is', async () => {
    const { lazyTypesetter, withLazyMath } = await import('../../src/lab/panel/lazy-math');
    const typeset: string[] = [];
    const lazy = lazyTypesetter({ typeset: element => void typeset.push(element.textContent ?? '') });
    const plain = document.createElement('div');
    plain.textContent = 'no maths here';
    const maths = document.createElement('div');
    maths.innerHTML = '<p>the loss $L = -\\log p$</p>';
    lazy.typeset(plain);
    lazy.typeset(maths);
    expect(typeset).toEqual(['the loss $L = -\\log p$']);

    const bare = { latexTypesetter: null, clone: () => expect.unreachable('cloned') };
    expect(withLazyMath(bare as never)).toBe(bare);
    let cloned: { latexTypesetter?: { typeset(e: HTMLElement): unknown } } = {};
    const withOne = { latexTypesetter: { typeset: () => undefined }, clone: (o: typeof cloned) => (cloned = o) };
    withLazyMath(withOne as never);
    expect(cloned.latexTypesetter?.typeset(plain)).toBeUndefined();
    expect(cloned.latexTypesetter).not.toBe(withOne.latexTypesetter);
  });
});
