/**
 * What moves around a panel, as JupyterLab commands: open its `program.md` for editing, jump to
 * the best experiment, expand or collapse every experiment. Like ./run-commands.ts's, each acts
 * on the panel its `path` argument names, else on the one right-clicked or in focus, so the
 * palette, the panel's context menu and the shortcuts (schema/plugin.json) run them.
 */
import type { IWidgetTracker } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { CommandRegistry } from '@lumino/commands';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { DisposableDelegate, DisposableSet, type IDisposable } from '@lumino/disposable';
import type { AutoresearchPanel } from '../panel/panel';
import { ViewCommandIDs } from './command-ids';
import { type ContextPanel, panelOf } from './run-commands';

export function addViewCommands(
  commands: CommandRegistry,
  tracker: IWidgetTracker<AutoresearchPanel>,
  trans: TranslationBundle,
  contextPanel?: ContextPanel,
): IDisposable {
  const panel = (args: ReadonlyPartialJSONObject) => panelOf(tracker, args, contextPanel);
  const hasPanel = (args: ReadonlyPartialJSONObject) => panel(args) !== null;
  const hasExperiments = (args: ReadonlyPartialJSONObject) => (panel(args)?.list.count ?? 0) > 0;
  const set = new DisposableSet();
  set.add(
    commands.addCommand(ViewCommandIDs.editProgram, {
      label: trans.__('Edit program.md'),
      caption: trans.__('Edit the instructions to the agent in the panel; Shift+Enter saves them'),
      isVisible: hasPanel,
      isEnabled: hasPanel,
      execute: args => panel(args)?.editProgram(),
    }),
  );
  set.add(
    commands.addCommand(ViewCommandIDs.jumpToBest, {
      label: trans.__('Jump to best experiment'),
      caption: args =>
        panel(args)?.canJumpToBest === false
          ? trans.__(
              'Scroll to the best experiment so far, expanded, with the focus on its header. Unavailable now: no best experiment is listed yet.',
            )
          : trans.__('Scroll to the best experiment so far, expanded, with the focus on its header'),
      isVisible: hasPanel,
      isEnabled: args => !!panel(args)?.canJumpToBest,
      execute: args => void panel(args)?.jumpToBest(),
    }),
  );
  set.add(
    commands.addCommand(ViewCommandIDs.expandAll, {
      label: trans.__('Expand all experiments'),
      caption: args =>
        panel(args) && !hasExperiments(args)
          ? trans.__('Show every finished experiment in full. Unavailable now: no experiment has finished yet.')
          : trans.__('Show every finished experiment in full'),
      isVisible: hasPanel,
      isEnabled: hasExperiments,
      execute: args => panel(args)?.list.setAllExpanded(true),
    }),
  );
  set.add(
    commands.addCommand(ViewCommandIDs.collapseAll, {
      label: trans.__('Collapse all experiments'),
      caption: args =>
        panel(args) && !hasExperiments(args)
          ? trans.__(
              'Show every finished experiment as its header line. Unavailable now: no experiment has finished yet.',
            )
          : trans.__('Show every finished experiment as its header line'),
      isVisible: hasPanel,
      isEnabled: hasExperiments,
      execute: args => panel(args)?.list.setAllExpanded(false),
    }),
  );

  // The palette and menus ask again when what the commands apply to changes: the panel in focus,
  // whether it lists experiments, which one is best. The model changes often; the key seldom.
  const notify = () => Object.values(ViewCommandIDs).forEach(id => commands.notifyCommandChanged(id));
  tracker.currentChanged.connect(notify);
  tracker.widgetAdded.connect((_, p) => {
    let key = '';
    const check = () => {
      const next = `${p.list.count > 0}:${p.canJumpToBest}`;
      if (next !== key) {
        key = next;
        notify();
      }
    };
    p.model.changed.connect(check);
    p.controller.experimentsAdded.connect(check);
    p.controller.cleared.connect(check);
  });
  set.add(new DisposableDelegate(() => tracker.currentChanged.disconnect(notify)));
  return set;
}
