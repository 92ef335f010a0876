/**
 * A real `jupyter server` from the project's venv on 127.0.0.1, with a free
 * port, a known token and a temp root, for tests that talk to real kernels.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { ROOT } from './workspace';

export const VENV_JUPYTER = path.join(ROOT, '.venv', 'bin', 'jupyter');

export interface JupyterServer {
  url: string;
  token: string;
  root: string;
  /** Where kernels' connection files live (kernel-<id>.json). */
  runtimeDir: string;
  /** The server's output so far, for failure messages. */
  output(): string;
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Starts a server and resolves once its API answers; fails clearly when the venv lacks jupyter_server or ipykernel. */
export async function startJupyterServer(timeoutMs = 90_000): Promise<JupyterServer> {
  if (!fs.existsSync(VENV_JUPYTER)) {
    throw new Error(`${VENV_JUPYTER} is missing: create the venv and pip install jupyter_server ipykernel`);
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-jupyter-'));
  const root = path.join(tmp, 'root');
  const runtimeDir = path.join(tmp, 'runtime');
  fs.mkdirSync(root);
  fs.mkdirSync(runtimeDir);
  const token = randomBytes(16).toString('hex');
  const port = await freePort();
  const child: ChildProcess = spawn(
    VENV_JUPYTER,
    [
      'server',
      '--no-browser',
      '--ip=127.0.0.1',
      `--port=${port}`,
      '--port-retries=0',
      `--ServerApp.root_dir=${root}`,
      `--IdentityProvider.token=${token}`,
      ...(process.getuid?.() === 0 ? ['--allow-root'] : []),
    ],
    {
      cwd: root,
      env: { ...process.env, JUPYTER_RUNTIME_DIR: runtimeDir, JUPYTER_CONFIG_DIR: path.join(tmp, 'config') },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own group, so stop() also ends its kernels
    },
  );
  let out = '';
  child.stdout?.on('data', d => (out += d));
  child.stderr?.on('data', d => (out += d));
  let exited = false;
  child.on('exit', () => (exited = true));
  const url = `http://127.0.0.1:${port}/`;
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (exited) throw new Error(`jupyter server exited at start:\n${out}`);
    if (Date.now() > until) {
      killGroup(child.pid as number);
      throw new Error(`jupyter server did not answer within ${timeoutMs} ms:\n${out}`);
    }
    try {
      const r = await fetch(`${url}api/kernelspecs`, { headers: { Authorization: `token ${token}` } });
      if (r.ok) {
        const specs = (await r.json()) as { kernelspecs: Record<string, unknown> };
        if (!specs.kernelspecs.python3) {
          killGroup(child.pid as number);
          throw new Error('the venv has no python3 kernelspec: pip install ipykernel into .venv');
        }
        break;
      }
    } catch (e) {
      if ((e as Error).message.includes('kernelspec')) throw e;
    }
    await new Promise(r => setTimeout(r, 200));
  }
  return {
    url,
    token,
    root,
    runtimeDir,
    output: () => out,
    stop: async () => {
      killGroup(child.pid as number, 'SIGTERM');
      const t = Date.now() + 10_000;
      while (!exited && Date.now() < t) await new Promise(r => setTimeout(r, 100));
      killGroup(child.pid as number, 'SIGKILL');
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

function killGroup(pgid: number, sig: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    // already gone
  }
}

/** The pid of a kernel started by this server, found by its connection file on the command line (Linux). */
export function kernelPid(kernelId: string): number | null {
  return processWith(`kernel-${kernelId}.json`);
}

/** The pid of a process whose command line contains needle (Linux /proc), or null. */
function processWith(needle: string): number | null {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle)) return Number(entry);
    } catch {
      // the process ended while we looked
    }
  }
  return null;
}
