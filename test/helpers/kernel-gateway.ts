/**
 * A remote kernel host for tests, all on 127.0.0.1: Jupyter Kernel Gateway or
 * Enterprise Gateway, in its own mount namespace where a tmpfs covers a folder
 * (so it and the kernels it starts cannot see what is under it), and a
 * `jupyter server` whose kernels live on that gateway (GatewayClient.url).
 *
 * Why a mount namespace and not another user: the venv's interpreter links
 * into root's 0700 home on these machines, so an unprivileged user cannot run
 * it; `unshare -m` needs root (CAP_SYS_ADMIN), which the tests have. Where it
 * is missing the helper throws: the test fails, it does not skip.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort, VENV_JUPYTER } from './jupyter-server';
import { makeWorkspace, ROOT, type WorkspaceFiles } from './workspace';

const VENV_PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
/** Enterprise Gateway needs jupyter_server < 2, so it has a venv of its own (Makefile, pyproject.toml). */
const EG_PYTHON = path.join(ROOT, '.venv-eg', 'bin', 'python');

export interface Service {
  url: string;
  token: string;
  output(): string;
  stop(): Promise<void>;
}

export interface Gateway extends Service {
  /** The folder the gateway and its kernels cannot see. */
  hidden: string;
  /** HOME of the gateway's kernels: the shipped workspaces and the prepared-data cache live under it. */
  home: string;
}

/** The gateways the tests run: Kernel Gateway (jupyter_kernel_gateway) and Enterprise Gateway (its local process proxy). */
export type GatewayKind = 'kernel' | 'enterprise';

// What a gateway's kernels inherit from its environment: HOME keeps their files in the temp home.
const INHERITED = 'HOME,PATH,LANG,AUTORESEARCH_CACHE';

interface KindSpec {
  python: string;
  module: string;
  what: string;
  missing: string;
  /** The gateway's own flags, after the module. */
  args(port: number, token: string): string[];
  env: Record<string, string>;
  /** Writes what the gateway needs under tmp before it starts (a kernelspec); returns extra env. */
  prepare?(tmp: string): Record<string, string>;
}

const KINDS: Record<GatewayKind, KindSpec> = {
  kernel: {
    python: VENV_PYTHON,
    module: 'kernel_gateway',
    what: 'Kernel Gateway',
    missing: 'jupyter_kernel_gateway is not installed in .venv: run make setup (it is in the test extra)',
    args: (port, token) => [
      '--KernelGatewayApp.ip=127.0.0.1',
      `--KernelGatewayApp.port=${port}`,
      '--KernelGatewayApp.port_retries=0',
      `--KernelGatewayApp.auth_token=${token}`,
      '--JupyterWebsocketPersonality.list_kernels=True',
    ],
    env: { KG_ENV_PROCESS_WHITELIST: INHERITED },
  },
  enterprise: {
    python: EG_PYTHON,
    module: 'enterprise_gateway',
    what: 'Enterprise Gateway',
    missing:
      "Enterprise Gateway is not installed in .venv-eg: run make setup (pyproject.toml's enterprise-gateway group; it needs jupyter_server < 2, so not in .venv)",
    args: (port, token) => [
      '--EnterpriseGatewayApp.ip=127.0.0.1',
      `--EnterpriseGatewayApp.port=${port}`,
      '--EnterpriseGatewayApp.port_retries=0',
      `--EnterpriseGatewayApp.auth_token=${token}`,
      '--EnterpriseGatewayApp.list_kernels=True',
      // EG refuses kernels whose KERNEL_USERNAME (by default its own user) is root; these tests run as root.
      '--EnterpriseGatewayApp.unauthorized_users=[]',
    ],
    // inherited_envs (EG_INHERITED_ENVS, formerly EG_ENV_PROCESS_WHITELIST); KERNEL_* from the client always pass.
    env: { EG_INHERITED_ENVS: INHERITED },
    prepare: tmp => {
      // The gateway's venv has no ipykernel: its python3 kernelspec runs the project's venv, as
      // Kernel Gateway's does, with the local process proxy (EG's default) named for the reader.
      const spec = path.join(tmp, 'share', 'jupyter', 'kernels', 'python3');
      fs.mkdirSync(spec, { recursive: true });
      const proxy = 'enterprise_gateway.services.processproxies.processproxy.LocalProcessProxy';
      fs.writeFileSync(
        path.join(spec, 'kernel.json'),
        JSON.stringify({
          argv: [VENV_PYTHON, '-m', 'ipykernel_launcher', '-f', '{connection_file}'],
          display_name: 'Python 3 (local process proxy)',
          language: 'python',
          metadata: { process_proxy: { class_name: proxy } },
        }),
      );
      return { JUPYTER_PATH: path.join(tmp, 'share', 'jupyter') };
    },
  },
};

/** Starts Kernel Gateway with a tmpfs over `hidden` in its mount namespace; resolves once its API answers. */
export function startHiddenGateway(hidden: string): Promise<Gateway> {
  return startHidden('kernel', hidden);
}

/** Starts Enterprise Gateway (local process proxy) with a tmpfs over `hidden` in its mount namespace; resolves once its API answers. */
export function startHiddenEnterpriseGateway(hidden: string): Promise<Gateway> {
  return startHidden('enterprise', hidden);
}

/** Starts a gateway of the kind with a tmpfs over `hidden` in its mount namespace, its kernels' HOME a temp folder. */
export async function startHidden(kind: GatewayKind, hidden: string): Promise<Gateway> {
  const k = KINDS[kind];
  if (!fs.existsSync(k.python)) throw new Error(`${k.python} is missing: run make setup`);
  try {
    execFileSync(k.python, ['-c', `import ${k.module}`], { stdio: 'pipe' });
  } catch {
    throw new Error(k.missing);
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), kind === 'kernel' ? 'ar-kg-' : 'ar-eg-'));
  const home = path.join(tmp, 'home');
  fs.mkdirSync(home);
  const token = randomBytes(16).toString('hex');
  const port = await freePort();
  const extraEnv = k.prepare?.(tmp) ?? {};
  const script = 'mount -t tmpfs -o size=4m,mode=0755 autoresearch-hidden "$1" && shift && exec "$@"';
  const child = spawn(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      script,
      'sh',
      hidden,
      k.python,
      '-m',
      k.module,
      ...k.args(port, token),
    ],
    {
      cwd: home,
      env: {
        ...process.env,
        HOME: home,
        JUPYTER_RUNTIME_DIR: path.join(tmp, 'runtime'),
        JUPYTER_CONFIG_DIR: path.join(tmp, 'config'),
        AUTORESEARCH_CACHE: '',
        // The gateway hands its kernels only the variables it is told to (and, EG, the client's KERNEL_*).
        ...k.env,
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const svc = await serve(
    child,
    `http://127.0.0.1:${port}/`,
    token,
    `${k.what} in a mount namespace (unshare -m, needs root)`,
    () => fs.rmSync(tmp, { recursive: true, force: true }),
  );
  return { ...svc, hidden, home };
}

/** Starts a `jupyter server` (with this project's server extension) whose kernels are the gateway's; root defaults to a new temp folder. */
export async function startGatewayServer(gateway: Service, root?: string): Promise<Service & { root: string }> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-gws-'));
  if (!root) {
    root = path.join(tmp, 'root');
    fs.mkdirSync(root);
  }
  const token = randomBytes(16).toString('hex');
  const port = await freePort();
  const child = spawn(
    VENV_JUPYTER,
    [
      'server',
      '--no-browser',
      '--ip=127.0.0.1',
      `--port=${port}`,
      '--port-retries=0',
      `--ServerApp.root_dir=${root}`,
      `--IdentityProvider.token=${token}`,
      `--GatewayClient.url=${gateway.url.replace(/\/$/, '')}`,
      `--GatewayClient.auth_token=${gateway.token}`,
      ...(process.getuid?.() === 0 ? ['--allow-root'] : []),
    ],
    {
      cwd: root,
      env: {
        ...process.env,
        JUPYTER_RUNTIME_DIR: path.join(tmp, 'runtime'),
        JUPYTER_CONFIG_DIR: path.join(tmp, 'config'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  const svc = await serve(child, `http://127.0.0.1:${port}/`, token, 'jupyter server with GatewayClient.url', () =>
    fs.rmSync(tmp, { recursive: true, force: true }),
  );
  return { ...svc, root: root as string };
}

/** Waits until GET api/kernelspecs lists python3; throws with the process's output if it exits or takes too long. */
async function serve(
  child: ChildProcess,
  url: string,
  token: string,
  what: string,
  cleanup: () => void,
  timeoutMs = 90_000,
): Promise<Service> {
  let out = '';
  child.stdout?.on('data', d => (out += d));
  child.stderr?.on('data', d => (out += d));
  let exited = false;
  child.on('exit', () => (exited = true));
  const stop = async () => {
    killGroup(child.pid as number, 'SIGTERM');
    const t = Date.now() + 10_000;
    while (!exited && Date.now() < t) await new Promise(r => setTimeout(r, 100));
    killGroup(child.pid as number, 'SIGKILL');
    cleanup();
  };
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (exited) {
      cleanup();
      throw new Error(`${what} exited at start:\n${out}`);
    }
    if (Date.now() > until) {
      await stop();
      throw new Error(`${what} did not answer within ${timeoutMs} ms:\n${out}`);
    }
    try {
      const r = await fetch(`${url}api/kernelspecs`, { headers: { Authorization: `token ${token}` } });
      if (r.ok && ((await r.json()) as { kernelspecs: Record<string, unknown> }).kernelspecs.python3) break;
    } catch {
      // not listening yet
    }
    await new Promise(r => setTimeout(r, 200));
  }
  return { url, token, output: () => out, stop };
}

function killGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    // already gone
  }
}

/** A test workspace moved under `hidden`, the folder the gateway cannot see. */
export function hiddenWorkspace(hidden: string, files: WorkspaceFiles = {}): string {
  const made = makeWorkspace(files);
  const dir = path.join(hidden, path.basename(made));
  fs.renameSync(made, dir);
  return dir;
}
