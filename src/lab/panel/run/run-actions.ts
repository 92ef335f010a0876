/**
 * When the panel's actions apply: Start, Stop, Resume and Export, each with the reason it is
 * unavailable in words (a disabled button's tooltip and the commands' captions say it).
 */
import type { TranslationBundle } from '@jupyterlab/translation';
import type { RunModel } from './run-model';

export type RunAction = 'start' | 'stop' | 'resume' | 'export';

/** Why the action is unavailable now, for the run the model shows; null when it is available. */
export function whyNotAction(action: RunAction, m: RunModel, busy: boolean, trans: TranslationBundle): string | null {
  if (busy) {
    return trans.__('waiting for the server to answer the last request');
  }
  switch (action) {
    case 'start':
    case 'resume':
      if (m.study) {
        return trans.__('a transfer study is running: stop it first');
      }
      if (m.state === 'running' || m.state === 'starting') {
        return trans.__('a run is going on: stop it first');
      }
      return action === 'resume' && m.tag === null ? trans.__('there is no run to resume yet') : null;
    case 'stop':
      // Stop ends a transfer study too (POST runs/stop stops whatever engine works on the workspace).
      if (m.state !== 'running' && !m.study) {
        return trans.__('no run is going on');
      }
      return m.stopping ? trans.__('the run is already stopping') : null;
    case 'export':
      if (m.tag === null) {
        return trans.__('there is no run to export yet');
      }
      return m.experiments.length === 0 ? trans.__('no experiment of this run has finished yet') : null;
  }
}
