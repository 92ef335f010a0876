/** `autoresearch stop`: ends the engine running on a workspace, as a stop rather than a signal. */
import * as path from 'node:path';
import { STATE_DIR, STOP_FILE } from '../../core/journal/layout';
import { isEngineAlive, readEngineInfo } from '../run/engine-lock';
import { UserError } from '../user-error';
import { replaceFile } from '../workspace/workspace-files';

/** The file `autoresearch stop` writes so the engine records the end as a stop, not a signal. */
export function stopRequestFile(dir: string): string {
  return path.join(dir, STATE_DIR, STOP_FILE);
}

/** Stops the engine running on dirArg, waiting up to o.wait seconds; the exit code. */
export async function stopCommand(dirArg: string, o: { wait: number }): Promise<number> {
  const dir = path.resolve(dirArg);
  const info = readEngineInfo(dir);
  if (!info || !isEngineAlive(info)) {
    throw new UserError(`no engine is running on ${dir}`);
  }
  replaceFile(stopRequestFile(dir), String(Date.now()));
  process.kill(info.pid, 'SIGTERM');
  const until = Date.now() + o.wait * 1000;
  while (isEngineAlive(info) && Date.now() < until) {
    await new Promise(r => setTimeout(r, 100));
  }
  if (isEngineAlive(info)) {
    throw new UserError(
      `the engine (pid ${info.pid}) is still stopping after ${o.wait} s; check again with autoresearch status ${dir}`,
    );
  }
  process.stdout.write(`stopped the engine (pid ${info.pid}, run ${info.tag})\n`);
  return 0;
}
