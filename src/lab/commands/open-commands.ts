/**
 * The commands that open panels and create workspaces, and where they show: the palette, the
 * launcher, the file browser's context menu; and *Autoresearch with this kernel*, in a notebook's
 * toolbar and context menu (schema/plugin.json puts it there). Panels are tracked so a reload
 * restores them.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, showDialog, showErrorMessage, type WidgetTracker } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import type { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import type { TranslationBundle } from '@jupyterlab/translation';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import * as api from '../api/server';
import { type INewWorkspaceFields, NewWorkspaceBody, parseNewWorkspace } from './new-workspace-dialog';
import { type INotebookLike, type INotebookSource, notebookKernel } from '../notebooks/notebook-kernels';
import type { AutoresearchPanel } from '../panel/panel';
import { CommandIDs } from './command-ids';

/** A rising step line with a point: the progress chart in small. */
export const autoresearchIcon = new LabIcon({
  name: 'jupyterlab-autoresearch:icon',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M3 20h18v1.5H3z"/><path d="M4 17.5V16h4v-4h5V8h4V4h3v1.5h-1.5v4h-4v4h-5v4H5.5v0z"/>' +
    '<circle cx="19" cy="4.8" r="2"/></g></svg>',
});

export interface ICommandContext {
  app: JupyterFrontEnd;
  trans: TranslationBundle;
  tracker: WidgetTracker<AutoresearchPanel>;
  browser: IDefaultFileBrowser | null;
  /** JupyterLab's notebook tracker, when JupyterLab has notebooks. */
  notebooks: INotebookSource | null;
  createPanel: (path: string) => AutoresearchPanel;
}

/** The workspace folder a path names: a folder itself, or the folder of its program.md. */
export function workspaceOf(path: string): string {
  return PathExt.basename(path) === 'program.md' ? PathExt.dirname(path) : path;
}

async function hasProgram(app: JupyterFrontEnd, folder: string): Promise<boolean> {
  try {
    await app.serviceManager.contents.get(PathExt.join(folder, 'program.md'), { content: false });
    return true;
  } catch {
    return false;
  }
}

/** Asks which workspace to open (those the server finds), or offers to create one. */
async function pickWorkspace(ctx: ICommandContext): Promise<string | 'new' | null> {
  const { trans } = ctx;
  const { workspaces } = await api.listWorkspaces(ctx.app.serviceManager.serverSettings);
  if (!workspaces.length) {
    return 'new';
  }
  const body = new Widget();
  const select = document.createElement('select');
  select.className = 'jp-mod-styled jp-AutoresearchPicker';
  for (const ws of workspaces) {
    const running = ws.engine ? ` — ${trans.__('running')}` : '';
    select.appendChild(new Option(`${ws.path || '/'}${running}`, ws.path));
  }
  body.node.appendChild(select);
  const result = await showDialog({
    title: trans.__('Open an autoresearch workspace'),
    body,
    buttons: [
      Dialog.cancelButton({ label: trans.__('Cancel') }),
      Dialog.createButton({ label: trans.__('New workspace…'), displayType: 'default' }),
      Dialog.okButton({ label: trans.__('Open') }),
    ],
  });
  if (result.button.label === trans.__('New workspace…')) {
    return 'new';
  }
  return result.button.accept ? select.value : null;
}

/**
 * Asks for the new workspace until `create` makes it (its error is shown in the dialog, the
 * fields kept, and asked again); what `create` returned, or null when cancelled.
 */
async function askNewWorkspace<T>(
  trans: TranslationBundle,
  initial: INewWorkspaceFields,
  create: (path: string, source: api.IWorkspaceSource) => Promise<T>,
): Promise<T | null> {
  let fields = initial;
  let error: string | null = null;
  for (;;) {
    const body = new NewWorkspaceBody(trans, fields, error);
    const result = await showDialog({
      title: trans.__('New autoresearch workspace'),
      body,
      focusNodeSelector: 'input.jp-AutoresearchNewWorkspace-folder',
      buttons: [Dialog.cancelButton({ label: trans.__('Cancel') }), Dialog.okButton({ label: trans.__('Create') })],
    });
    if (!result.button.accept || result.value === null) {
      return null;
    }
    fields = result.value;
    const request = parseNewWorkspace(fields, trans);
    if ('error' in request) {
      error = request.error;
      continue;
    }
    try {
      return await create(request.path, request.source);
    } catch (e) {
      error = trans.__('Could not create the workspace: %1', (e as Error).message);
    }
  }
}

/** The notebook open at `path`, or the one in front (or last in front) without a path. */
function notebookOf(source: INotebookSource | null, path: unknown): INotebookLike | null {
  if (typeof path !== 'string') {
    return source?.currentWidget ?? null;
  }
  let found: INotebookLike | null = null;
  source?.forEach(nb => {
    if (nb.context.path === path) {
      found = nb;
    }
  });
  return found;
}

export function addCommands(ctx: ICommandContext): void {
  const { app, trans, tracker, browser } = ctx;

  const open = async (path: string): Promise<AutoresearchPanel> => {
    const existing = tracker.find(p => p.path === path);
    if (existing) {
      app.shell.activateById(existing.id);
      return existing;
    }
    const panel = ctx.createPanel(path);
    await tracker.add(panel);
    app.shell.add(panel, 'main');
    app.shell.activateById(panel.id);
    return panel;
  };

  const selectedPath = (): string | null => {
    const item = browser ? browser.selectedItems().next() : null;
    return item && !item.done ? item.value.path : null;
  };

  app.commands.addCommand(CommandIDs.open, {
    label: args => (args.isContextMenu ? trans.__('Open in Autoresearch') : trans.__('Autoresearch')),
    caption: trans.__('Open the Autoresearch panel of a workspace'),
    icon: args => (args.isPalette ? undefined : autoresearchIcon),
    isVisible: args => {
      if (!args.isContextMenu) {
        return true;
      }
      const item = browser ? browser.selectedItems().next() : null;
      return !!item && !item.done && (item.value.type === 'directory' || item.value.name === 'program.md');
    },
    execute: async args => {
      try {
        let path = typeof args.path === 'string' ? args.path : args.isContextMenu ? selectedPath() : null;
        if (path === null) {
          const here = browser?.model.path ?? '';
          path = (await hasProgram(app, here)) ? here : await pickWorkspace(ctx);
        }
        if (path === null) {
          return null;
        }
        if (path === 'new') {
          return app.commands.execute(CommandIDs.newWorkspace);
        }
        return await open(workspaceOf(path));
      } catch (error) {
        await showErrorMessage(trans.__('Autoresearch'), error as Error);
        return null;
      }
    },
  });

  const create = async (path: string, source: api.IWorkspaceSource): Promise<AutoresearchPanel> => {
    const made = await api.createWorkspace(app.serviceManager.serverSettings, path, source);
    await browser?.model.refresh();
    return open(made.path);
  };

  app.commands.addCommand(CommandIDs.newWorkspace, {
    label: trans.__('New Autoresearch Workspace'),
    caption: trans.__('Create a workspace from the tiny-cpu template or from a repository, and open it'),
    icon: args => (args.isPalette ? undefined : autoresearchIcon),
    // Without a path it asks; with one (scripts, tests) it creates at once: `from` (and `ref`) for a
    // repository, else the template with an optional `budget_s`.
    execute: async args => {
      if (typeof args.path !== 'string') {
        const stamp = new Date().toISOString().slice(0, 10).replace(/-/g, '');
        const folder = PathExt.join(browser?.model.path ?? '', `autoresearch-${stamp}`);
        return askNewWorkspace(trans, { folder, source: 'template', from: '', ref: '' }, create);
      }
      const source: api.IWorkspaceSource =
        typeof args.from === 'string'
          ? { from: args.from, ...(typeof args.ref === 'string' && { ref: args.ref }) }
          : { template: 'tiny-cpu', ...(typeof args.budget_s === 'number' && { budget_s: args.budget_s }) };
      try {
        return await create(args.path, source);
      } catch (error) {
        await showErrorMessage(trans.__('Could not create the workspace'), error as Error);
        return null;
      }
    },
  });

  app.commands.addCommand(CommandIDs.openWithKernel, {
    // In a notebook's toolbar the icon alone, as the notebook's own buttons.
    label: args => (args.toolbar ? '' : trans.__('Autoresearch with this kernel')),
    caption: trans.__(
      'Open the Autoresearch panel of this notebook’s workspace with its kernel chosen to train in (its environment, or this very kernel)',
    ),
    icon: autoresearchIcon,
    execute: async args => {
      try {
        const notebook = notebookOf(ctx.notebooks, args.path);
        if (!notebook) {
          throw new Error(
            typeof args.path === 'string'
              ? trans.__('%1 is not open: open it and start its kernel, then try again.', args.path)
              : trans.__('No notebook is open: open one with a running kernel, then try again.'),
          );
        }
        const kernel = notebookKernel(notebook);
        if (!kernel) {
          throw new Error(
            trans.__(
              '%1 has no running kernel: choose one (Kernel → Change Kernel…), then try again.',
              notebook.context.path,
            ),
          );
        }
        // The notebook's folder when it is a workspace; else the workspaces the server finds.
        const folder = PathExt.dirname(kernel.path);
        const path = (await hasProgram(app, folder)) ? folder : await pickWorkspace(ctx);
        if (path === null) {
          return null;
        }
        const panel =
          path === 'new'
            ? ((await app.commands.execute(CommandIDs.newWorkspace)) as AutoresearchPanel | null)
            : await open(workspaceOf(path));
        panel?.useNotebookKernel(kernel.path);
        return panel;
      } catch (error) {
        await showErrorMessage(trans.__('Autoresearch with this kernel'), error as Error);
        return null;
      }
    },
  });
}
