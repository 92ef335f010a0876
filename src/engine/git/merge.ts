/**
 * Three-way merge of file contents with `git merge-file`: re-applies a proposal
 * drafted against an older best onto the new best, the way git would rebase it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { exec } from './exec';
import { guardedEnv } from './git-guard';

export type MergeResult = { ok: true; files: Record<string, string> } | { ok: false; conflicts: string[] };

/**
 * Merges `theirs` (a draft made against `base`) onto `ours` (the new best).
 * Files absent from `theirs` are taken from `ours`.
 */
export async function mergeFiles(
  base: Record<string, string>,
  ours: Record<string, string>,
  theirs: Record<string, string>,
): Promise<MergeResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-merge-'));
  try {
    const merged: Record<string, string> = {};
    const conflicts: string[] = [];
    for (const [file, draft] of Object.entries(theirs)) {
      const b = base[file] ?? '';
      const o = ours[file] ?? b;
      if (o === b) {
        merged[file] = draft; // only the draft changed it
        continue;
      }
      if (draft === b) {
        merged[file] = o; // only the best moved
        continue;
      }
      const result = await mergeOne(dir, file, b, o, draft);
      if (result === null) {
        conflicts.push(file);
      } else {
        merged[file] = result;
      }
    }
    return conflicts.length ? { ok: false, conflicts } : { ok: true, files: merged };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The merged text, or null on a conflict. */
function mergeOne(dir: string, file: string, base: string, ours: string, theirs: string): Promise<string | null> {
  const safe = file.replace(/[^\w.-]+/g, '_');
  const paths = ['ours', 'base', 'theirs'].map(k => path.join(dir, `${k}-${safe}`));
  [ours, base, theirs].forEach((text, i) => fs.writeFileSync(paths[i], text));
  // Exit status: 0 clean, >0 the number of conflicts, <0 (255 here) an error.
  return exec('git', ['merge-file', '-p', ...paths], { cwd: dir, env: guardedEnv() }).then(r => {
    if (r.code === 0) return r.stdout;
    if (r.code !== null && r.code > 0 && r.code < 128) return null;
    throw new Error(`git merge-file failed on ${file}: ${r.stderr.trim() || `exit code ${r.code}`}`);
  });
}
