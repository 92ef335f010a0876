/**
 * The rules of the toolbar's kernel picker, apart from drawing it (run-toolbar.ts does): what it
 * offers (the open notebooks' kernels, the kernelspecs, a Slurm cluster, no kernel), which entry
 * it shows when the user has not picked one, and what a choice sends with a run. A notebook's
 * kernel is used one of two ways: its environment (a fresh kernel of its kernelspec, so the
 * notebook stays free) or that very kernel (attached by id; one worker only, since each worker
 * needs a kernel of its own). The picker is the panel's executor choice: a kernel entry trains
 * through the kernel executor, the Slurm entry as Slurm jobs, no kernel as the server's python.
 */
import type { KernelSpec } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { IRunOptions } from '../../api/server';
import type { INotebookKernel } from '../../notebooks/notebook-kernels';

/** How a notebook's kernel trains: in a fresh kernel of its kernelspec, or in that very kernel. */
export type KernelMode = 'environment' | 'attach';

/** The prefix of a value that names an open notebook: kernelspec names never hold a colon. */
const NOTEBOOK = 'notebook:';

/** The entry that runs each experiment as a Slurm job (`--executor slurm`); a colon, so no kernelspec's name. */
export const SLURM = 'executor:slurm';

/** The picker's value for the notebook at `path`. */
export function notebookValue(path: string): string {
  return NOTEBOOK + path;
}

/** The notebook a picker value names, or null for a kernelspec or no kernel. */
export function notebookPath(value: string): string | null {
  return value.startsWith(NOTEBOOK) ? value.slice(NOTEBOOK.length) : null;
}

export interface IKernelOption {
  value: string;
  label: string;
  title: string;
}

/** A group of entries; a group without a label is loose entries. */
export interface IKernelGroup {
  label: string | null;
  options: IKernelOption[];
}

/** A kernelspec's display name, as the notebook's own picker shows it. */
function displayName(specs: KernelSpec.ISpecModels | null, name: string): string {
  return specs?.kernelspecs[name]?.display_name ?? name;
}

/**
 * What the picker offers: the open notebooks' kernels by notebook name (most recently active
 * first), then the kernelspecs as the notebook's picker lists them (display names, the default
 * first), then a Slurm cluster and no kernel (the server's Python).
 */
export function kernelGroups(
  specs: KernelSpec.ISpecModels | null,
  notebooks: readonly INotebookKernel[],
  trans: TranslationBundle,
): IKernelGroup[] {
  const def = specs?.default ?? '';
  const all = Object.values(specs?.kernelspecs ?? {}).filter((s): s is KernelSpec.ISpecModel => !!s);
  const byName = [...all].sort((a, b) => a.display_name.localeCompare(b.display_name));
  byName.sort((a, b) => Number(b.name === def) - Number(a.name === def));
  const groups: IKernelGroup[] = [];
  if (notebooks.length) {
    groups.push({
      label: trans.__('Open notebooks'),
      options: notebooks.map(nb => ({
        value: notebookValue(nb.path),
        label: `${nb.name} — ${displayName(specs, nb.specName)}`,
        title: trans.__('The kernel of %1 (%2, kernel %3)', nb.path, nb.specName, nb.kernelId),
      })),
    });
  }
  groups.push({
    label: trans.__('New kernel'),
    options: byName.map(spec => ({
      value: spec.name,
      label: spec.display_name,
      title: trans.__('A fresh %1 kernel for the run', spec.display_name),
    })),
  });
  groups.push({
    label: null,
    options: [
      {
        value: SLURM,
        label: trans.__('Slurm cluster (srun)'),
        title: trans.__(
          'Each experiment a Slurm job started with srun from the server host, with program.md’s slurm: settings (partition, account, GPUs…); the strip says “queued” while Slurm holds it',
        ),
      },
      { value: '', label: trans.__('No kernel (the server’s Python)'), title: trans.__('python on the server host') },
    ],
  });
  return groups;
}

/** What decides the entry shown, strongest first. */
export interface IKernelPreference {
  /** What the user picked in this picker, if they did. */
  picked: string | null;
  /** The notebook a command asked for (*Autoresearch with this kernel*). */
  wanted: string | null;
  /** The kernel setting ('' when it names none). */
  setting: string;
  /** The entry program.md asks for (SLURM where its front matter has `slurm:`), or null. */
  program?: string | null;
}

/**
 * The entry shown: the user's pick while it is offered; else the notebook a command asked for;
 * else the kernel setting; else what program.md asks for (Slurm, for its `slurm:` key, which the
 * engine too takes as the executor when no flag names one); else the most recently active
 * notebook's kernel; else the server's default kernelspec.
 */
export function chooseKernel(
  groups: readonly IKernelGroup[],
  notebooks: readonly INotebookKernel[],
  defaultSpec: string,
  p: IKernelPreference,
): string {
  const offered = new Set(groups.flatMap(g => g.options.map(o => o.value)));
  for (const candidate of [p.picked, p.wanted, p.setting || null, p.program ?? null]) {
    if (candidate !== null && offered.has(candidate)) {
      return candidate;
    }
  }
  if (notebooks.length) {
    return notebookValue(notebooks[0].path);
  }
  return offered.has(defaultSpec) ? defaultSpec : '';
}

/** What the picker may send with a run: a kernel, or the executor that runs without one. */
export type KernelRunOptions = Pick<IRunOptions, 'kernel' | 'kernel_id' | 'executor'>;

/**
 * What a run sends for the entry `value`: a kernelspec, a kernel id, the Slurm executor, or the
 * subprocess executor for no kernel (said outright, so that program.md's `slurm:` does not turn
 * "the server's Python" into Slurm jobs).
 */
export function kernelRunOptions(
  value: string,
  mode: KernelMode,
  notebooks: readonly INotebookKernel[],
): KernelRunOptions {
  if (value === SLURM) {
    return { executor: 'slurm' };
  }
  const path = notebookPath(value);
  if (path === null) {
    return value ? { kernel: value } : { executor: 'subprocess' };
  }
  const nb = notebooks.find(n => n.path === path);
  if (!nb) {
    return {}; // closed since: the picker is redrawn without it
  }
  return mode === 'attach' ? { kernel_id: nb.kernelId } : { kernel: nb.specName };
}

/** The kernelspec of the entry `value` ('' for no kernel and for Slurm): what a transfer study starts. */
export function kernelSpecOf(value: string, notebooks: readonly INotebookKernel[]): string {
  if (value === SLURM) {
    return '';
  }
  const path = notebookPath(value);
  return path === null ? value : (notebooks.find(n => n.path === path)?.specName ?? '');
}

/**
 * What a transfer study of the entry `value` sends: a fresh kernel of its kernelspec (a study
 * never takes over a notebook's kernel), Slurm jobs, or nothing (the server's Python).
 */
export function transferRunOptions(
  value: string,
  notebooks: readonly INotebookKernel[],
): Pick<IRunOptions, 'kernel' | 'executor'> {
  if (value === SLURM) {
    return { executor: 'slurm' };
  }
  const kernel = kernelSpecOf(value, notebooks);
  return kernel ? { kernel } : {};
}

/** Why *this very kernel* cannot be used with `workers`, or null when it can. */
export function attachProblem(workers: number, trans: TranslationBundle): string | null {
  return workers > 1
    ? trans.__(
        'This very kernel is one kernel, and each of %1 workers needs its own: set Workers to 1 in Settings → Autoresearch, or use its environment',
        workers,
      )
    : null;
}
