/** The run's state in words, for the panel's strip and the status bar; no DOM, so testable anywhere. */
import type { TranslationBundle } from '@jupyterlab/translation';
import type { RunModel } from './run-model';

/** The run's state in a few words: "#12 training", "proposing #13", "stopped (stop)". */
export function describeState(m: RunModel, trans: TranslationBundle): string {
  if (m.tag === null) {
    return trans.__('no runs yet');
  }
  switch (m.state) {
    case 'running': {
      if (m.stopping) {
        return trans.__('stopping');
      }
      const running = [...m.inFlight.keys()].sort((a, b) => a - b);
      if (running.length > 1) {
        return trans.__('%1 training', running.map(n => `#${n}`).join(', '));
      }
      return running.length ? trans.__('#%1 training', running[0]) : trans.__('proposing #%1', m.experiments.length);
    }
    case 'starting':
      return trans.__('starting');
    case 'died':
      return trans.__('died (resumable)');
    case 'stopped':
      return m.runEnd ? trans.__('stopped (%1)', m.runEnd.reason) : trans.__('stopped');
    default:
      return trans.__('connecting');
  }
}
