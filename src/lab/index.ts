/**
 * The JupyterLab front end of autoresearch: the panel (commands, launcher, file-browser menu,
 * status bar, settings, restoring panels after a reload), and a plugin that lends JupyterLab's
 * CodeMirror highlighter to the experiment renderer. The renderer itself is the labextension's
 * `mimeExtension` (./renderer), so notebooks render experiments without the panel.
 */
import { ILayoutRestorer, type JupyterFrontEnd, type JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification, WidgetTracker } from '@jupyterlab/apputils';
import { IEditorServices } from '@jupyterlab/codeeditor';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStateDB } from '@jupyterlab/statedb';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { runSettingDefaults } from '../core/config/run-option-schemas';
import { fetchStatus } from './api/server';
import { addCommands } from './commands/open-commands';
import { CommandIDs, RunCommandIDs, ViewCommandIDs } from './commands/command-ids';
import { followExportedNotebooks } from './notebooks/exported-notebooks';
import { NotebookKernels } from './notebooks/notebook-kernels';
import { warmUpPanelWhenIdle } from './panel/chart-view';
import { withLazyMath } from './panel/lazy-math';
import { AutoresearchPanel } from './panel/panel';
import type { IRunDefaults } from './panel/run-defaults';
import { setLineHighlighter } from './renderer/highlight';
import { addRunCommands } from './commands/run-commands';
import { RunStatusItem } from './status-item';
import { IAutoresearchTracker } from './tokens';
import { addViewCommands } from './commands/view-commands';

export { IAutoresearchTracker } from './tokens';
export { RunCommandIDs, ViewCommandIDs } from './commands/command-ids';

const PLUGIN_ID = 'jupyterlab-autoresearch:plugin';

// The same defaults as schema/plugin.json's, which test/run-options.test.ts keeps equal to the declaration.
const DEFAULTS: IRunDefaults = { ...runSettingDefaults(), openOnStart: true };

const plugin: JupyterFrontEndPlugin<IAutoresearchTracker> = {
  id: PLUGIN_ID,
  description: "Karpathy's autoresearch method inside JupyterLab.",
  autoStart: true,
  provides: IAutoresearchTracker,
  requires: [IRenderMimeRegistry, IEditorServices],
  optional: [
    ISettingRegistry,
    ITranslator,
    ICommandPalette,
    ILauncher,
    ILayoutRestorer,
    IDefaultFileBrowser,
    IStatusBar,
    INotebookTracker,
    IStateDB,
    IEditorLanguageRegistry,
  ],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    editorServices: IEditorServices,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    restorer: ILayoutRestorer | null,
    browser: IDefaultFileBrowser | null,
    statusBar: IStatusBar | null,
    notebookTracker: INotebookTracker | null,
    state: IStateDB | null,
    languages: IEditorLanguageRegistry | null,
  ): IAutoresearchTracker => {
    const trans = (translator ?? nullTranslator).load('jupyterlab_autoresearch');
    let defaults: IRunDefaults = { ...DEFAULTS };
    const tracker = new WidgetTracker<AutoresearchPanel>({ namespace: 'autoresearch' });
    const settingsLoaded = settingRegistry
      ? settingRegistry
          .load(PLUGIN_ID)
          .then(settings => {
            const read = () => {
              defaults = { ...DEFAULTS, ...(settings.composite as Partial<IRunDefaults>) };
              // The kernel setting and the workers (which rule out *this very kernel*) show in the toolbars.
              tracker.forEach(panel => panel.settingsChanged());
            };
            read();
            settings.changed.connect(read);
          })
          .catch(reason => console.error('autoresearch: could not load settings.', reason))
      : Promise.resolve();

    // The open notebooks' kernels, which every panel's kernel picker offers.
    const notebooks = new NotebookKernels(notebookTracker);
    // Exported runs open to be read: no kernel, not modified, no hidden-input bars (./exported-notebooks).
    if (notebookTracker) {
      followExportedNotebooks(notebookTracker);
    }
    // A browser that opens the panel gets Vega and program.md's cell ready while the lab is idle after start-up (./panel/warm-up).
    void app.restored.then(() => warmUpPanelWhenIdle(rendermime, languages));
    const createPanel = (path: string) =>
      new AutoresearchPanel({
        path,
        services: app.serviceManager,
        // MathJax starts only for text that may hold maths (./panel/lazy-math); cloned when the
        // panel opens, so renderers other extensions register after start-up are in it.
        rendermime: withLazyMath(rendermime),
        editorServices,
        trans,
        commands: app.commands,
        defaults: () => defaults,
        openFile: file => app.commands.execute('docmanager:open', { path: file }),
        notebooks,
        state,
      });
    addCommands({ app, trans, tracker, browser, notebooks: notebookTracker, createPanel });
    // The panel's context menu acts on the panel right-clicked, which need not be the one in focus.
    const contextPanel = () => {
      const node = app.contextMenuHitTest(n => n.classList.contains('jp-AutoresearchPanel'));
      return node ? (tracker.find(p => p.node === node) ?? null) : null;
    };
    addRunCommands(app.commands, tracker, trans, contextPanel);
    addViewCommands(app.commands, tracker, trans, contextPanel);

    palette?.addItem({ command: CommandIDs.open, category: trans.__('Autoresearch'), args: { isPalette: true } });
    palette?.addItem({
      command: CommandIDs.newWorkspace,
      category: trans.__('Autoresearch'),
      args: { isPalette: true },
    });
    palette?.addItem({ command: CommandIDs.openWithKernel, category: trans.__('Autoresearch') });
    // The panel in focus's commands; the palette lists them while a panel is open (isVisible).
    const panelCommands = [
      RunCommandIDs.start,
      RunCommandIDs.stop,
      RunCommandIDs.resume,
      RunCommandIDs.export,
      RunCommandIDs.reviewEach,
      RunCommandIDs.transfer,
      ...Object.values(ViewCommandIDs),
    ];
    for (const command of panelCommands) {
      palette?.addItem({ command, category: trans.__('Autoresearch') });
    }
    launcher?.add({ command: CommandIDs.open, category: trans.__('Other'), rank: 1 });
    launcher?.add({ command: CommandIDs.newWorkspace, category: trans.__('Other'), rank: 2 });
    app.contextMenu.addItem({
      command: CommandIDs.open,
      selector: '.jp-DirListing-item[data-isdir]',
      rank: 3,
      args: { isContextMenu: true },
    });
    restorer?.restore(tracker, {
      command: CommandIDs.open,
      args: panel => ({ path: panel.path }),
      name: panel => panel.path,
    });
    if (statusBar) {
      const item = new RunStatusItem(app, tracker, trans);
      statusBar.registerStatusItem('jupyterlab-autoresearch:status', {
        item,
        align: 'left',
        rank: 4,
        isActive: () => item.active,
        activeStateChanged: item.activeChanged,
      });
    }

    // `make lab` starts JupyterLab in a fresh workspace: show its panel rather than an empty lab.
    void Promise.all([app.restored, settingsLoaded]).then(async () => {
      if (!defaults.openOnStart || tracker.size > 0) {
        return;
      }
      try {
        await app.serviceManager.contents.get('program.md', { content: false });
      } catch {
        return; // the root is not a workspace
      }
      await app.commands.execute(CommandIDs.open, { path: '' });
    });

    fetchStatus(app.serviceManager.serverSettings)
      .then(status => {
        // No run can start without either: say so where the user looks, once, with the fix.
        for (const tool of [status.node, status.git]) {
          if (tool && !tool.ok && tool.message) {
            console.warn(`autoresearch: ${tool.message}`);
            Notification.warning(trans.__('Autoresearch: %1', tool.message), { autoClose: false });
          }
        }
      })
      .catch(reason =>
        console.error(`autoresearch: the server extension jupyterlab_autoresearch appears to be missing.\n${reason}`),
      );
    return tracker;
  },
};

const diffHighlighter: JupyterFrontEndPlugin<void> = {
  id: 'jupyterlab-autoresearch:diff-highlighter',
  description: 'Highlights the Python in experiment diffs with JupyterLab’s CodeMirror languages.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (_app: JupyterFrontEnd, languages: IEditorLanguageRegistry): void => {
    const python = languages.findBest('python');
    if (python) {
      setLineHighlighter((code, el) => languages.highlight(code, python, el));
    }
  },
};

export default [plugin, diffHighlighter];
