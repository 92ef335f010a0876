// @vitest-environment jsdom
/**
 * The *New Autoresearch Workspace* dialog's body: the template by default, a repository's URL or
 * path and ref once chosen, what the fields ask the server for, and the problem of the last try
 * (the server's refusal of a clone, say) shown with the fields kept.
 */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it, vi } from 'vitest';
import {
  NewWorkspaceBody,
  parseNewWorkspace,
  type INewWorkspaceFields,
} from '../../src/lab/commands/new-workspace-dialog';

// jsdom has no DragEvent, which @lumino/dragdrop (under @lumino/widgets) touches on import.
vi.hoisted(() => {
  const g = globalThis as unknown as { DragEvent?: unknown; MouseEvent: typeof MouseEvent };
  g.DragEvent ??= class DragEvent extends g.MouseEvent {};
});

const trans = nullTranslator.load('jupyterlab_autoresearch');
const EMPTY: INewWorkspaceFields = { folder: 'autoresearch-20261202', source: 'template', from: '', ref: '' };

function choose(radio: HTMLInputElement): void {
  radio.checked = true;
  radio.dispatchEvent(new Event('change'));
}

describe('NewWorkspaceBody', () => {
  it('starts on the template, with the repository’s fields off until a repository is chosen', () => {
    const body = new NewWorkspaceBody(trans, EMPTY, null);
    expect(body.template.checked).toBe(true);
    expect(body.from.disabled).toBe(true);
    expect(body.ref.disabled).toBe(true);
    // Disabled, each says why and what turns it on.
    expect(body.from.title).toMatch(/^Unavailable: .*Choose “From a repository”/);
    expect(body.ref.title).toBe(body.from.title);
    expect(body.getValue()).toEqual(EMPTY);
    // One choice of the two: the radios share a group, a body's own.
    expect(body.template.name).toBe(body.repository.name);
    expect(new NewWorkspaceBody(trans, EMPTY, null).template.name).not.toBe(body.template.name);

    choose(body.repository);
    expect(body.from.disabled).toBe(false);
    expect(body.ref.disabled).toBe(false);
    expect([body.from.title, body.ref.title]).toEqual(['', '']);
    body.folder.value = 'gpu-run';
    body.from.value = 'https://github.com/karpathy/autoresearch';
    body.ref.value = 'master';
    expect(body.getValue()).toEqual({
      folder: 'gpu-run',
      source: 'repository',
      from: 'https://github.com/karpathy/autoresearch',
      ref: 'master',
    });
    choose(body.template);
    expect(body.from.disabled).toBe(true);
    expect(body.getValue().source).toBe('template');
  });

  it('shows the last problem, with the fields as they were typed', () => {
    const fields: INewWorkspaceFields = { folder: 'w', source: 'repository', from: '/no/such/repo', ref: '' };
    const error = 'Could not create the workspace: cannot clone /no/such/repo: repository does not exist';
    const body = new NewWorkspaceBody(trans, fields, error);
    expect(body.node.querySelector('.jp-AutoresearchNewWorkspace-error')?.textContent).toBe(error);
    expect(body.repository.checked).toBe(true);
    expect(body.from.disabled).toBe(false);
    expect(body.getValue()).toEqual(fields);
    expect(new NewWorkspaceBody(trans, EMPTY, null).node.querySelector('.jp-AutoresearchNewWorkspace-error')).toBe(
      null,
    );
  });
});

describe('parseNewWorkspace', () => {
  it('asks for the template, or for a repository with its ref when one is given', () => {
    expect(parseNewWorkspace({ ...EMPTY, folder: ' ws ', from: 'ignored' }, trans)).toEqual({
      path: 'ws',
      source: { template: 'tiny-cpu' },
    });
    expect(parseNewWorkspace({ folder: 'ws', source: 'repository', from: ' ../repo ', ref: '' }, trans)).toEqual({
      path: 'ws',
      source: { from: '../repo' },
    });
    expect(parseNewWorkspace({ folder: 'ws', source: 'repository', from: 'u', ref: ' v1.0 ' }, trans)).toEqual({
      path: 'ws',
      source: { from: 'u', ref: 'v1.0' },
    });
  });

  it('says what is missing', () => {
    expect(parseNewWorkspace({ ...EMPTY, folder: '  ' }, trans)).toEqual({ error: expect.stringContaining('folder') });
    expect(parseNewWorkspace({ ...EMPTY, source: 'repository' }, trans)).toEqual({
      error: expect.stringContaining('URL or path'),
    });
  });
});
