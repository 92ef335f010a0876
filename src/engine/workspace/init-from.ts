/**
 * `autoresearch init DIR --from URL|PATH [--ref R]`: a workspace from a repository laid out like
 * the original autoresearch (program.md, train.py, prepare.py at its root; program.md with or
 * without front matter). The clone is the workspace, with its history: nothing is rewritten but
 * `.gitignore`, which gains the engine's entries in a commit of its own. A clone that cannot be a
 * workspace is removed again, so a failed init leaves nothing behind.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseProgram } from '../../core/config/program';
import { exec } from '../git/exec';
import { Repo } from '../git/git';
import { UserError } from '../user-error';
import { readRegularIfAny, readRegularText, writeWorkspaceFile } from './workspace-files';

/** What a workspace needs at its root. */
export const WORKSPACE_FILES = ['program.md', 'train.py', 'prepare.py'] as const;

/** What the engine adds to .gitignore: the results file and its own state stay out of the history. */
export const IGNORED = ['results.tsv', '.autoresearch/'];

export interface InitFromOptions {
  from: string;
  ref?: string;
}

export interface InitFromResult {
  commit: string;
  /** The branch the workspace is on (a new one when the ref was a tag or a commit). */
  branch: string;
  /** What the workspace's Python needs, in words, for the user to install. */
  needs: string[];
}

/** A URL git clones as is; anything else is a local path, made absolute from the current folder. */
function source(from: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(from) || /^[^/\s]+@[^:\s]+:/.test(from) ? from : path.resolve(from);
}

async function git(cwd: string, args: string[]): Promise<{ ok: boolean; out: string; err: string }> {
  const r = await exec('git', args, { cwd, env: { ...process.env, GIT_TERMINAL_PROMPT: '0' } });
  return { ok: r.code === 0, out: r.stdout.trim(), err: r.stderr.trim().split('\n').pop() ?? '' };
}

/** Clones `from` into the new folder `dir` and makes it a workspace; returns its commit and what it needs. */
export async function initFromRepository(dir: string, o: InitFromOptions): Promise<InitFromResult> {
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) {
    throw new UserError(`${dir} exists and is not empty; choose a new folder`);
  }
  // Neither may pass for one of git's options (`--upload-pack=…` runs a command).
  if (o.from.startsWith('-'))
    throw new UserError(`--from ${JSON.stringify(o.from)}: a URL or path may not start with "-"`);
  if (o.ref?.startsWith('-'))
    throw new UserError(`--ref ${JSON.stringify(o.ref)}: a branch, tag or commit may not start with "-"`);
  const existed = fs.existsSync(dir);
  const url = source(o.from);
  // ext:: would run a command of the URL's choosing; git refuses it by default, and so do we, whatever the config.
  const cloned = await git(path.dirname(dir), ['-c', 'protocol.ext.allow=never', 'clone', '--quiet', '--', url, dir]);
  if (!cloned.ok) {
    if (!existed) fs.rmSync(dir, { recursive: true, force: true });
    throw new UserError(`cannot clone ${o.from}: ${cloned.err.replace(/^fatal: /, '')}; check the URL or path`);
  }
  try {
    return await makeWorkspace(dir, o);
  } catch (e) {
    // Nothing of a clone that is no workspace stays behind (the folder was new or empty).
    fs.rmSync(dir, { recursive: true, force: true });
    if (existed) fs.mkdirSync(dir);
    throw e;
  }
}

async function makeWorkspace(dir: string, o: InitFromOptions): Promise<InitFromResult> {
  if (o.ref !== undefined) {
    const out = await git(dir, ['checkout', '--quiet', o.ref, '--']);
    if (!out.ok) throw new UserError(`${o.from} has no branch, tag or commit named "${o.ref}" (${out.err})`);
  }
  let branch = (await git(dir, ['symbolic-ref', '--quiet', '--short', 'HEAD'])).out;
  if (!branch) {
    // A tag or a commit: a branch of its own, so the workspace's commits have somewhere to go.
    branch = `autoresearch-base-${(o.ref ?? 'head').replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40)}`;
    const made = await git(dir, ['switch', '--quiet', '-c', branch]);
    if (!made.ok) throw new UserError(`cannot create branch ${branch} in the clone: ${made.err}`);
  }
  const missing = WORKSPACE_FILES.filter(f => !fs.existsSync(path.join(dir, f)));
  if (missing.length) {
    throw new UserError(
      `${o.from}${o.ref ? ` at ${o.ref}` : ''} is not laid out like autoresearch: ${missing.join(', ')} missing at its root (a workspace needs ${WORKSPACE_FILES.join(', ')})`,
    );
  }
  try {
    parseProgram(readRegularText(dir, 'program.md'));
  } catch (e) {
    throw new UserError(`${o.from}'s program.md cannot be used: ${(e as Error).message}`);
  }
  const repo = new Repo(dir);
  // The clone's files are whatever its repository committed: a link at .gitignore is refused, not followed.
  const ignore = readRegularIfAny(dir, '.gitignore')?.toString('utf8') ?? '';
  const have = new Set(ignore.split('\n').map(l => l.trim()));
  const add = IGNORED.filter(e => !have.has(e) && !have.has(e.replace(/\/$/, '')));
  let commit = (await git(dir, ['rev-parse', 'HEAD'])).out;
  if (add.length) {
    writeWorkspaceFile(
      dir,
      '.gitignore',
      `${ignore}${ignore && !ignore.endsWith('\n') ? '\n' : ''}${add.join('\n')}\n`,
    );
    commit = await repo.commit(['.gitignore'], 'autoresearch init: keep results.tsv and .autoresearch/ out of git');
  }
  return { commit, branch, needs: needsOf(dir) };
}

/** What the workspace's Python needs, as its own files say (read, not installed: that is the user's call). */
export function needsOf(dir: string): string[] {
  const needs: string[] = [];
  for (const file of ['pyproject.toml', 'requirements.txt']) {
    if (fs.existsSync(path.join(dir, file))) needs.push(`the packages its ${file} lists`);
  }
  if (needs.length === 0) needs.push('the packages train.py and prepare.py import (the repository lists none)');
  needs.push('the data prepare.py makes: run `python prepare.py` once in the environment that trains');
  return needs;
}
