/**
 * Where the workers work, and which of them takes what: one worker works in the workspace folder
 * itself; several work each in a git worktree of its own (its own branch, its own executor), so
 * the others train while one waits for a proposal. An experiment a killed engine left in flight
 * goes back to the worker that ran it, when that worker still exists.
 */
import type { Repo } from '../git/git';
import { createWorktrees, removeWorktrees, worktreesRoot } from '../git/worktrees';
import type { Mutex } from './mutex';
import type { Continuation } from './resume';

/** Where one worker works: the workspace folder itself (one worker), or its worktree. */
export interface Lane {
  k: number;
  dir: string;
  repo: Repo;
  /** When its previous run ended, for idle_s. */
  lastRunEnd: number;
}

interface LanePlace {
  dir: string;
  tag: string;
  branch: string;
  /** How many workers. */
  workers: number;
}

/** The lanes of a run: the folder itself for one worker; for several, a worktree each, starting at `start()`. */
export async function openLanes(
  main: Repo,
  at: LanePlace,
  start: () => Promise<string>,
  gitLock: Mutex,
): Promise<Lane[]> {
  if (at.workers === 1) return [{ k: 1, dir: at.dir, repo: main, lastRunEnd: Date.now() }];
  const root = worktreesRoot(at.dir, at.tag);
  const trees = await createWorktrees(main, root, at.branch, at.workers, await start(), gitLock);
  return trees.map(t => ({ k: t.k, dir: t.dir, repo: t.repo, lastRunEnd: Date.now() }));
}

/** Removes several workers' worktrees at the run's end (one worker has none). */
export async function closeLanes(main: Repo, at: LanePlace): Promise<void> {
  if (at.workers > 1) await removeWorktrees(main, worktreesRoot(at.dir, at.tag));
}

/** Which continuation a lane takes up (an index into `resumed`, or -1): its own, one of no worker's, or one of a worker that is gone. */
export function resumedFor(resumed: readonly Continuation[], lane: Lane, workers: number): number {
  return resumed.findIndex(
    c => workers === 1 || c.start.worker === undefined || c.start.worker === lane.k || c.start.worker > workers,
  );
}
