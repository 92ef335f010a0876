/**
 * A workspace: a git repository laid out like the original autoresearch
 * (program.md, train.py, prepare.py), plus the engine's git-ignored state in
 * `.autoresearch/`. Every check here fails with one line that names the fix.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunConfig, RunStartRecord } from '../../core/journal/journal';
import {
  defaultTag,
  ENGINE_FILE,
  freeTag,
  JOURNAL_FILE,
  LOGS_DIR,
  RUN_BRANCH_PREFIX,
  runBranch,
  runLogName,
  STATE_DIR,
  STATE_FILE,
  TAG_RULE_WORDS,
  validTag,
} from '../../core/journal/layout';
import { engineOwnedRoot, parseProgram, resolveConfig, type ParsedProgram } from '../../core/config/program';
import { gitVersion, Repo } from '../git/git';

import { UserError } from '../user-error';
import { NotRegularFile, notRegularProblem, readRegularIfAny, readRegularText } from './workspace-files';

/** Refuses a tag the engine (and the server, which shares src/core/journal/layout.ts's rule) would not accept. */
export function checkTag(tag: string): string {
  if (!validTag(tag)) {
    throw new UserError(`tag "${tag}" may only use ${TAG_RULE_WORDS}`);
  }
  return tag;
}

/** Where a run's files live (the names are src/core/journal/layout.ts's). */
export function runPaths(dir: string, tag: string) {
  const root = path.join(dir, STATE_DIR, tag);
  return {
    root,
    journal: path.join(root, JOURNAL_FILE),
    /** What the journal says, derived (src/core/journal/run-state.ts), rewritten after every append. */
    state: path.join(root, STATE_FILE),
    logs: path.join(root, LOGS_DIR),
    log: (n: number) => path.join(root, LOGS_DIR, runLogName(n)),
    /** The i-th run of experiment n (repeats and re-measures of the best): the first is log(n). */
    runLog: (n: number, i: number) => path.join(root, LOGS_DIR, runLogName(n, i)),
  };
}

/** The file naming the engine that is running on a workspace (pid and tag). */
export function enginePidFile(dir: string): string {
  return path.join(dir, STATE_DIR, ENGINE_FILE);
}

/** Reads program.md and resolves the run's configuration. */
export function loadProgram(
  dir: string,
  overrides: Partial<RunConfig> = {},
): { program: ParsedProgram; config: RunConfig } {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new UserError(`${dir} is not a folder; create one with: autoresearch init ${dir}`);
  }
  const bytes = readRegularIfAny(dir, PROGRAM_FILE);
  if (bytes === null) {
    throw new UserError(
      `${dir}: program.md is missing; write the instructions for the agent there (autoresearch init creates one)`,
    );
  }
  const text = bytes.toString('utf8');
  let program: ParsedProgram;
  let config: RunConfig;
  try {
    program = parseProgram(text);
    config = resolveConfig(program.frontMatter, overrides);
  } catch (e) {
    throw new UserError((e as Error).message);
  }
  if (program.body.trim() === '') {
    throw new UserError(`${dir}: program.md is empty; write the instructions for the agent there`);
  }
  return { program, config };
}

/**
 * program.md as it is on disk now, for the next proposal: the researcher may edit it (in the
 * panel's cell, or any editor) while a run goes on. Front matter settings are fixed at the run's
 * start; only the prose is re-read. A file made unreadable or empty mid-run keeps the last text.
 */
export function currentProgramBody(dir: string, fallback: string): string {
  try {
    // Never through a link or FIFO a run put there: such a file keeps the last text.
    const body = parseProgram(readRegularText(dir, PROGRAM_FILE)).body;
    return body.trim() ? body : fallback;
  } catch {
    return fallback;
  }
}

/**
 * The researcher's file: its edits may stay uncommitted in the work tree. A run starts with them,
 * resets keep them (Repo.resetHard), experiment commits never sweep them in.
 */
export const PROGRAM_FILE = 'program.md';

/** Checks everything a run needs before it touches the repository. */
export async function checkWorkspace(
  dir: string,
  config: RunConfig,
  opts: { allowDirty?: string[] } = {},
): Promise<Repo> {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new UserError(`${dir} is not a folder; create one with: autoresearch init ${dir}`);
  }
  // The checks below read "no repository" from any git failure: a missing git must say so first.
  await gitVersion();
  const repo = new Repo(dir);
  if (!(await repo.isRepoRoot())) {
    throw new UserError(
      `${dir} is not the top folder of a git repository; run git init there and commit the files, or use autoresearch init`,
    );
  }
  if (!(await repo.hasCommits())) {
    throw new UserError(`${dir} has no commits yet; commit program.md, train.py and prepare.py first`);
  }
  for (const f of [...config.editable, ...config.readonly]) {
    if (!fs.existsSync(path.join(dir, f))) {
      const role = config.editable.includes(f) ? 'editable' : 'read-only';
      throw new UserError(
        `${f} is missing in ${dir}; it is listed as ${role} — add the file or change the ${role === 'editable' ? 'editable' : 'readonly'} list in program.md's front matter`,
      );
    }
  }
  for (const f of config.editable) {
    const problem = editableLinkProblem(dir, f);
    if (problem) {
      throw new UserError(
        `${problem}; make ${f} a plain file of the workspace, or take it out of the editable list in program.md's front matter`,
      );
    }
  }
  for (const f of [...config.editable, ...config.readonly]) {
    const problem = notRegularProblem(dir, f);
    if (problem) {
      throw new UserError(problem);
    }
  }
  repo.ensureEngineIgnores();
  const allowed = [PROGRAM_FILE, ...(opts.allowDirty ?? [])];
  const dirty = (await repo.changedTrackedFiles()).filter(f => !allowed.includes(f));
  if (dirty.length) {
    throw new UserError(
      `the work tree of ${dir} has uncommitted changes (${dirty.slice(0, 5).join(', ')}${dirty.length > 5 ? ', …' : ''}); commit or stash them first`,
    );
  }
  return repo;
}

/** SHA-256 of each read-only file, so any change to them is caught. */
export function hashFiles(dir: string, files: string[]): Record<string, string> {
  const hashes: Record<string, string> = {};
  for (const f of files) {
    let bytes: Buffer | null;
    try {
      bytes = readRegularIfAny(dir, f);
    } catch (e) {
      // A link or FIFO in a read-only file's place is a change, never followed nor waited on.
      if (!(e instanceof NotRegularFile)) throw e;
      hashes[f] = 'not a regular file';
      continue;
    }
    hashes[f] = bytes === null ? 'missing' : createHash('sha256').update(bytes).digest('hex');
  }
  return hashes;
}

/**
 * Why an editable file may not be written: it is, or sits in a folder that is, a link leading out
 * of the workspace or into the engine's own files (.git, .autoresearch, results.tsv). Checked at
 * the start and before each edit, since a training run may swap the file for such a link.
 * Null when writing it writes a file of the workspace.
 */
export function editableLinkProblem(dir: string, file: string): string | null {
  const p = path.join(dir, file);
  let real: string;
  try {
    const link = fs.lstatSync(p).isSymbolicLink();
    // A plain file (or none yet) is written where its folder really is; a link, where it leads.
    real = link ? fs.realpathSync(p) : path.join(fs.realpathSync(path.dirname(p)), path.basename(p));
  } catch {
    return fs.existsSync(path.dirname(p)) ? `${file} is a link to a file that does not exist` : null;
  }
  const rel = path.relative(fs.realpathSync(dir), real);
  if (rel.startsWith('..') || path.isAbsolute(rel)) {
    return `${file} is a link to ${real}, outside the workspace`;
  }
  const inside = rel.split(path.sep).join('/');
  const owned = engineOwnedRoot(inside);
  return owned
    ? `${file} is a link to ${inside}${owned === 'results.tsv' ? '' : `, in ${owned}/`}, which is the engine's own`
    : null;
}

/**
 * On --resume: the read-only files must be as the run found them, or the runs to come would be
 * measured against another data preparation or evaluation than the ones so far. The message
 * names what changed and the fix; null when nothing did.
 */
export function readonlyChangedSince(dir: string, start: RunStartRecord, readonly: string[]): string | null {
  const files = readonly.filter(f => f in start.readonly_hashes);
  const now = hashFiles(dir, files);
  const changed = files.filter(f => now[f] !== start.readonly_hashes[f]);
  if (!changed.length) {
    return null;
  }
  const short = (h: string) => (/^[0-9a-f]{64}$/.test(h) ? h.slice(0, 12) : h);
  const details = changed
    .map(
      f => `${changed.length > 1 ? `${f}: ` : ''}sha256 ${short(start.readonly_hashes[f])} then, ${short(now[f])} now`,
    )
    .join('; ');
  const list = changed.join(', ');
  return (
    `${list} changed since run ${start.tag} started (${details}); the results so far were measured with the old ` +
    `${changed.length > 1 ? 'files' : 'file'}: restore ${changed.length > 1 ? 'them' : 'it'} with \`git checkout ${start.base_commit.slice(0, 7)} -- ${changed.join(' ')}\` ` +
    `and commit, then --resume, or start a new run with --tag`
  );
}

/** The read-only files whose hash moved, with a reason to record. */
export function changedReadonly(dir: string, expected: Record<string, string>): string[] {
  const now = hashFiles(dir, Object.keys(expected));
  return Object.keys(expected).filter(f => now[f] !== expected[f]);
}

/** Resolves a proposal's path and checks it may be written: inside the workspace and editable. */
export function checkEditablePath(dir: string, file: string, editable: string[]): string | null {
  const abs = path.resolve(dir, file);
  const rel = path.relative(dir, abs);
  if (rel.startsWith('..') || path.isAbsolute(rel)) {
    return `${file} is outside the workspace`;
  }
  if (!editable.includes(rel.split(path.sep).join('/'))) {
    return `${rel} is not an editable file (editable: ${editable.join(', ')})`;
  }
  return null;
}

/**
 * The tag of a new run given none (src/core/journal/layout.ts's freeTag): today's, else the first
 * `<today>-<n>` that neither a journal nor a branch holds. A folder that is not a repository
 * (yet) has no branches; checkWorkspace says what is wrong with it after this.
 */
export async function freeRunTag(dir: string, base = defaultTag()): Promise<string> {
  const branches = await new Repo(dir)
    .raw(['for-each-ref', '--format=%(refname:short)', `refs/heads/${RUN_BRANCH_PREFIX}`])
    .then(out => new Set(out.split('\n').filter(Boolean)))
    .catch(() => new Set<string>());
  return freeTag(tag => branches.has(runBranch(tag)) || fs.existsSync(runPaths(dir, tag).journal), base);
}

/** The most recently active run tag in a workspace, for --resume, status and results. */
export function latestTag(dir: string): string | null {
  const root = path.join(dir, STATE_DIR);
  if (!fs.existsSync(root)) {
    return null;
  }
  let best: { tag: string; mtime: number } | null = null;
  for (const tag of fs.readdirSync(root)) {
    // A folder no tag can name (hidden, say) is no run.
    if (!validTag(tag)) continue;
    const journal = path.join(root, tag, JOURNAL_FILE);
    if (fs.existsSync(journal)) {
      const mtime = fs.statSync(journal).mtimeMs;
      if (!best || mtime > best.mtime) {
        best = { tag, mtime };
      }
    }
  }
  return best?.tag ?? null;
}
