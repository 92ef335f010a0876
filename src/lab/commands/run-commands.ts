/**
 * What a panel's toolbar does, as JupyterLab commands: Start, Stop, Resume, Export, showing
 * another run, the *Review each proposal* toggle, the decisions on a proposal awaiting review
 * (Approve, Edit, Reject, Approve all) and the Transfer Study. Each acts on the panel its `path`
 * argument names (the toolbar passes its own), else on the panel right-clicked or in focus, so
 * the palette, the panel's context menu and the shortcuts (schema/plugin.json) run them too; each
 * is enabled while it applies to that panel's run, and says so when that changes
 * (notifyCommandChanged).
 */
import type { IWidgetTracker } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { CommandRegistry } from '@lumino/commands';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { DisposableDelegate, DisposableSet, type IDisposable } from '@lumino/disposable';
import type { AutoresearchPanel } from '../panel/panel';
import { RunCommandIDs } from './command-ids';

/** The proposal a decision names: `args.n`, else the one the panel shows. */
function proposalOf(p: AutoresearchPanel | null, args: ReadonlyPartialJSONObject): number | null {
  return typeof args.n === 'number' ? args.n : (p?.review.model.proposal?.n ?? null);
}

/** The panel under the context menu JupyterLab opened last, if it was opened on one. */
export type ContextPanel = () => AutoresearchPanel | null;

/**
 * The panel a command acts on: the one of `args.path`; from the panel's context menu
 * (`isContextMenu`, schema/plugin.json), the one right-clicked, which need not be the one in
 * focus; else the one in focus (the palette, the shortcuts), JupyterLab's current widget.
 */
export function panelOf(
  tracker: IWidgetTracker<AutoresearchPanel>,
  args: ReadonlyPartialJSONObject,
  contextPanel: ContextPanel = () => null,
): AutoresearchPanel | null {
  if (typeof args.path === 'string') {
    return tracker.find(p => p.path === args.path) ?? null;
  }
  return (args.isContextMenu ? contextPanel() : null) ?? tracker.currentWidget;
}

/**
 * A command's caption with why it is unavailable, when it is: a disabled button's tooltip (and
 * the palette's and menus' caption) says why, not only what it would do.
 */
function unavailableWords(trans: TranslationBundle): (caption: string, why: string | null | undefined) => string {
  return (caption, why) => (why ? trans.__('%1. Unavailable now: %2.', caption, why) : caption);
}

export function addRunCommands(
  commands: CommandRegistry,
  tracker: IWidgetTracker<AutoresearchPanel>,
  trans: TranslationBundle,
  contextPanel?: ContextPanel,
): IDisposable {
  const panel = (args: ReadonlyPartialJSONObject) => panelOf(tracker, args, contextPanel);
  const hasPanel = (args: ReadonlyPartialJSONObject) => panel(args) !== null;
  const unavailable = unavailableWords(trans);
  const set = new DisposableSet();
  set.add(
    commands.addCommand(RunCommandIDs.start, {
      label: trans.__('Start'),
      caption: args =>
        unavailable(trans.__('Start a new run with these settings'), panel(args)?.controller.whyNot('start')),
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
      caption: args =>
        unavailable(
          trans.__('Stop the run after interrupting the experiment in flight'),
          panel(args)?.controller.whyNot('stop'),
        ),
      isVisible: hasPanel,
      isEnabled: args => !!panel(args)?.controller.canStop,
      execute: async args => panel(args)?.controller.stop(),
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.resume, {
      label: trans.__('Resume'),
      caption: args =>
        unavailable(trans.__('Continue the run shown where it left off'), panel(args)?.controller.whyNot('resume')),
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
      label: args => (args.toolbar ? trans.__('Export') : trans.__('Export as notebook')),
      caption: args =>
        unavailable(
          trans.__('Write the run as <tag>.ipynb in the workspace'),
          panel(args)?.controller.whyNot('export'),
        ),
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

  set.add(addReviewCommands(commands, panel, trans));

  // Menus, the palette and the toolbars ask again when the panel in focus or what applies changes.
  const notify = () => Object.values(RunCommandIDs).forEach(id => commands.notifyCommandChanged(id));
  tracker.currentChanged.connect(notify);
  tracker.widgetAdded.connect((_, p) => {
    p.controller.changed.connect((__, what) => (what === 'actions' ? notify() : undefined));
    p.review.changed.connect(notify);
    p.transfer.changed.connect(notify);
    notify();
  });
  set.add(new DisposableDelegate(() => tracker.currentChanged.disconnect(notify)));
  return set;
}

/** Step mode's commands and the transfer study's, on the panel `panel(args)` names. */
function addReviewCommands(
  commands: CommandRegistry,
  panel: (args: ReadonlyPartialJSONObject) => AutoresearchPanel | null,
  trans: TranslationBundle,
): IDisposable {
  const hasPanel = (args: ReadonlyPartialJSONObject) => panel(args) !== null;
  const unavailable = unavailableWords(trans);
  const canDecide = (args: ReadonlyPartialJSONObject) => !!panel(args)?.review.canDecide;
  const set = new DisposableSet();
  set.add(
    commands.addCommand(RunCommandIDs.reviewEach, {
      label: trans.__('Review each proposal'),
      caption: args =>
        unavailable(
          trans.__(
            'Step mode: each proposal waits for your Approve, Edit or Reject before it trains (a running engine switches from its next proposal)',
          ),
          panel(args)?.review.whyNotToggleStep(),
        ),
      isVisible: hasPanel,
      isToggleable: true,
      isToggled: args => !!panel(args)?.review.step,
      isEnabled: args => !!panel(args)?.review.canToggleStep,
      execute: async args => panel(args)?.review.toggleStep(),
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.approve, {
      label: args => (args.edited ? trans.__('Approve edited') : trans.__('Approve')),
      caption: args =>
        unavailable(
          args.edited
            ? trans.__('Train your version of the files (recorded as edited)')
            : trans.__('Commit the proposal and train it'),
          panel(args)?.review.whyNotDecide(),
        ),
      isVisible: hasPanel,
      isEnabled: canDecide,
      execute: async args => {
        const p = panel(args);
        const n = proposalOf(p, args);
        const files = args.files && typeof args.files === 'object' ? (args.files as Record<string, string>) : undefined;
        const note = typeof args.note === 'string' ? args.note : undefined;
        return n === null ? undefined : p?.review.approve(n, files, note);
      },
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.editProposal, {
      label: args => (panel(args)?.review.model.editing ? trans.__('Cancel') : trans.__('Edit')),
      caption: args =>
        panel(args)?.review.model.editing
          ? trans.__('Close the editors; the proposal stays as proposed')
          : unavailable(
              trans.__('Open the proposed files in editors, then approve your version'),
              panel(args)?.review.whyNotDecide(),
            ),
      isVisible: hasPanel,
      isToggleable: true,
      isToggled: args => !!panel(args)?.review.model.editing,
      isEnabled: args => canDecide(args) || !!panel(args)?.review.model.editing,
      execute: args => {
        const review = panel(args)?.review;
        review?.setEditing(!review.model.editing);
      },
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.reject, {
      label: trans.__('Reject'),
      caption: args =>
        unavailable(
          trans.__('Discard the proposal untrained; the note goes to the next proposal'),
          panel(args)?.review.whyNotDecide(),
        ),
      isVisible: hasPanel,
      isEnabled: canDecide,
      execute: async args => {
        const p = panel(args);
        const n = proposalOf(p, args);
        return n === null ? undefined : p?.review.reject(n, typeof args.note === 'string' ? args.note : undefined);
      },
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.approveAll, {
      label: trans.__('Approve all'),
      caption: args =>
        unavailable(
          trans.__('Approve this proposal and leave step mode: the next ones train unreviewed'),
          panel(args)?.review.whyNotDecide(),
        ),
      isVisible: hasPanel,
      isEnabled: canDecide,
      execute: async args => {
        const p = panel(args);
        const n = proposalOf(p, args);
        return n === null ? undefined : p?.review.approveAll(n);
      },
    }),
  );
  set.add(
    commands.addCommand(RunCommandIDs.transfer, {
      label: trans.__('Transfer Study…'),
      caption: args =>
        unavailable(
          trans.__('Replay the baseline and each kept commit at a larger scale: did the changes carry over?'),
          panel(args)?.transfer.whyNot(),
        ),
      isVisible: hasPanel,
      isEnabled: args => !!panel(args)?.transfer.canStart,
      execute: async args => panel(args)?.askTransfer(),
    }),
  );
  return set;
}
