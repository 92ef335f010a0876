/**
 * What tells one process from another that got the same number later: the boot it started in
 * and its start time. A pid (or a process group's leader) recorded in `.autoresearch/engine.json`
 * is signalled only while its identity still matches, so a stale or forged file (after a reboot
 * the numbers are reused) cannot make an engine, or the server's stop, kill an unrelated process.
 * The server reads the same two fields (jupyter_server_ext/jupyterlab_autoresearch/supervise/procid.py).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as z from 'zod/mini';
import { englishMessages } from '../../core/journal/zod-english';

englishMessages();

export const ProcessIdentity = z.object({
  /** /proc/sys/kernel/random/boot_id; '' where the system has none (macOS). */
  boot: z.string(),
  /** Field 22 of /proc/<pid>/stat (clock ticks since boot), or what `ps -o lstart=` prints. */
  start: z.string(),
});
export type ProcessIdentity = z.infer<typeof ProcessIdentity>;

let bootId: string | undefined;

function boot(): string {
  if (bootId === undefined) {
    try {
      bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      bootId = '';
    }
  }
  return bootId;
}

/** The identity of a live process; null when it is gone or a zombie (it has ended, only not been reaped). */
export function identityOf(pid: number): ProcessIdentity | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' && fs.existsSync('/proc/self/stat')) return null;
    return identityFromPs(pid);
  }
  // The command name (field 2) may hold spaces and parentheses: fields are counted after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (fields[0] === 'Z' || fields[0] === 'X') return null;
  return { boot: boot(), start: fields[19] };
}

function identityFromPs(pid: number): ProcessIdentity | null {
  try {
    // LC_ALL=C: the server reads the same field (procid.py), and day and month names follow the locale.
    const out = execFileSync('ps', ['-o', 'stat=,lstart=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, LC_ALL: 'C' },
    }).trim();
    if (!out || out.startsWith('Z')) return null;
    return { boot: '', start: out.split(/\s+/).slice(1).join(' ') };
  } catch {
    return null; // ps exits 1 for a pid it does not know
  }
}

/** Whether a process exists and has not ended (a zombie has). */
export function isAlive(pid: number): boolean {
  return identityOf(pid) !== null;
}

/** Whether `pid` is still the very process `recorded` describes. */
export function isSameProcess(pid: number, recorded: ProcessIdentity | undefined | null): boolean {
  if (!recorded) return false;
  const now = identityOf(pid);
  return now !== null && now.boot === recorded.boot && now.start === recorded.start;
}
