/**
 * The real one-node Slurm cluster of scripts/local-slurm.sh, for tests. `ensureLocalSlurm` starts it at
 * most once per vitest worker; parallel workers calling it at once are serialised by the script's own
 * flock on its state folder, and a start that finds it up returns at once. The cluster is left running
 * after the tests, for the next file and the next run (`scripts/local-slurm.sh stop` ends it).
 *
 * `lockSlurmNode` is for test files that need the node to themselves: the node has few CPUs, and a test
 * that preempts or fills them would end or delay another file's jobs if both ran at once.
 */
import { execFile, spawn } from 'node:child_process';
import * as path from 'node:path';
import { ROOT } from './workspace';

export const LOCAL_SLURM = path.join(ROOT, 'scripts', 'local-slurm.sh');

export interface LocalSlurm {
  /** This process's environment plus what Slurm's commands need (SLURM_CONF). */
  env: Record<string, string>;
  /** The cluster's state folder: configuration, and every daemon's log under log/. */
  dir: string;
}

const DIR = process.env.AUTORESEARCH_SLURM_DIR || '/tmp/autoresearch-slurm';
// A cold start installs Debian's packages first.
const START_TIMEOUT_MS = 600_000;

let started: Promise<LocalSlurm> | undefined;

/** Starts the local Slurm cluster unless it is up (once per vitest worker); resolves to the environment to run srun, sacct, … with. */
export function ensureLocalSlurm(): Promise<LocalSlurm> {
  started ??= start().catch(e => {
    started = undefined;
    throw e;
  });
  return started;
}

async function start(): Promise<LocalSlurm> {
  await script('start', START_TIMEOUT_MS);
  const out = await script('env', 10_000);
  const env: Record<string, string> = { ...(process.env as Record<string, string>) };
  for (const m of out.matchAll(/^export ([A-Z_]+)=(.*)$/gm)) env[m[1]] = m[2];
  if (!env.SLURM_CONF) throw new Error(`scripts/local-slurm.sh env printed no SLURM_CONF:\n${out}`);
  return { env, dir: DIR };
}

function script(command: string, timeout: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      LOCAL_SLURM,
      [command],
      { env: { ...process.env, AUTORESEARCH_SLURM_DIR: DIR }, timeout },
      (error, stdout, stderr) => {
        if (error) {
          reject(
            new Error(
              `scripts/local-slurm.sh ${command} failed (${error.message.split('\n')[0]}); it needs root or sudo and Debian's slurm packages:\n${stdout}${stderr}`,
            ),
          );
        } else resolve(stdout);
      },
    );
  });
}

/**
 * Takes the whole node for this test file until the returned function is called: an flock held by a
 * child process, so a test process that dies releases it with it (no stale lock to clean up).
 */
export async function lockSlurmNode(timeoutMs = 600_000): Promise<() => void> {
  const lock = spawn(
    'flock',
    ['-w', String(Math.ceil(timeoutMs / 1000)), `${DIR}/node.lock`, 'sh', '-c', 'echo locked; exec cat'],
    {
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let out = '';
  await new Promise<void>((resolve, reject) => {
    lock.stdout.on('data', d => {
      out += d;
      if (out.includes('locked')) resolve();
    });
    lock.stderr.on('data', d => (out += d));
    lock.on('error', reject);
    lock.on('exit', code => reject(new Error(`could not lock ${DIR}/node.lock (flock exited ${code}): ${out}`)));
  });
  return () => lock.stdin.end();
}
