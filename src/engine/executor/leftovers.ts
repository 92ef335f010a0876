/**
 * What ends a run whose guard is gone (killed by the run, or with a dead engine): its cgroups,
 * and every process still holding its output. The guard names both when the command starts
 * (run-guard.py's spawn report); engine.json keeps the cgroups for an engine that resumes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** How run-guard.py names each run's cgroup folder (its CGROUP_PREFIX). */
const CGROUP_PREFIX = 'autoresearch-run-';

/** Where cgroup hierarchies are mounted here (from /proc/self/mountinfo). */
function cgroupMounts(): string[] {
  let text: string;
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    const type = right?.split(' ')[0];
    const point = left?.split(' ')[4];
    if (point && (type === 'cgroup' || type === 'cgroup2')) out.push(point.replace(/\\040/g, ' '));
  }
  return out;
}

/**
 * Whether `dir` is a run's cgroup folder: absolute, under a cgroup mount and named as the guard
 * names them. Anything else a file claims (a forged engine.json) is never killed or removed.
 */
export function isRunCgroup(dir: string): boolean {
  if (!path.isAbsolute(dir) || path.normalize(dir) !== dir || !path.basename(dir).startsWith(CGROUP_PREFIX)) {
    return false;
  }
  return cgroupMounts().some(m => dir.startsWith(m.endsWith('/') ? m : `${m}/`));
}

/** SIGKILLs everything in the run's cgroups (cgroup.kill where the kernel has it), then removes them; how many folders were found. */
export function killCgroups(dirs: string[]): number {
  const found = dirs.filter(d => isRunCgroup(d) && fs.existsSync(d));
  for (const dir of found) {
    try {
      fs.writeFileSync(path.join(dir, 'cgroup.kill'), '1');
      continue;
    } catch {
      // cgroup v1 (the pids hierarchy), or a kernel before 5.14: one process at a time.
    }
    for (let round = 0; round < 50; round++) {
      const pids = readPids(dir);
      if (!pids.length) break;
      for (const pid of pids) signal(pid);
    }
  }
  removeCgroups(found);
  return found.length;
}

function readPids(dir: string): number[] {
  try {
    return fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Removes emptied cgroup folders, waiting a second at most for their killed processes to exit. */
function removeCgroups(dirs: string[]): void {
  const until = Date.now() + 1000;
  for (const dir of dirs) {
    for (;;) {
      try {
        fs.rmdirSync(dir);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' || Date.now() > until) break;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10); // EBUSY: not empty yet
      }
    }
  }
}

/**
 * SIGKILLs every process (but this one) holding one of `links` open, as /proc/<pid>/fd shows them
 * (`pipe:[inode]`, `socket:[inode]`: the run's stdout and stderr); how many there were.
 */
export function killHolders(links: string[]): number {
  if (!links.length) return 0;
  const wanted = new Set(links);
  let killed = 0;
  // A second look finds what was started meanwhile by a holder the first one killed.
  for (let round = 0; round < 3; round++) {
    const holders = processes().filter(pid => pid !== process.pid && holds(pid, wanted));
    if (!holders.length) break;
    for (const pid of holders) signal(pid);
    killed += holders.length;
  }
  return killed;
}

function processes(): number[] {
  try {
    return fs
      .readdirSync('/proc')
      .filter(n => /^\d+$/.test(n))
      .map(Number);
  } catch {
    return []; // no /proc: nothing to look through
  }
}

function holds(pid: number, wanted: Set<string>): boolean {
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false; // gone, or not ours to look at
  }
  return fds.some(fd => {
    try {
      return wanted.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      return false;
    }
  });
}

function signal(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
