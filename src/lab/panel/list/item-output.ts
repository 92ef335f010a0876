/**
 * One listed experiment's output: its whole record, fetched when the event stream's replay sent it
 * light (src/core/journal/light-record.ts), and its log tail for a crash, rendered by the
 * `application/vnd.autoresearch.experiment+json` MIME renderer through JupyterLab's rendermime.
 */
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { MimeModel } from '@jupyterlab/rendermime';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { Widget } from '@lumino/widgets';
import type { ExperimentRecord } from '../../../core/journal/journal';
import { isLight } from '../../../core/journal/light-record';
import { EXPERIMENT_MIME, experimentData } from '../../../core/views/bundle';

export type OutputRenderer = Widget & { renderModel(model: MimeModel): Promise<void> };

/** Where an output's parts come from. */
export interface IOutputSource {
  rendermime: IRenderMimeRegistry;
  trans: TranslationBundle;
  /** The log of a crashed experiment, for its log tail. */
  fetchLog: (n: number) => Promise<string | null>;
  /** An experiment whole, for one the event stream's replay sent light (src/core/journal/light-record.ts). */
  fetchExperiment?: (n: number) => Promise<ExperimentRecord | null>;
  metric: () => string;
  direction: () => 'lower' | 'higher';
}

/** A renderer for an experiment's output, or null where rendermime has none. */
export function outputRenderer(source: IOutputSource): OutputRenderer | null {
  return source.rendermime.createRenderer(EXPERIMENT_MIME) as OutputRenderer | null;
}

/** The record whole: itself unless it is light, else fetched; a string says why it could not be. */
export async function wholeRecord(record: ExperimentRecord, source: IOutputSource): Promise<ExperimentRecord | string> {
  if (!isLight(record)) {
    return record;
  }
  const whole = await (source.fetchExperiment?.(record.n) ?? Promise.resolve(null)).catch((error: Error) => error);
  if (whole && !(whole instanceof Error)) {
    return whole;
  }
  return whole instanceof Error ? whole.message : source.trans.__('it is not in the journal');
}

/** Renders a whole record's output into `renderer`, with the log tail of a crash. */
export async function renderOutput(
  renderer: OutputRenderer,
  record: ExperimentRecord,
  source: IOutputSource,
): Promise<void> {
  const log = record.status === 'crash' ? await source.fetchLog(record.n).catch(() => null) : null;
  const data = experimentData(record, { metric: source.metric(), direction: source.direction(), log });
  // No HTML or text fallback: the renderer shows the experiment's own data.
  await renderer.renderModel(new MimeModel({ data: { [EXPERIMENT_MIME]: data as never } }));
}

/** Settles after the next paint (a frame's callback runs before it, a task queued there after). */
export function afterPaint(): Promise<void> {
  return new Promise(resolve =>
    typeof requestAnimationFrame === 'function'
      ? requestAnimationFrame(() => setTimeout(resolve, 0))
      : setTimeout(resolve, 0),
  );
}
