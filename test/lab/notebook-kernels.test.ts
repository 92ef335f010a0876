// @vitest-environment jsdom
/**
 * The kernel picker with open notebooks: the notebooks' kernels listed by name in their own group,
 * which entry is shown when the user has not picked one, what each choice sends with a run (its
 * environment → kernel, this very kernel → kernel_id), the workers rule, and the list following
 * a notebook tracker as notebooks open, come to the front, change kernel and close. The tracker is
 * JupyterLab's in small (a Lumino FocusTracker, as WidgetTracker's own current widget is):
 * @jupyterlab/apputils needs a browser build of its web components.
 */
import type { KernelSpec } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import { CommandRegistry } from '@lumino/commands';
import { Signal } from '@lumino/signaling';
import { FocusTracker, Widget } from '@lumino/widgets';
import { describe, expect, it, vi } from 'vitest';
import { runSettingDefaults } from '../../src/core/config/run-option-schemas';
import { type INotebookKernel, NotebookKernels } from '../../src/lab/notebooks/notebook-kernels';
import {
  chooseKernel,
  kernelGroups,
  kernelRunOptions,
  notebookValue,
  SLURM,
  transferRunOptions,
} from '../../src/lab/panel/toolbar/kernel-picker';
import type { IRunDefaults } from '../../src/lab/panel/run-defaults';
import { RunModel } from '../../src/lab/panel/run/run-model';
import { RunToolbar } from '../../src/lab/panel/toolbar/run-toolbar';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');
const defaults: IRunDefaults = { ...runSettingDefaults(), openOnStart: true, proposer: 'offline' };

const spec = (name: string, display: string): KernelSpec.ISpecModel => ({
  name,
  display_name: display,
  language: 'python',
  argv: ['python', '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
  resources: {},
});
const SPECS: KernelSpec.ISpecModels = {
  default: 'python3',
  kernelspecs: { python3: spec('python3', 'Python 3 (ipykernel)'), gpu: spec('gpu', 'GPU Python') },
};
const GPU_NB: INotebookKernel = {
  path: 'ws/train-gpu.ipynb',
  name: 'train-gpu.ipynb',
  kernelId: 'k-gpu',
  specName: 'gpu',
};
const CPU_NB: INotebookKernel = { path: 'other/cpu.ipynb', name: 'cpu.ipynb', kernelId: 'k-cpu', specName: 'python3' };

function toolbar(workers = 1): RunToolbar {
  const bar = new RunToolbar({
    trans,
    model: new RunModel(),
    commands: new CommandRegistry(),
    args: () => ({ path: 'ws' }),
    workers: () => workers,
  });
  // The mode's item, as the panel's toolbar holds it: shown only for a notebook's kernel.
  const host = document.createElement('div');
  host.append(bar.kernels.mode);
  return bar;
}

const picker = (bar: RunToolbar) => bar.kernels.picker;
const modeShown = (bar: RunToolbar) => !bar.kernels.mode.parentElement!.classList.contains('jp-mod-hidden');

describe('the kernel picker with open notebooks', () => {
  it('lists them first, by notebook name and kernel, then the kernelspecs and no kernel', () => {
    const bar = toolbar();
    bar.setKernelSpecs(SPECS, '');
    bar.setNotebooks([GPU_NB, CPU_NB]);
    const groups = Array.from(picker(bar).querySelectorAll('optgroup'));
    expect(groups.map(g => g.label)).toEqual(['Open notebooks', 'New kernel']);
    expect(Array.from(groups[0].querySelectorAll('option')).map(o => o.textContent)).toEqual([
      'train-gpu.ipynb — GPU Python',
      'cpu.ipynb — Python 3 (ipykernel)',
    ]);
    expect(groups[0].querySelector('option')!.title).toContain('k-gpu');
    expect(Array.from(groups[1].querySelectorAll('option')).map(o => o.value)).toEqual(['python3', 'gpu']);
    expect(picker(bar).options[picker(bar).options.length - 1].value).toBe('');
  });

  it('shows the most recently active notebook’s kernel, for its environment, until the user picks', () => {
    const bar = toolbar();
    bar.setKernelSpecs(SPECS, '');
    expect(picker(bar).value).toBe('python3'); // no notebook: the default kernelspec, as before
    expect(modeShown(bar)).toBe(false);
    expect(bar.runOptions(defaults)).toMatchObject({ kernel: 'python3' });

    bar.setNotebooks([GPU_NB, CPU_NB]);
    expect(picker(bar).value).toBe(notebookValue(GPU_NB.path));
    expect(modeShown(bar)).toBe(true);
    expect(bar.kernels.mode.value).toBe('environment');
    const env = bar.runOptions(defaults);
    expect(env.kernel).toBe('gpu');
    expect(env).not.toHaveProperty('kernel_id');

    // Another notebook comes to the front: the picker follows it while the user has not picked.
    bar.setNotebooks([CPU_NB, GPU_NB]);
    expect(picker(bar).value).toBe(notebookValue(CPU_NB.path));

    picker(bar).value = 'gpu';
    picker(bar).dispatchEvent(new Event('change'));
    expect(modeShown(bar)).toBe(false);
    bar.setNotebooks([GPU_NB, CPU_NB]);
    expect(picker(bar).value).toBe('gpu');
    // No kernel is a pick too, and it sends none.
    picker(bar).value = '';
    picker(bar).dispatchEvent(new Event('change'));
    bar.setNotebooks([CPU_NB]);
    expect(picker(bar).value).toBe('');
    expect(bar.runOptions(defaults)).not.toHaveProperty('kernel');
  });

  it('sends this very kernel as kernel_id, and a transfer study gets its kernelspec', () => {
    const bar = toolbar();
    bar.setKernelSpecs(SPECS, '');
    bar.setNotebooks([GPU_NB]);
    bar.kernels.mode.value = 'attach';
    bar.kernels.mode.dispatchEvent(new Event('change'));
    const opts = bar.runOptions(defaults);
    expect(opts.kernel_id).toBe('k-gpu');
    expect(opts).not.toHaveProperty('kernel');
    expect(bar.kernels.kernelSpec()).toBe('gpu');
  });

  it('chooses the notebook a command names, over the user’s pick and the setting, once it is listed', () => {
    const bar = toolbar();
    bar.setKernelSpecs(SPECS, 'python3');
    bar.setNotebooks([GPU_NB]);
    // A kernel setting is the user's choice: it wins over the notebook in front.
    expect(picker(bar).value).toBe('python3');
    bar.kernels.chooseNotebook(CPU_NB.path); // not open yet
    expect(picker(bar).value).toBe('python3');
    bar.setNotebooks([GPU_NB, CPU_NB]);
    expect(picker(bar).value).toBe(notebookValue(CPU_NB.path));
    expect(bar.runOptions(defaults).kernel).toBe('python3');
    // Closed: back to what else applies.
    bar.setNotebooks([GPU_NB]);
    expect(picker(bar).value).toBe('python3');
  });

  it('offers this very kernel with one worker only, and says why', () => {
    let workers = 2;
    const bar = new RunToolbar({
      trans,
      model: new RunModel(),
      commands: new CommandRegistry(),
      args: () => ({ path: 'ws' }),
      workers: () => workers,
    });
    const host = document.createElement('div');
    host.append(bar.kernels.mode, bar.kernels.note);
    bar.setKernelSpecs(SPECS, '');
    bar.setNotebooks([GPU_NB]);
    const attach = Array.from(bar.kernels.mode.options).find(o => o.value === 'attach')!;
    expect(attach.disabled).toBe(true);
    expect(attach.textContent).toContain('one worker only');
    expect(bar.kernels.note.hidden).toBe(true);
    workers = 1;
    bar.kernels.mode.dispatchEvent(new Event('focus'));
    expect(attach.disabled).toBe(false);
    bar.kernels.mode.value = 'attach';
    bar.kernels.mode.dispatchEvent(new Event('change'));
    // The setting changed to 3 workers after this very kernel was chosen: the toolbar says so.
    workers = 3;
    bar.kernels.mode.dispatchEvent(new Event('focus'));
    expect(bar.kernels.note.hidden).toBe(false);
    expect(bar.kernels.note.title).toContain('3 workers');
    expect(bar.kernels.note.title).toContain('Settings → Autoresearch');
  });

  it('chooses by the rules alone, whatever draws them', () => {
    const groups = kernelGroups(SPECS, [GPU_NB], trans);
    const pick = (p: Partial<Parameters<typeof chooseKernel>[3]>) =>
      chooseKernel(groups, [GPU_NB], 'python3', { picked: null, wanted: null, setting: '', ...p });
    expect(pick({})).toBe(notebookValue(GPU_NB.path));
    expect(pick({ setting: 'gone' })).toBe(notebookValue(GPU_NB.path)); // a setting naming no kernelspec
    expect(pick({ picked: 'gone', setting: 'gpu' })).toBe('gpu');
    expect(chooseKernel(kernelGroups(null, [], trans), [], '', { picked: null, wanted: null, setting: '' })).toBe('');
  });
});

describe('the picker’s Slurm cluster entry', () => {
  it('is offered beside no kernel, and sends executor slurm with no kernel at all', () => {
    const bar = toolbar();
    bar.setKernelSpecs(SPECS, '');
    bar.setNotebooks([GPU_NB]);
    const loose = Array.from(picker(bar).children).filter(c => c.tagName === 'OPTION') as HTMLOptionElement[];
    expect(loose.map(o => [o.value, o.textContent])).toEqual([
      [SLURM, 'Slurm cluster (srun)'],
      ['', 'No kernel (the server’s Python)'],
    ]);
    expect(loose[0].title).toContain('srun');
    picker(bar).value = SLURM;
    picker(bar).dispatchEvent(new Event('change'));
    expect(modeShown(bar)).toBe(false); // no notebook's kernel: nothing to say of how it is used
    const opts = bar.runOptions(defaults);
    expect(opts.executor).toBe('slurm');
    expect(opts).not.toHaveProperty('kernel');
    expect(opts).not.toHaveProperty('kernel_id');
    // A transfer study replays through Slurm too, and starts no kernel.
    expect(bar.kernels.transferOptions()).toEqual({ executor: 'slurm' });
    expect(bar.kernels.kernelSpec()).toBe('');
    // The pick holds while the notebooks change.
    bar.setNotebooks([CPU_NB, GPU_NB]);
    expect(picker(bar).value).toBe(SLURM);
  });

  it('says what each entry sends: a kernel, Slurm, or the subprocess executor for no kernel', () => {
    expect(kernelRunOptions('gpu', 'environment', [])).toEqual({ kernel: 'gpu' });
    expect(kernelRunOptions(notebookValue(GPU_NB.path), 'attach', [GPU_NB])).toEqual({ kernel_id: 'k-gpu' });
    expect(kernelRunOptions(SLURM, 'attach', [GPU_NB])).toEqual({ executor: 'slurm' });
    // Said outright: program.md's slurm: must not turn “the server’s Python” into Slurm jobs.
    expect(kernelRunOptions('', 'environment', [])).toEqual({ executor: 'subprocess' });
    expect(transferRunOptions(notebookValue(GPU_NB.path), [GPU_NB])).toEqual({ kernel: 'gpu' });
    expect(transferRunOptions('', [])).toEqual({});
  });

  it('is shown where program.md has slurm:, unless the user, a command or the kernel setting says otherwise', () => {
    const bar = toolbar();
    bar.setKernelSpecs(SPECS, '');
    bar.setNotebooks([GPU_NB]);
    expect(picker(bar).value).toBe(notebookValue(GPU_NB.path));
    bar.kernels.suggestSlurm(true);
    expect(picker(bar).value).toBe(SLURM); // over the notebook in front
    expect(bar.runOptions(defaults).executor).toBe('slurm');
    bar.kernels.suggestSlurm(false); // slurm: taken out of program.md
    expect(picker(bar).value).toBe(notebookValue(GPU_NB.path));

    const groups = kernelGroups(SPECS, [GPU_NB], trans);
    const pick = (p: Partial<Parameters<typeof chooseKernel>[3]>) =>
      chooseKernel(groups, [GPU_NB], 'python3', { picked: null, wanted: null, setting: '', program: SLURM, ...p });
    expect(pick({})).toBe(SLURM);
    expect(pick({ setting: 'gpu' })).toBe('gpu');
    expect(pick({ wanted: notebookValue(GPU_NB.path) })).toBe(notebookValue(GPU_NB.path));
    expect(pick({ picked: '' })).toBe('');
    expect(
      chooseKernel(kernelGroups(null, [], trans), [], '', { picked: null, wanted: null, setting: '', program: SLURM }),
    ).toBe(SLURM);
  });
});

/** A notebook panel as the tracker holds it: a widget with a document context and a session context. */
class StandInNotebook extends Widget {
  readonly context: { path: string; pathChanged: Signal<unknown, string> };
  readonly sessionContext: {
    session: { kernel: { id: string; name: string } | null } | null;
    kernelChanged: Signal<unknown, unknown>;
    sessionChanged: Signal<unknown, unknown>;
  };

  constructor(path: string, kernel: { id: string; name: string } | null) {
    super();
    this.node.tabIndex = 0;
    this.context = { path, pathChanged: new Signal(this) };
    this.sessionContext = {
      session: kernel ? { kernel } : null,
      kernelChanged: new Signal(this),
      sessionChanged: new Signal(this),
    };
  }

  setKernel(kernel: { id: string; name: string } | null): void {
    this.sessionContext.session = kernel ? { kernel } : null;
    this.sessionContext.kernelChanged.emit(kernel);
  }
}

/** INotebookTracker's signals and current widget: the one focused last, until it is disposed. */
class StandInTracker {
  readonly widgetAdded = new Signal<this, StandInNotebook>(this);
  readonly currentChanged = new Signal<this, StandInNotebook | null>(this);
  private readonly focus = new FocusTracker<StandInNotebook>();

  constructor() {
    this.focus.currentChanged.connect((_, change) => this.currentChanged.emit(change.newValue));
  }
  get currentWidget(): StandInNotebook | null {
    return this.focus.currentWidget;
  }
  add(widget: StandInNotebook): void {
    this.focus.add(widget);
    this.widgetAdded.emit(widget);
  }
  forEach(fn: (widget: StandInNotebook) => void): void {
    this.focus.widgets.forEach(fn);
  }
  dispose(): void {
    this.focus.dispose();
  }
}

describe('NotebookKernels', () => {
  it('follows the tracker: opened, brought to the front, given a kernel, renamed, closed', () => {
    const tracker = new StandInTracker();
    const a = new StandInNotebook('ws/a.ipynb', { id: 'ka', name: 'python3' });
    Widget.attach(a, document.body);
    tracker.add(a);
    const list = new NotebookKernels(tracker);
    const seen: string[][] = [];
    list.changed.connect((_, l) => seen.push(l.map(k => `${k.name}:${k.kernelId}`)));
    expect(list.notebooks).toEqual([{ path: 'ws/a.ipynb', name: 'a.ipynb', kernelId: 'ka', specName: 'python3' }]);

    // A notebook without a kernel is not offered until it has one.
    const b = new StandInNotebook('ws/b.ipynb', null);
    Widget.attach(b, document.body);
    tracker.add(b);
    b.node.focus();
    expect(tracker.currentWidget).toBe(b);
    expect(list.notebooks.map(k => k.name)).toEqual(['a.ipynb']);
    b.setKernel({ id: 'kb', name: 'gpu' });
    expect(list.notebooks.map(k => k.name)).toEqual(['b.ipynb', 'a.ipynb']);

    a.node.focus();
    expect(list.notebooks.map(k => k.name)).toEqual(['a.ipynb', 'b.ipynb']);
    a.setKernel({ id: 'ka2', name: 'python3' });
    b.context.path = 'ws/renamed.ipynb';
    b.context.pathChanged.emit(b.context.path);
    expect(list.notebooks.map(k => `${k.name}:${k.kernelId}`)).toEqual(['a.ipynb:ka2', 'renamed.ipynb:kb']);
    a.dispose();
    expect(list.notebooks.map(k => k.path)).toEqual(['ws/renamed.ipynb']);
    expect(seen).toEqual([
      ['b.ipynb:kb', 'a.ipynb:ka'],
      ['a.ipynb:ka', 'b.ipynb:kb'],
      ['a.ipynb:ka2', 'b.ipynb:kb'],
      ['a.ipynb:ka2', 'renamed.ipynb:kb'],
      ['renamed.ipynb:kb'],
    ]);
    list.dispose();
    b.dispose();
    tracker.dispose();
  });

  it('is empty without JupyterLab’s notebooks', () => {
    expect(new NotebookKernels(null).notebooks).toEqual([]);
  });
});
