/**
 * What several workers need from git and the machine: one worktree each, on
 * its own branch `autoresearch/<tag>-w<K>`, under the run's git-ignored
 * `.autoresearch/<tag>/worktrees/`, and one accelerator each.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunConfig } from '../../core/journal/journal';
import { WORKTREES_DIR } from '../../core/journal/layout';
import type { Executor } from '../executor/types';
import { Repo } from './git';
import type { Mutex } from '../run/mutex';
import { runPaths } from '../workspace/workspace';
import { UserError } from '../user-error';

export interface Worktree {
  /** The worker's number, 1..N. */
  k: number;
  dir: string;
  branch: string;
  repo: Repo;
}

/** Where a run's worktrees live. */
export function worktreesRoot(dir: string, tag: string): string {
  return path.join(runPaths(dir, tag).root, WORKTREES_DIR);
}

/**
 * Worktrees only hold tracked files: an editable or read-only file that git
 * does not track would be missing in every worker's folder.
 */
export async function checkWorkerFiles(repo: Repo, config: RunConfig): Promise<void> {
  const wanted = [...config.editable, ...config.readonly];
  const tracked = new Set(await repo.trackedAmong(wanted));
  const missing = wanted.filter(f => !tracked.has(f));
  if (missing.length) {
    throw new UserError(
      `with several workers every editable and read-only file must be committed (each worker runs in a git worktree): git add ${missing.join(' ')} and commit, or run with --workers 1`,
    );
  }
}

/**
 * Each worker's extra environment. The subprocess executor's worker K sees one
 * GPU: CUDA_VISIBLE_DEVICES=K-1, or the K-th entry of a CUDA_VISIBLE_DEVICES
 * list the user set; an empty one (no GPU wanted) is left alone. A kernel
 * executor's worker has its own kernel, whose environment decides.
 */
export function deviceEnvs(executors: Executor[], env: NodeJS.ProcessEnv = process.env): Array<Record<string, string>> {
  if (executors.length === 1) {
    return [{}];
  }
  const set = env.CUDA_VISIBLE_DEVICES;
  const list =
    set === undefined
      ? null
      : set
          .split(',')
          .map(s => s.trim())
          .filter(Boolean);
  const subprocesses = executors.filter(e => e.name === 'subprocess').length;
  if (list && set?.trim() !== '' && list.length < subprocesses) {
    throw new UserError(
      `--workers ${executors.length} needs one GPU per worker, but CUDA_VISIBLE_DEVICES lists ${list.length} (${set}); list ${executors.length} devices there, or lower --workers`,
    );
  }
  return executors.map((e, i): Record<string, string> => {
    if (e.name !== 'subprocess' || set?.trim() === '') {
      return {};
    }
    return { CUDA_VISIBLE_DEVICES: list ? list[i] : String(i) };
  });
}

/**
 * Fresh worktrees for workers 1..N at `commit`. Anything left under the root
 * (a killed engine's worktrees, or a run that had more workers) is removed
 * first, so a resumed run starts from clean folders whatever state they were in.
 */
export async function createWorktrees(
  main: Repo,
  root: string,
  branch: string,
  workers: number,
  commit: string,
  lock: Mutex,
): Promise<Worktree[]> {
  await removeWorktrees(main, root);
  const trees: Worktree[] = [];
  for (let k = 1; k <= workers; k++) {
    const dir = path.join(root, `w${k}`);
    const name = `${branch}-w${k}`;
    await main.addWorktree(dir, name, commit);
    trees.push({ k, dir, branch: name, repo: new Repo(dir, lock) });
  }
  return trees;
}

/** Removes every worktree under root (their branches stay, as a record of each worker's last experiment). */
export async function removeWorktrees(main: Repo, root: string): Promise<void> {
  if (fs.existsSync(root)) {
    for (const entry of fs.readdirSync(root)) {
      await main.removeWorktree(path.join(root, entry));
    }
  }
  await main.raw(['worktree', 'prune']);
}
