/**
 * One engine per workspace. `.autoresearch/engine.json` names the running
 * engine (pid, tag) and the process group of the training run in progress,
 * so `autoresearch stop` can signal it and a resume after kill -9 can kill
 * an orphaned training run. Each pid comes with its identity (boot and start
 * time): a number alone is never trusted with a signal.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as z from 'zod/mini';
import { ENGINE_KINDS, type EngineKind } from '../../core/journal/layout';
import { englishMessages } from '../../core/journal/zod-english';
import type { RunKernel } from '../executor/types';
import { killCgroups } from '../executor/leftovers';
import { identityOf, isAlive, isSameProcess, ProcessIdentity } from './process-identity';
import { enginePidFile } from '../workspace/workspace';
import { UserError } from '../user-error';
import { readNoFollow, replaceFile } from '../workspace/workspace-files';

englishMessages();

const EngineInfo = z.object({
  pid: z.int(),
  tag: z.string(),
  started: z.string(),
  /** What holds the workspace: a run's loop, or a transfer study of a run; absent (a run) in older files. */
  kind: z.optional(z.enum(ENGINE_KINDS)),
  /** The engine's own identity; absent in files written before identities were recorded. */
  identity: z.optional(ProcessIdentity),
  run_pgid: z.nullable(z.int()),
  /** With several workers: the process group of each training run in progress (run_pgid is the first). */
  run_pgids: z.optional(z.array(z.int())),
  /** The kernels each worker's runs go to (kernel executor), for the next engine to clean up after a kill -9. */
  kernels: z.optional(z.array(z.object({ server: z.string(), id: z.string(), owned: z.boolean() }))),
  /** The identity of each run group's leader, by pgid: only a group whose leader still matches is killed. */
  run_identities: z.optional(z.record(z.string(), ProcessIdentity)),
  /** The cgroup folders of the training runs in progress: killed whole by the next engine, leaders gone or not. */
  run_cgroups: z.optional(z.array(z.string())),
});
export type EngineInfo = z.infer<typeof EngineInfo>;

/**
 * Whether the engine a file names is still running: the same process, not a later one that got
 * its pid. A file without an identity (an older engine's) is believed only while that pid runs
 * the engine's `run` command.
 */
export function isEngineAlive(info: EngineInfo): boolean {
  if (info.identity) return isSameProcess(info.pid, info.identity);
  if (!isAlive(info.pid)) return false;
  try {
    const argv = fs.readFileSync(`/proc/${info.pid}/cmdline`, 'utf8').split('\0');
    return argv.some(a => a.endsWith('autoresearch.cjs') || a.endsWith('main.ts')) && argv.includes('run');
  } catch {
    return true; // no /proc: as before identities, a live pid is taken for the engine
  }
}

/**
 * SIGKILLs the run groups a dead engine recorded, each only if its leader is still the process
 * recorded, and its runs' cgroups (only folders named as run guards name them).
 */
function killRecordedGroups(stale: EngineInfo): void {
  killCgroups(stale.run_cgroups ?? []);
  for (const pgid of new Set([stale.run_pgid ?? 0, ...(stale.run_pgids ?? [])])) {
    if (pgid <= 0 || !isSameProcess(pgid, stale.run_identities?.[String(pgid)])) continue;
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** The engine recorded for a workspace, whether or not it is still alive. */
export function readEngineInfo(dir: string): EngineInfo | null {
  const file = enginePidFile(dir);
  if (!fs.existsSync(file)) {
    return null;
  }
  try {
    // Not through a link nor waiting on a FIFO: `stop` must answer whatever a run left here.
    const parsed = EngineInfo.safeParse(JSON.parse(readNoFollow(file).toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null; // unreadable or half-written: treated as no engine
  }
}

function write(dir: string, info: EngineInfo): void {
  const file = enginePidFile(dir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  replaceFile(file, JSON.stringify(info));
}

/** Refuses when another live engine holds the workspace. */
export function assertNoOtherEngine(dir: string): void {
  const other = readEngineInfo(dir);
  if (other && other.pid !== process.pid && isEngineAlive(other)) {
    throw new UserError(
      `an engine is already running on ${dir} (pid ${other.pid}, tag ${other.tag}); stop it with: autoresearch stop ${dir}`,
    );
  }
}

/**
 * Claims the workspace with an exclusive create, so two engines starting at once cannot both
 * win. A dead engine's claim is taken over, after killing the training run it left behind;
 * the kernels its runs went to are returned for the executors to reclaim.
 */
export function acquireEngineLock(dir: string, tag: string, kind: EngineKind = 'run'): RunKernel[] {
  const file = enginePidFile(dir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Kernels a dead engine's runs went to: only the executor can reach them (see Executor.reclaim).
  const left: RunKernel[] = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(file, 'wx');
      const identity = identityOf(process.pid) ?? undefined;
      fs.writeSync(
        fd,
        JSON.stringify({
          pid: process.pid,
          tag,
          started: new Date().toISOString(),
          kind,
          identity,
          run_pgid: null,
        } satisfies EngineInfo),
      );
      fs.closeSync(fd);
      return left;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') {
        throw e;
      }
    }
    assertNoOtherEngine(dir);
    const stale = readEngineInfo(dir);
    left.push(...(stale?.kernels ?? []));
    if (stale) killRecordedGroups(stale);
    fs.rmSync(file, { force: true });
  }
  throw new UserError(`could not claim ${file}; another engine may be starting — try again`);
}

/** Each worker's training run in progress (its groups, its cgroups), by workspace and worker number (this process's own). */
const groupsByDir = new Map<string, Map<number, { pgids: number[]; cgroups: string[] }>>();

/** The identities of the groups in `pgids`, read now (their leaders have just been started). */
function identities(pgids: number[]): Record<string, ProcessIdentity> {
  const out: Record<string, ProcessIdentity> = {};
  for (const pgid of pgids) {
    const id = identityOf(pgid);
    if (id) out[String(pgid)] = id;
  }
  return out;
}

/**
 * Records the process groups of the training run in progress (the guard's, then the command's;
 * null when none), each with its leader's identity, and its cgroups; `worker` with several workers.
 */
export function setRunningGroup(dir: string, pgids: number[] | null, worker = 1, cgroups: string[] = []): void {
  const info = readEngineInfo(dir);
  if (!info || info.pid !== process.pid) {
    return;
  }
  const groups = groupsByDir.get(dir) ?? new Map<number, { pgids: number[]; cgroups: string[] }>();
  groupsByDir.set(dir, groups);
  if (pgids === null) groups.delete(worker);
  else groups.set(worker, { pgids, cgroups });
  const all = [...groups.values()].flatMap(g => g.pgids);
  const run_cgroups = [...groups.values()].flatMap(g => g.cgroups);
  write(dir, { ...info, run_pgid: all[0] ?? null, run_pgids: all, run_identities: identities(all), run_cgroups });
}

const kernelsByDir = new Map<string, Map<number, RunKernel>>();

/** Records the kernel worker `worker`'s runs go to (kernel executor). */
export function setRunningKernel(dir: string, kernel: RunKernel, worker = 1): void {
  const info = readEngineInfo(dir);
  if (!info || info.pid !== process.pid) {
    return;
  }
  const kernels = kernelsByDir.get(dir) ?? new Map<number, RunKernel>();
  kernelsByDir.set(dir, kernels);
  const known = kernels.get(worker);
  if (known && known.id === kernel.id && known.server === kernel.server) {
    return; // the same kernel as the last run's: nothing to write
  }
  kernels.set(worker, kernel);
  write(dir, { ...info, kernels: [...kernels.values()] });
}

/** Gives the workspace up. */
export function releaseEngineLock(dir: string): void {
  kernelsByDir.delete(dir);
  groupsByDir.delete(dir);
  const info = readEngineInfo(dir);
  if (info && info.pid === process.pid) {
    fs.rmSync(enginePidFile(dir), { force: true });
  }
}
