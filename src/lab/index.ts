/**
 * The JupyterLab front end of autoresearch. For now it checks that the server extension
 * answers and that the server host can run the engine; the panel comes later. The experiment
 * MIME renderer is the labextension's `mimeExtension` (./renderer); a plugin here lends it
 * JupyterLab's CodeMirror highlighter for the Python in diffs.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { fetchStatus } from './api';
import { setLineHighlighter } from './renderer/highlight';

const PLUGIN_ID = 'jupyterlab-autoresearch:plugin';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: "Karpathy's autoresearch method inside JupyterLab.",
  autoStart: true,
  optional: [ISettingRegistry],
  activate: (app: JupyterFrontEnd, settingRegistry: ISettingRegistry | null): void => {
    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => console.debug('autoresearch settings:', settings.composite))
        .catch(reason => console.error('autoresearch: could not load settings.', reason));
    }
    fetchStatus(app.serviceManager.serverSettings)
      .then(status => {
        console.log('autoresearch server extension:', status);
        if (!status.node.ok) {
          console.warn(`autoresearch: ${status.node.message}`);
        }
      })
      .catch(reason =>
        console.error(`autoresearch: the server extension jupyterlab_autoresearch appears to be missing.\n${reason}`)
      );
  }
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
  }
};

export default [plugin, diffHighlighter];
