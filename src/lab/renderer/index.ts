/**
 * The MIME renderer of `application/vnd.autoresearch.experiment+json`: one experiment as a
 * notebook output. Registered as the labextension's `mimeExtension`, so any notebook with
 * these outputs (an export, `show()`) renders them, and the panel uses the same renderer.
 */
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { nullTranslator, type ITranslator, type TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import { EXPERIMENT_MIME } from '../../core/views/bundle';
import { renderExperiment, type LineHighlighter } from './experiment-view';
import { lineHighlighter } from './highlight';

export { EXPERIMENT_MIME };

const CLASS_NAME = 'jp-AutoresearchExperimentOutput';

/** A widget that renders one experiment bundle. */
export class ExperimentRenderer extends Widget implements IRenderMime.IRenderer {
  private readonly _trans: TranslationBundle;
  private readonly _highlight: LineHighlighter | null;

  constructor(options: { translator?: ITranslator; highlight?: LineHighlighter | null } = {}) {
    super();
    this.addClass(CLASS_NAME);
    this._trans = (options.translator ?? nullTranslator).load('jupyterlab_autoresearch');
    this._highlight = options.highlight === undefined ? lineHighlighter() : options.highlight;
  }

  /** Renders the model's experiment data, or a one-line error when the data is not an experiment. */
  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const { parseExperimentData } = await import('./schema');
    const parsed = parseExperimentData(model.data[EXPERIMENT_MIME]);
    if (!parsed.ok) {
      const error = document.createElement('div');
      error.className = 'jp-AutoresearchExperiment-error';
      error.textContent = this._trans.__('Not a valid autoresearch experiment: %1', parsed.error);
      this.node.replaceChildren(error);
      return;
    }
    this.node.replaceChildren(renderExperiment(parsed.data, this._trans, this._highlight));
  }
}

/** The renderer factory: safe (it never runs the data as code or markup). */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [EXPERIMENT_MIME],
  defaultRank: 0,
  createRenderer: options => new ExperimentRenderer({ translator: options.translator }),
};

const extension: IRenderMime.IExtension = {
  id: 'jupyterlab-autoresearch:experiment-renderer',
  description: 'Renders autoresearch experiments as notebook outputs.',
  rendererFactory,
  // Ranked ahead of text/html (rank 50), so the bundle's static HTML fallback is not what shows.
  rank: 0,
  dataType: 'json',
};

export default extension;
