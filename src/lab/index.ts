/**
 * The JupyterLab front end of autoresearch. For now it checks that the server extension
 * answers and that the server host can run the engine; the panel comes later.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { fetchStatus } from './api';

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

export default plugin;
