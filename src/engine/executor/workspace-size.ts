/**
 * The size of a workspace, which sets a run's default file size limit (src/core/config/limits.ts).
 * Measured once per engine and folder, not per run: a walk costs a few ms per thousand files.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Not the workspace's content: git's history and the engine's state (logs, worktrees). */
const SKIP = new Set(['.git', '.autoresearch']);
/** Past this many entries the walk stops: the size so far is enough to set a limit by. */
const MAX_ENTRIES = 100_000;

const measured = new Map<string, number>();

/** Bytes in the regular files under dir (links not followed; .git and .autoresearch left out), measured once. */
export function workspaceBytes(dir: string): number {
  let bytes = measured.get(dir);
  if (bytes === undefined) {
    bytes = walk(dir);
    measured.set(dir, bytes);
  }
  return bytes;
}

function walk(root: string): number {
  let bytes = 0;
  let entries = 0;
  const todo = [root];
  while (todo.length && entries < MAX_ENTRIES) {
    const dir = todo.pop() as string;
    let names: fs.Dirent[];
    try {
      names = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      continue; // unreadable, or gone meanwhile: it adds nothing
    }
    for (const d of names) {
      entries++;
      const full = path.join(dir, d.name);
      if (d.isDirectory()) {
        if (!(dir === root && SKIP.has(d.name))) todo.push(full);
      } else if (d.isFile()) {
        try {
          bytes += fs.lstatSync(full).size;
        } catch {
          // gone meanwhile
        }
      }
    }
  }
  return bytes;
}
