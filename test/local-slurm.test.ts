/**
 * The one-node Slurm cluster of scripts/local-slurm.sh, for real: srun's output comes back, a finished
 * job shows in sacct under its name, scancel ends a running job as CANCELLED, and a job in the `urgent`
 * partition preempts a `debug` job holding the node's CPUs, which sacct records as PREEMPTED.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLocalSlurm, lockSlurmNode } from './helpers/local-slurm';

let env: Record<string, string>;
let release: (() => void) | undefined;
/** Names unique to this run, so sacct's history of earlier runs cannot answer for this one. */
const RUN = `ar-test-${process.pid}-${Date.now().toString(36)}`;

beforeAll(async () => {
  ({ env } = await ensureLocalSlurm());
  // The preemption test takes every CPU of the node: no other test file's jobs may run meanwhile.
  release = await lockSlurmNode();
}, 900_000);

afterAll(() => release?.());

/** Runs a Slurm command to its end; resolves to its stdout, rejects with its stderr (in execFile's message). */
function slurm(cmd: string, args: string[], timeout = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { env, timeout }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
  });
}

interface Started {
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** An srun left running in the background. */
function startSrun(args: string[]): Started {
  const child = spawn('srun', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)));
  return { child, exited };
}

async function poll<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise(r => setTimeout(r, 100));
  }
}

/** A job's sacct row (the allocation, not its steps) once it has one in the given state. */
async function sacctRow(name: string, state: string): Promise<Record<string, string>> {
  const fields = ['JobID', 'JobName', 'Account', 'Partition', 'State', 'Submit', 'Start', 'End', 'ExitCode', 'Reason'];
  return poll(`sacct to show job ${name} ${state}`, async () => {
    const out = await slurm('sacct', ['-X', '-n', '-P', '--name', name, '-o', fields.join(',')]);
    const row = out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(line => Object.fromEntries(line.split('|').map((v, i) => [fields[i], v])));
    return row.find(r => r.State.startsWith(state));
  });
}

/** Waits until squeue lists the job as running. */
function running(name: string): Promise<string> {
  return poll(`job ${name} to run`, async () => {
    const out = (await slurm('squeue', ['-h', '-n', name, '-t', 'running', '-o', '%A'])).trim();
    return out || undefined;
  });
}

describe('local Slurm cluster', () => {
  it('runs srun and hands back its output', async () => {
    expect(await slurm('srun', ['-N1', 'echo', 'hi'])).toBe('hi\n');
  });

  it('records a finished job in sacct under its name and account, with its times and exit code', async () => {
    const name = `${RUN}-done`;
    await slurm('srun', ['-J', name, 'sh', '-c', 'exit 0']);
    const row = await sacctRow(name, 'COMPLETED');
    expect(row).toMatchObject({
      JobName: name,
      Account: 'autoresearch',
      Partition: 'debug',
      State: 'COMPLETED',
      ExitCode: '0:0',
    });
    for (const field of ['Submit', 'Start', 'End']) expect(row[field]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/);
  });

  it('records a failing job as FAILED with its exit code', async () => {
    const name = `${RUN}-fail`;
    await expect(slurm('srun', ['-J', name, 'sh', '-c', 'exit 3'])).rejects.toThrow(/Exited with exit code 3/);
    expect(await sacctRow(name, 'FAILED')).toMatchObject({ State: 'FAILED', ExitCode: '3:0' });
  });

  it('ends a running job on scancel, and sacct says CANCELLED', async () => {
    const name = `${RUN}-cancel`;
    const job = startSrun(['-J', name, 'sleep', '60']);
    const id = await running(name);
    await slurm('scancel', [id]);
    const code = await Promise.race([job.exited, new Promise(r => setTimeout(() => r('still running'), 20_000))]);
    expect(code).not.toBe('still running');
    expect(code).not.toBe(0);
    expect((await sacctRow(name, 'CANCELLED')).JobID).toBe(id);
  });

  it('preempts a debug job holding every CPU when an urgent job needs them, and sacct says PREEMPTED', async () => {
    const cpus = (await slurm('sinfo', ['-h', '-N', '-o', '%c'])).trim().split('\n')[0];
    expect(Number(cpus)).toBeGreaterThan(0);
    const low = `${RUN}-low`;
    const high = `${RUN}-high`;
    const lowJob = startSrun(['-p', 'debug', '-c', cpus, '-J', low, 'sleep', '60']);
    await running(low);
    const t0 = Date.now();
    await slurm('srun', ['-p', 'urgent', '-c', cpus, '-J', high, 'true']);
    const urgentDone = Date.now() - t0;
    const code = await Promise.race([lowJob.exited, new Promise(r => setTimeout(() => r('still running'), 20_000))]);
    const lowEnded = Date.now() - t0;
    expect(code).not.toBe('still running');
    expect(await sacctRow(low, 'PREEMPTED')).toMatchObject({ Partition: 'debug', State: 'PREEMPTED' });
    expect(await sacctRow(high, 'COMPLETED')).toMatchObject({ Partition: 'urgent', State: 'COMPLETED' });
    // The debug job slept 60 s: ending within 20 s is the preemption, not the job's own end.
    console.info(
      `preemption: urgent job done ${urgentDone} ms after submission, preempted srun ended at ${lowEnded} ms`,
    );
  });
});
