/**
 * The toolbar's kernel controls: the picker (open notebooks' kernels, kernelspecs, a Slurm
 * cluster, no kernel) and, when a notebook's kernel is chosen, how it is used (*its environment*
 * or *this very kernel*), with a warning when the workers setting rules the second out. What they
 * offer, choose and send is ./kernel-picker.ts's; this draws it and remembers what the user
 * picked. Their toolbar items' labels (*Kernel*, *Use*) name them; their titles say more.
 */
import type { KernelSpec } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { INotebookKernel } from '../../notebooks/notebook-kernels';
import {
  attachProblem,
  chooseKernel,
  kernelGroups,
  type KernelMode,
  kernelRunOptions,
  type KernelRunOptions,
  kernelSpecOf,
  notebookPath,
  notebookValue,
  SLURM,
  transferRunOptions,
} from './kernel-picker';
import { showItem } from './toolbar-items';

export class KernelControls {
  readonly picker = document.createElement('select');
  /** How an open notebook's kernel is used: its environment, or this very kernel. */
  readonly mode = document.createElement('select');
  /** Why the mode chosen cannot run as the settings stand (several workers), in the warning colour. */
  readonly note = document.createElement('span');
  private specs: KernelSpec.ISpecModels | null = null;
  /** The kernel setting. */
  private preferred = '';
  private notebooks: INotebookKernel[] = [];
  /** The entry the user picked, once they have. */
  private picked: string | null = null;
  /** The notebook a command asked for (*Autoresearch with this kernel*). */
  private wanted: string | null = null;
  /** The entry program.md asks for: Slurm where its front matter has `slurm:`. */
  private program: string | null = null;

  /** `workers`: the workers setting, read whenever the mode is drawn. */
  constructor(
    private readonly trans: TranslationBundle,
    private readonly workers: () => number,
  ) {
    this.picker.className = 'jp-mod-styled jp-AutoresearchToolbar-kernel';
    this.picker.title = trans.__(
      'Where train.py runs: in the environment of an open notebook’s kernel or of a fresh kernel of a kernelspec, as Slurm jobs, or with the server’s Python',
    );
    const environment = trans.__(
      'Its environment: each experiment runs in a fresh kernel of the notebook’s kernelspec, started through the same server or gateway; the notebook stays free to use',
    );
    const attach = trans.__(
      'This very kernel: the experiments run in the notebook’s own kernel, which shows busy while one trains and is never shut down by the run; one worker only',
    );
    this.mode.className = 'jp-mod-styled jp-AutoresearchToolbar-kernelMode';
    this.mode.title = `${environment}\n${attach}`;
    const modes: Array<[KernelMode, string, string]> = [
      ['environment', trans.__('its environment'), environment],
      ['attach', trans.__('this very kernel'), attach],
    ];
    for (const [value, label, title] of modes) {
      const option = new Option(label, value);
      option.title = title;
      this.mode.appendChild(option);
    }
    this.note.className = 'jp-AutoresearchToolbar-kernelNote';
    this.note.hidden = true;
    this.picker.addEventListener('change', () => {
      this.picked = this.picker.value;
      this.renderMode();
    });
    this.mode.addEventListener('change', () => this.renderMode());
    // The workers setting may have changed since the last drawing: say so before the user picks.
    this.mode.addEventListener('focus', () => this.renderMode());
  }

  /** The kernelspecs and the kernel setting. */
  setKernelSpecs(specs: KernelSpec.ISpecModels | null, preferred: string): void {
    this.specs = specs;
    this.preferred = preferred;
    this.render();
  }

  /** The open notebooks with a kernel, the most recently active first. */
  setNotebooks(notebooks: readonly INotebookKernel[]): void {
    this.notebooks = [...notebooks];
    this.render();
  }

  /** Chooses the kernel of the notebook at `path` (once it is listed, if it is not yet). */
  chooseNotebook(path: string): void {
    this.wanted = notebookValue(path);
    this.picked = null;
    this.render();
  }

  /** Whether program.md has a `slurm:` key: then the Slurm entry is shown until the user picks (or a setting or command names a kernel). */
  suggestSlurm(slurm: boolean): void {
    const program = slurm ? SLURM : null;
    if (program !== this.program) {
      this.program = program;
      this.render();
    }
  }

  /** The notebook whose kernel is chosen, or null. */
  get chosenNotebook(): INotebookKernel | null {
    const path = notebookPath(this.picker.value);
    return this.notebooks.find(n => n.path === path) ?? null;
  }

  /** What a run sends for the choice: kernel, kernel_id, or the executor (slurm; subprocess for no kernel). */
  runOptions(): KernelRunOptions {
    return kernelRunOptions(this.picker.value, this.mode.value as KernelMode, this.notebooks);
  }

  /** The kernelspec of the choice ('' for none and for Slurm). */
  kernelSpec(): string {
    return kernelSpecOf(this.picker.value, this.notebooks);
  }

  /** What a transfer study sends for the choice: a fresh kernel of its kernelspec, Slurm jobs, or neither. */
  transferOptions(): ReturnType<typeof transferRunOptions> {
    return transferRunOptions(this.picker.value, this.notebooks);
  }

  /** Redraws the picker and the mode. */
  render(): void {
    const groups = kernelGroups(this.specs, this.notebooks, this.trans);
    this.picker.replaceChildren();
    for (const group of groups) {
      let parent: HTMLElement = this.picker;
      if (group.label !== null) {
        const optgroup = document.createElement('optgroup');
        optgroup.label = group.label;
        this.picker.appendChild(optgroup);
        parent = optgroup;
      }
      for (const o of group.options) {
        const option = new Option(o.label, o.value);
        option.title = o.title;
        parent.appendChild(option);
      }
    }
    this.picker.value = chooseKernel(groups, this.notebooks, this.specs?.default ?? '', {
      picked: this.picked,
      wanted: this.wanted,
      setting: this.preferred,
      program: this.program,
    });
    this.renderMode();
  }

  /** The mode shows for a notebook's kernel; *this very kernel* is offered with one worker only. */
  renderMode(): void {
    const { trans } = this;
    const problem = attachProblem(this.workers(), trans);
    const attach = Array.from(this.mode.options).find(o => o.value === 'attach')!;
    attach.disabled = problem !== null;
    attach.textContent = problem ? trans.__('this very kernel (one worker only)') : trans.__('this very kernel');
    const blocked = problem !== null && this.mode.value === 'attach';
    this.note.textContent = blocked ? trans.__('one worker only') : '';
    this.note.title = blocked ? problem : '';
    this.note.hidden = !blocked;
    showItem(this.mode.parentElement, this.chosenNotebook !== null);
  }
}
