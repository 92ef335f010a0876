/**
 * What the extension offers other extensions: the open Autoresearch panels, each with its run.
 *
 * ```ts
 * requires: [IAutoresearchTracker],
 * activate: (app, panels: IAutoresearchTracker) => {
 *   panels.widgetAdded.connect((_, panel) =>
 *     panel.model.newBest.connect((_, best) => console.log(panel.path, best.n, best.metric)),
 *   );
 * };
 * ```
 *
 * A panel's `model` (RunModel) is the run it shows, changed only through its own methods and
 * read through its signals; its `controller` runs the actions (or execute the `autoresearch:*`
 * commands with `{ path }`).
 */
import type { IWidgetTracker } from '@jupyterlab/apputils';
import { Token } from '@lumino/coreutils';
import type { AutoresearchPanel } from './panel/panel';

export type { AutoresearchPanel } from './panel/panel';
export type { IBest, INewBest, RunModel, RunModelChange, RunState } from './panel/run/run-model';

/** A widget tracker of the open Autoresearch panels. */
export type IAutoresearchTracker = IWidgetTracker<AutoresearchPanel>;

export const IAutoresearchTracker = new Token<IAutoresearchTracker>(
  'jupyterlab-autoresearch:IAutoresearchTracker',
  'The open Autoresearch panels, each with the run it shows (panel.model, a RunModel).',
);
