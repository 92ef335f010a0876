/**
 * The *New Autoresearch Workspace* dialog: the folder to create, and where the workspace comes
 * from: the bundled tiny-cpu template, or a repository laid out like the original autoresearch
 * (program.md, prepare.py and train.py at its root), cloned by URL or path at an optional branch,
 * tag or commit (`POST workspaces {path, from, ref}`). The body and what its fields ask for; the
 * command (../commands.ts) shows it again, the fields kept, with the problem (an empty field, or
 * the server's refusal when the clone fails).
 */
import type { Dialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';
import type { IWorkspaceSource } from '../api/server';
import { dialogRow } from '../dialog-row';

/** The dialog's fields, as typed. */
export interface INewWorkspaceFields {
  folder: string;
  source: 'template' | 'repository';
  /** The repository's URL or path. */
  from: string;
  /** Its branch, tag or commit; '' for the default branch. */
  ref: string;
}

/** What the fields ask for, or what is wrong with them. */
export type NewWorkspaceRequest = { path: string; source: IWorkspaceSource } | { error: string };

/** The request the fields make: a folder, and the template or a repository (with its ref, if given). */
export function parseNewWorkspace(fields: INewWorkspaceFields, trans: TranslationBundle): NewWorkspaceRequest {
  const path = fields.folder.trim();
  if (!path) {
    return { error: trans.__('Name the folder to create the workspace in.') };
  }
  if (fields.source === 'template') {
    return { path, source: { template: 'tiny-cpu' } };
  }
  const from = fields.from.trim();
  if (!from) {
    return { error: trans.__('Give the repository’s URL or path, or choose the template.') };
  }
  const ref = fields.ref.trim();
  return { path, source: ref ? { from, ref } : { from } };
}

/** Tells the radio groups of successive bodies apart. */
let bodies = 0;

/** The dialog's body: the folder, the choice of source with the repository's fields, and the last problem. */
export class NewWorkspaceBody extends Widget implements Dialog.IBodyWidget<INewWorkspaceFields> {
  readonly folder = document.createElement('input');
  readonly template = document.createElement('input');
  readonly repository = document.createElement('input');
  readonly from = document.createElement('input');
  readonly ref = document.createElement('input');

  constructor(trans: TranslationBundle, fields: INewWorkspaceFields, error: string | null) {
    super();
    this.addClass('jp-AutoresearchNewWorkspace');
    const group = `jp-AutoresearchNewWorkspace-source-${++bodies}`;
    const row = (label: string, control: HTMLElement, hint = '') =>
      dialogRow('jp-AutoresearchNewWorkspace-row', label, control, hint);
    const choice = (radio: HTMLInputElement, value: string, label: string, hint: string) => {
      radio.type = 'radio';
      radio.name = group;
      radio.value = value;
      radio.className = `jp-AutoresearchNewWorkspace-${value}`;
      const wrap = document.createElement('label');
      wrap.className = 'jp-AutoresearchNewWorkspace-choice';
      wrap.title = hint;
      const text = document.createElement('span');
      text.textContent = label;
      wrap.append(radio, text);
      return wrap;
    };
    this.folder.className = 'jp-mod-styled jp-AutoresearchNewWorkspace-folder';
    this.folder.value = fields.folder;
    this.from.className = 'jp-mod-styled jp-AutoresearchNewWorkspace-from';
    this.from.value = fields.from;
    this.from.placeholder = trans.__('https://github.com/karpathy/autoresearch or a path on the server');
    this.ref.className = 'jp-mod-styled jp-AutoresearchNewWorkspace-ref';
    this.ref.value = fields.ref;
    this.ref.placeholder = trans.__('the default branch');
    const sources = document.createElement('div');
    sources.className = 'jp-AutoresearchNewWorkspace-sources';
    sources.append(
      choice(
        this.template,
        'template',
        trans.__('From the tiny-cpu template'),
        trans.__('A small model that trains on the CPU in seconds: the method, tried out'),
      ),
      choice(
        this.repository,
        'repository',
        trans.__('From a repository'),
        trans.__('A repository laid out like the original autoresearch, cloned into the folder with its history'),
      ),
    );
    (fields.source === 'repository' ? this.repository : this.template).checked = true;
    const repoFields = document.createElement('div');
    repoFields.className = 'jp-AutoresearchNewWorkspace-repository-fields';
    repoFields.append(
      row(
        trans.__('Repository (URL or path)'),
        this.from,
        trans.__('program.md, prepare.py and train.py at its root; program.md may have no front matter'),
      ),
      row(trans.__('Branch, tag or commit (optional)'), this.ref),
    );
    const sync = () => {
      const repo = this.repository.checked;
      this.from.disabled = !repo;
      this.ref.disabled = !repo;
      // Disabled fields say why, and how to use them.
      const why = repo
        ? ''
        : trans.__(
            'Unavailable: the workspace comes from the bundled template. Choose “From a repository” to clone one.',
          );
      this.from.title = why;
      this.ref.title = why;
      repoFields.classList.toggle('jp-mod-disabled', !repo);
    };
    this.template.addEventListener('change', sync);
    this.repository.addEventListener('change', sync);
    sync();
    this.node.append(row(trans.__('Folder to create'), this.folder), sources, repoFields);
    if (error) {
      const problem = document.createElement('p');
      problem.className = 'jp-AutoresearchNewWorkspace-error';
      problem.textContent = error;
      this.node.appendChild(problem);
    }
  }

  getValue(): INewWorkspaceFields {
    return {
      folder: this.folder.value,
      source: this.repository.checked ? 'repository' : 'template',
      from: this.from.value,
      ref: this.ref.value,
    };
  }
}
