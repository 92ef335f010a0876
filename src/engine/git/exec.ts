/**
 * Runs a short helper command (git, the syntax check) and collects its output.
 * Each runs in a process group of its own: Ctrl-C in a terminal signals the
 * whole foreground group, and a git command killed mid-way would turn a clean
 * stop into a crash. The engine handles the signal and finishes its git work.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { missingProgram, UserError } from '../user-error';

export interface ExecResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Output past this many bytes (each stream) fails the command, as execFile's maxBuffer does. */
  maxBuffer?: number;
}

/** Runs `file args…` to completion; rejects only when it cannot start (ENOENT) or floods its output. */
export async function exec(file: string, args: string[], opts: ExecOptions = {}): Promise<ExecResult> {
  // Between fork and setsid the child is still in our group: a group signal landing in that
  // instant kills it before the command itself has run, so running it again is safe.
  for (let attempt = 0; ; attempt++) {
    const r = await execOnce(file, args, opts);
    if (!(r.signal === 'SIGINT' || r.signal === 'SIGTERM') || attempt >= 2) {
      return r;
    }
  }
}

function execOnce(file: string, args: string[], opts: ExecOptions): Promise<ExecResult> {
  const maxBuffer = opts.maxBuffer ?? 64 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: opts.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const collect = (into: Buffer[]) => (b: Buffer) => {
      size += b.length;
      if (size > maxBuffer) {
        child.kill('SIGKILL');
        reject(new Error(`${file} ${args[0] ?? ''}: output over ${maxBuffer} bytes`));
        return;
      }
      into.push(b);
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    child.on('error', (e: NodeJS.ErrnoException) => {
      // spawn says ENOENT both for a missing program and for a missing working folder.
      if (e.code !== 'ENOENT') return reject(e);
      if (opts.cwd !== undefined && !fs.existsSync(opts.cwd)) {
        return reject(new UserError(`cannot run ${file}: the folder ${opts.cwd} does not exist`));
      }
      reject(missingProgram(file));
    });
    child.on('close', (code, signal) =>
      resolve({
        code,
        signal,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      }),
    );
  });
}
