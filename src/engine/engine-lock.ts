/**
 * One engine per workspace. `.autoresearch/engine.json` names the running
 * engine (pid, tag) and the process group of the training run in progress,
 * so `autoresearch stop` can signal it and a resume after kill -9 can kill
 * an orphaned training run.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { enginePidFile, UserError } from './workspace';

const EngineInfo = z.object({
  pid: z.number().int(),
  tag: z.string(),
  started: z.string(),
  run_pgid: z.number().int().nullable()
});
export type EngineInfo = z.infer<typeof EngineInfo>;

/** Whether a process exists. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The engine recorded for a workspace, whether or not it is still alive. */
export function readEngineInfo(dir: string): EngineInfo | null {
  const file = enginePidFile(dir);
  if (!fs.existsSync(file)) {
    return null;
  }
  const parsed = EngineInfo.safeParse(JSON.parse(fs.readFileSync(file, 'utf8') || 'null'));
  return parsed.success ? parsed.data : null;
}

function write(dir: string, info: EngineInfo): void {
  const file = enginePidFile(dir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file + '.tmp', JSON.stringify(info));
  fs.renameSync(file + '.tmp', file);
}

/** Claims the workspace; refuses when another live engine holds it. Kills a dead engine's orphaned run. */
export function acquireEngineLock(dir: string, tag: string): void {
  const other = readEngineInfo(dir);
  if (other && other.pid !== process.pid && isAlive(other.pid)) {
    throw new UserError(`an engine is already running on ${dir} (pid ${other.pid}, tag ${other.tag}); stop it with: autoresearch stop ${dir}`);
  }
  if (other?.run_pgid) {
    try {
      process.kill(-other.run_pgid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  write(dir, { pid: process.pid, tag, started: new Date().toISOString(), run_pgid: null });
}

/** Records the process group of the training run in progress (null when none). */
export function setRunningGroup(dir: string, pgid: number | null): void {
  const info = readEngineInfo(dir);
  if (info && info.pid === process.pid) {
    write(dir, { ...info, run_pgid: pgid });
  }
}

/** Gives the workspace up. */
export function releaseEngineLock(dir: string): void {
  const info = readEngineInfo(dir);
  if (info && info.pid === process.pid) {
    fs.rmSync(enginePidFile(dir), { force: true });
  }
}
