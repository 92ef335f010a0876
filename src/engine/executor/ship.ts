/**
 * Shipping a workspace to a kernel that cannot see it: the git-tracked files,
 * only those the kernel's copy lacks, to a folder keyed by the run's cwd (so
 * workers with their own worktrees, and several engines, never share one).
 * Untracked files (results.tsv, .autoresearch/) stay on the engine's side.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Kernel } from '@jupyterlab/services';
import { Repo } from '../git/git';
import { callKernel } from './kernel-call';
import { shipCode, type ShipPart } from './ship-code';

/** Raw bytes per execute request: base64 makes it a third larger, well under the servers' 10 MiB websocket limit. */
export const SHIP_CHUNK_BYTES = 3 * 1024 * 1024;

/** The kernel-side folder's name for a cwd: readable, and unique per engine host and path. */
export function shipKey(cwd: string): string {
  const name =
    path
      .basename(cwd)
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 40) || 'workspace';
  const digest = createHash('sha256')
    .update(`${os.hostname()}\0${path.resolve(cwd)}`)
    .digest('hex')
    .slice(0, 16);
  return `${name}-${digest}`;
}

/** path → [mode, git blob id] of the tracked files as they are on disk now. */
export async function trackedFiles(cwd: string): Promise<Record<string, [string, string]>> {
  // Through the engine's git layer: nothing a run planted in .git (fsmonitor, filters) runs here.
  const repo = new Repo(cwd);
  const staged = await repo.raw(['ls-files', '--stage', '-z']);
  const files: Record<string, [string, string]> = {};
  for (const entry of staged.split('\0')) {
    const m = /^(\d{6}) ([0-9a-f]+) \d\t(.+)$/s.exec(entry);
    // 160000 is a submodule: its files are another repository's, not shipped.
    if (m && m[1] !== '160000') files[m[3]] = [m[1], m[2]];
  }
  // Files edited since they were staged: their blob is what is on disk, not what the index says.
  const dirty = (await repo.raw(['diff-files', '--name-only', '-z'])).split('\0').filter(p => p && files[p]);
  for (const p of dirty) {
    const abs = path.join(cwd, p);
    if (!fs.existsSync(abs) && !isLink(abs)) {
      delete files[p]; // deleted on disk: the kernel's copy goes too
      continue;
    }
    const mode = fileMode(abs);
    files[p] = [mode, blobId(mode === '120000' ? Buffer.from(fs.readlinkSync(abs)) : fs.readFileSync(abs))];
  }
  return files;
}

export interface ShipResult {
  /** The folder on the kernel's side that the command runs in. */
  root: string;
  host: string;
  sent: number;
  bytes: number;
  removed: number;
}

/** Brings the kernel's copy of the workspace up to date; returns where it is. */
export async function shipWorkspace(
  kernel: Kernel.IKernelConnection,
  cwd: string,
  timeoutMs: number,
): Promise<ShipResult> {
  const files = await trackedFiles(cwd);
  const key = shipKey(cwd);
  const plan = await callKernel<{ root: string; host: string; need: string[]; removed: number }>(
    kernel,
    shipCode('plan', { key, files }),
    timeoutMs,
  );
  let batch: ShipPart[] = [];
  let batchBytes = 0;
  let bytes = 0;
  const flush = async () => {
    if (!batch.length) return;
    await callKernel(kernel, shipCode('write', { key, files: batch }), timeoutMs);
    batch = [];
    batchBytes = 0;
  };
  for (const rel of plan.need) {
    const [mode, blob] = files[rel];
    const abs = path.join(cwd, rel);
    const data = mode === '120000' ? Buffer.from(fs.readlinkSync(abs)) : fs.readFileSync(abs);
    bytes += data.length;
    for (let offset = 0; offset === 0 || offset < data.length; offset += SHIP_CHUNK_BYTES) {
      const part = data.subarray(offset, offset + SHIP_CHUNK_BYTES);
      if (batchBytes + part.length > SHIP_CHUNK_BYTES) await flush();
      batch.push({
        path: rel,
        mode,
        blob,
        offset,
        last: offset + SHIP_CHUNK_BYTES >= data.length,
        data: part.toString('base64'),
      });
      batchBytes += part.length;
    }
  }
  await flush();
  return { root: plan.root, host: plan.host, sent: plan.need.length, bytes, removed: plan.removed };
}

/** Whether the kernel reads the engine's files at the same path: it reads back a nonce file written under `<cwd>/.autoresearch/`. */
export async function sharesFilesystem(
  kernel: Kernel.IKernelConnection,
  cwd: string,
  timeoutMs: number,
): Promise<boolean> {
  const token = randomBytes(16).toString('hex');
  const dir = path.join(cwd, '.autoresearch');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `probe-${token}`);
  fs.writeFileSync(file, token);
  try {
    const answer = await callKernel<{ shared: boolean }>(kernel, shipCode('probe', { path: file, token }), timeoutMs);
    return answer.shared;
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/** Git's blob id of some bytes: sha1 of "blob <size>", a NUL, then the bytes. */
function blobId(data: Buffer): string {
  return createHash('sha1').update(`blob ${data.length}\0`).update(data).digest('hex');
}

function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

function fileMode(p: string): string {
  const st = fs.lstatSync(p);
  if (st.isSymbolicLink()) return '120000';
  return st.mode & 0o111 ? '100755' : '100644';
}
