/**
 * What the Slurm executor asks the cluster besides srun: a job's end (scontrol while slurmctld
 * remembers it, else sacct), the jobs of a workspace (squeue, by name and comment), and scancel.
 * Slurm's client commands, as a user runs them, so the cluster's own configuration (SLURM_CONF,
 * munge) applies unchanged.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import { JOB_PREFIX, jobComment } from '../../../core/config/slurm';
import { UserError } from '../../user-error';

/**
 * Runs one Slurm command: its stdout, or a UserError with its stderr and the fix (a command that
 * fails here is a cluster the engine cannot reach as configured, not a bug of the engine).
 */
export function slurmCommand(cmd: string, args: string[], timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
        const said = String(stderr).trim().split('\n').pop() || err.message;
        reject(new UserError(missing ? notFound(cmd) : `${cmd} failed: ${said}; ${UNREACHABLE_FIX}`));
      } else resolve(String(stdout));
    });
  });
}

/**
 * Refuses at once a SLURM_CONF that names no file: Slurm's commands would retry reading it for a
 * minute before they fail.
 */
export function checkSlurmConf(env: NodeJS.ProcessEnv = process.env): void {
  const conf = env.SLURM_CONF;
  if (conf !== undefined && !fs.statSync(conf, { throwIfNoEntry: false })?.isFile()) {
    throw new UserError(`SLURM_CONF names ${conf}, which is not a file; ${UNREACHABLE_FIX}`);
  }
}

/** What to do when the cluster does not answer as configured. */
export const UNREACHABLE_FIX =
  'check that the cluster answers (sinfo); for the local one: scripts/local-slurm.sh start, then eval "$(scripts/local-slurm.sh env)" (it sets SLURM_CONF)';

/** The error for a Slurm command that is not on PATH. */
export function notFound(cmd: string): string {
  return `${cmd} not found: --executor slurm runs where Slurm's commands are on PATH (a cluster's login node; scripts/local-slurm.sh start brings up a one-node cluster here)`;
}

/** How a job ended, as Slurm says. */
export interface JobEnd {
  /** JobState's first word: COMPLETED, FAILED, TIMEOUT, CANCELLED, PREEMPTED, NODE_FAIL, OUT_OF_MEMORY, … */
  state: string;
  reason: string | null;
  node: string | null;
  /** Its time limit as Slurm prints it (1:00:00). */
  timeLimit: string | null;
}

/** States that mean the job is not over yet. */
const NOT_OVER = new Set(['PENDING', 'RUNNING', 'COMPLETING', 'CONFIGURING', 'SUSPENDED', 'REQUEUED', 'RESIZING']);

/**
 * How job `id` ended: scontrol while slurmctld holds it (MinJobAge, 300 s by default), else sacct;
 * asked again for up to `waitMs` while it is still completing. Null when neither knows it.
 */
export async function jobEnd(id: string, waitMs = 10_000): Promise<JobEnd | null> {
  const until = Date.now() + waitMs;
  for (;;) {
    const end = (await fromScontrol(id)) ?? (await fromSacct(id));
    if (!end || !NOT_OVER.has(end.state) || Date.now() > until) return end;
    await new Promise(r => setTimeout(r, 200));
  }
}

async function fromScontrol(id: string): Promise<JobEnd | null> {
  let line: string;
  try {
    line = await slurmCommand('scontrol', ['show', 'job', '-o', id]);
  } catch {
    return null; // purged from slurmctld's memory, or no controller: sacct may know
  }
  // Values may hold spaces (Command=, Comment=): only the fields wanted, each a single word.
  const field = (key: string) => new RegExp(`(?:^| )${key}=(\\S+)`).exec(line)?.[1] ?? null;
  const state = field('JobState');
  if (!state) return null;
  const none = (v: string | null) => (v === null || v === 'None' || v === '(null)' ? null : v);
  return { state, reason: none(field('Reason')), node: none(field('NodeList')), timeLimit: field('TimeLimit') };
}

async function fromSacct(id: string): Promise<JobEnd | null> {
  let out: string;
  try {
    out = await slurmCommand('sacct', ['-j', id, '-X', '-n', '-P', '-o', 'State,Reason,NodeList,Timelimit']);
  } catch {
    return null;
  }
  const row = out.split('\n').find(l => l.trim());
  if (!row) return null;
  const [state, reason, node, timeLimit] = row.split('|');
  const none = (v: string | undefined) => (!v || v === 'None' || v === '(null)' ? null : v);
  // "CANCELLED by 0": the state, then who.
  return { state: state.split(' ')[0], reason: none(reason), node: none(node), timeLimit: none(timeLimit) };
}

/**
 * Why Slurm ended a job, in words, for a run that crashed because of it; null when the job ended
 * on its own (COMPLETED, FAILED: the run's own exit says more) or Slurm does not say.
 */
export function jobEndWords(id: string, end: JobEnd): string | null {
  const on = end.node ? ` on ${end.node}` : '';
  switch (end.state) {
    case 'TIMEOUT':
      return `Slurm ended job ${id}${on} at its time limit (--time ${end.timeLimit ?? '?'})`;
    case 'CANCELLED':
      return `job ${id}${on} was cancelled outside the engine (scancel, or an administrator)`;
    case 'PREEMPTED':
      return `Slurm preempted job ${id}${on} (a higher-priority job took its resources)`;
    case 'NODE_FAIL':
      return `job ${id}'s node${end.node ? ` ${end.node}` : ''} failed`;
    case 'OUT_OF_MEMORY':
      return `Slurm killed job ${id}${on} for using more memory than it asked for (slurm.mem / --mem)`;
    case 'BOOT_FAIL':
    case 'DEADLINE':
      return `Slurm ended job ${id}${on}: ${end.state}${end.reason ? ` (${end.reason})` : ''}`;
    default:
      return null;
  }
}

/** A job in the queue, as squeue lists it. */
export interface QueuedJob {
  id: string;
  name: string;
  state: string;
}

/** The engine's jobs for `workspace` that are pending or running (squeue: the user's, by name and comment). */
export async function workspaceJobs(workspace: string): Promise<QueuedJob[]> {
  const out = await slurmCommand('squeue', ['--me', '--noheader', '--format=%i|%T|%j|%k']);
  const comment = jobComment(workspace);
  const jobs: QueuedJob[] = [];
  for (const line of out.split('\n')) {
    const [id, state, name, ...rest] = line.split('|');
    // The comment is last, and may hold a "|" of the path's own.
    if (name?.startsWith(JOB_PREFIX) && rest.join('|') === comment) jobs.push({ id: id.trim(), name, state });
  }
  return jobs;
}

/** scancel of these jobs (nothing when there are none): SIGTERM, then SIGKILL after the cluster's KillWait. */
export async function cancelJobs(ids: string[]): Promise<void> {
  if (!ids.length) return;
  await slurmCommand('scancel', ids);
}
