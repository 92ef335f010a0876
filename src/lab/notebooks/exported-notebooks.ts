/**
 * An exported run (`<tag>.ipynb`, whose metadata has an `autoresearch` entry: src/core/views/notebook.ts)
 * opens as a document to read, not code to run:
 * - no kernel starts for it. JupyterLab would start one for its language, and writing that
 *   kernel's spec into the metadata would mark the file modified the moment it opened. The
 *   kernel picker still offers one to a reader who wants it;
 * - its output cells (tagged `autoresearch`, with an empty, hidden source) show only their
 *   output: no "•••" bar of a hidden input between two experiments.
 * - it stays unmodified while read. JupyterLab's Vega renderer stores a PNG of each chart it
 *   draws in that output when the output has none (the export carries an SVG, not a PNG: the
 *   engine has no rasterizer), which would mark the notebook modified (●) though the reader
 *   changed nothing; that one change does not count.
 * Without this extension the file still opens everywhere; these are what it adds.
 */
import type { INotebookModel, INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

/** The class of a notebook panel showing an exported run. */
export const EXPORT_PANEL_CLASS = 'jp-AutoresearchExport';
/** The class of an exported output cell, whose input is not shown. */
export const EXPORT_CELL_CLASS = 'jp-AutoresearchExport-output';
/** The tag the export gives its output cells. */
export const EXPORT_CELL_TAG = 'autoresearch';

/** Whether a notebook's `autoresearch` metadata says it is an exported run (it names the run's tag). */
export function isExportMetadata(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as { tag?: unknown }).tag === 'string';
}

/** Whether a cell's tags mark it as an export's output cell. */
export function isExportCell(cellType: string, tags: unknown): boolean {
  return cellType === 'code' && Array.isArray(tags) && tags.includes(EXPORT_CELL_TAG);
}

function markCells(panel: NotebookPanel): void {
  for (const cell of panel.content.widgets) {
    cell.toggleClass(EXPORT_CELL_CLASS, isExportCell(cell.model.type, cell.model.getMetadata('tags')));
  }
}

const PNG_MIME = 'image/png';

/** The notebook as JSON without any PNG in an output: what the reader's changes are judged on. */
function withoutPngs(model: INotebookModel): string {
  const json = model.toJSON() as { cells: { outputs?: { data?: Record<string, unknown> }[] }[] };
  for (const cell of json.cells) {
    for (const output of cell.outputs ?? []) {
      delete output.data?.[PNG_MIME];
    }
  }
  return JSON.stringify(json);
}

/** Marks the model clean again whenever it turns dirty only by a chart's PNG being cached. */
function ignoreCachedChartPngs(model: INotebookModel): void {
  const opened = withoutPngs(model);
  model.stateChanged.connect((_, change) => {
    // Compared once per turn to dirty, not on every change, so reading costs nothing.
    if (change.name === 'dirty' && change.newValue === true && withoutPngs(model) === opened) {
      model.dirty = false;
    }
  });
}

/** Applies the above to every notebook the tracker sees. */
export function followExportedNotebooks(tracker: INotebookTracker): void {
  tracker.widgetAdded.connect((_, panel) => {
    // `ready` resolves when the file is loaded, before the session looks for a kernel (it first
    // asks the server which sessions run), so the preference set here is the one it reads.
    void panel.context.ready.then(() => {
      if (panel.isDisposed || !isExportMetadata(panel.model?.getMetadata('autoresearch'))) {
        return;
      }
      const session = panel.sessionContext;
      if (!session.session) {
        session.kernelPreference = { ...session.kernelPreference, shouldStart: false, autoStartDefault: false };
      }
      if (panel.model) {
        ignoreCachedChartPngs(panel.model);
      }
      panel.addClass(EXPORT_PANEL_CLASS);
      markCells(panel);
      panel.model?.cells.changed.connect(() => markCells(panel));
    });
  });
}
