/**
 * What a panel's toolbar does, as JupyterLab commands: Start, Stop, Resume, Export and showing
 * another run. Each acts on the panel its `path` argument names (the toolbar passes its own), else
 * on the panel in focus, so the palette, menus and shortcuts can run them too; each is enabled
 * while it applies to that panel's run, and says so when that changes (notifyCommandChanged).
 */
import type { IWidgetTracker } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { CommandRegistry } from '@lumino/commands';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { DisposableDelegate, DisposableSet, type IDisposable } from '@lumino/disposable';
import type { AutoresearchPanel } from './panel/panel';

export const RunCommandIDs = {
  start: 'autoresearch:start',
  stop: 'autoresearch:stop',
  resume: 'autoresearch:resume',
  export: 'autoresearch:export',
  selectRun: 'autoresearch:select-run',
} as const;

/** The panel a command acts on: the one of `args.path`, else the one in focus. */
export function panelOf(
  tracker: IWidgetTracker<AutoresearchPanel>,
  args: ReadonlyPartialJSONObject,
): AutoresearchPanel | null {
  if (typeof args.path === 'string') {
    return tracker.find(p => p.path === args.path) ?? null;
  }
  return tracker.currentWidget;
}

export function addRunCommands(
  commands: CommandRegistry,
  tracker: IWidgetTracker<AutoresearchPanel>,
  trans: TranslationBundle,
): IDisposable {
  const panel = (args: ReadonlyPartialJSONObject) => panelOf(tracker, args);
  const hasPanel = (args: ReadonlyPartialJSONObject) => panel(args) !== null;
  const set = new DisposableSet();
  set.add(
    commands.addCommand(RunCommandIDs.start, {
      label: trans.__('Start'),
      caption: trans.__('Start a new run with these settings'),
      isVisible: hasPanel,
      isEnabled: args => !!panel(args)?.controller.canStart,
      execute: async args => {
        const p = panel(args);
        await p?.controller.start(p.runOptions());
      },
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.stop, {
      label: trans.__('Stop'),
      caption: trans.__('Stop the run after interrupting the experiment in flight'),
      isVisible: hasPanel,
      isEnabled: args => !!panel(args)?.controller.canStop,
      execute: async args => panel(args)?.controller.stop(),
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.resume, {
      label: trans.__('Resume'),
      caption: trans.__('Continue the run shown where it left off'),
      isVisible: hasPanel,
      isEnabled: args => !!panel(args)?.controller.canResume,
      execute: async args => {
        const p = panel(args);
        await p?.controller.resume(p.runOptions());
      },
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.export, {
      label: trans.__('Export as notebook'),
      caption: trans.__('Write the run as <tag>.ipynb in the workspace'),
      isVisible: hasPanel,
      isEnabled: args => !!panel(args)?.controller.canExport,
      execute: async args => panel(args)?.controller.exportNotebook(),
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.selectRun, {
      label: args => (typeof args.tag === 'string' ? trans.__('Show run %1', args.tag) : trans.__('Show a run')),
      caption: trans.__('Show another run of the workspace (`tag`)'),
      isVisible: hasPanel,
      isEnabled: args => hasPanel(args) && typeof args.tag === 'string',
      execute: args => {
        if (typeof args.tag === 'string') {
          panel(args)?.controller.selectRun(args.tag);
        }
      },
    }),
  );

  // Menus, the palette and the toolbars ask again when the panel in focus or what applies changes.
  const notify = () => Object.values(RunCommandIDs).forEach(id => commands.notifyCommandChanged(id));
  tracker.currentChanged.connect(notify);
  tracker.widgetAdded.connect((_, p) => {
    p.controller.changed.connect((__, what) => (what === 'actions' ? notify() : undefined));
    notify();
  });
  set.add(new DisposableDelegate(() => tracker.currentChanged.disconnect(notify)));
  return set;
}
