/**
 * The commands that open panels and create workspaces, and where they show: the palette, the
 * launcher, the file browser's context menu. Panels are tracked so a reload restores them.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, InputDialog, showDialog, showErrorMessage, type WidgetTracker } from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import type { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import type { TranslationBundle } from '@jupyterlab/translation';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import * as api from './api';
import type { AutoresearchPanel } from './panel/panel';

export const CommandIDs = {
  open: 'autoresearch:open',
  newWorkspace: 'autoresearch:new-workspace',
} as const;

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

  app.commands.addCommand(CommandIDs.newWorkspace, {
    label: args => (args.isPalette ? trans.__('New Autoresearch Workspace') : trans.__('New Autoresearch Workspace')),
    caption: trans.__('Create a workspace from the tiny-cpu template and open it'),
    icon: args => (args.isPalette ? undefined : autoresearchIcon),
    execute: async args => {
      let path = typeof args.path === 'string' ? args.path : null;
      if (path === null) {
        const stamp = new Date().toISOString().slice(0, 10).replace(/-/g, '');
        const result = await InputDialog.getText({
          title: trans.__('New autoresearch workspace'),
          label: trans.__('Folder (created from the tiny-cpu template)'),
          text: PathExt.join(browser?.model.path ?? '', `autoresearch-${stamp}`),
        });
        if (!result.button.accept || !result.value) {
          return null;
        }
        path = result.value;
      }
      try {
        const budget = typeof args.budget_s === 'number' ? args.budget_s : undefined;
        const made = await api.createWorkspace(app.serviceManager.serverSettings, path, budget);
        await browser?.model.refresh();
        return await open(made.path);
      } catch (error) {
        await showErrorMessage(trans.__('Could not create the workspace'), error as Error);
        return null;
      }
    },
  });
}
