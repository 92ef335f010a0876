/**
 * What a training run may reach, through both executors, with real processes: credentials kept
 * from it, nothing it starts outliving it (exit, deadline, stop), and the bubblewrap sandbox
 * (the read-only parts of the workspace, hidden secrets, no network unless allowed).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KernelExecutor } from '../src/engine/executor/kernel';
import { SubprocessExecutor } from '../src/engine/executor/subprocess';
import type { Executor, RunIsolation, RunOutcome } from '../src/engine/executor/types';
import { LogCapture } from '../src/engine/experiment/log-capture';
import { startJupyterServer, type JupyterServer } from './helpers/jupyter-server';
import { alive, makeWorkspace, waitFor } from './helpers/workspace';

const SECRET_KEY = 'sk-ant-test-0123456789abcdef';
const SECRET_TOKEN = 'server-token-fedcba9876543210';
const PYTHON = path.join(__dirname, '..', '.venv', 'bin', 'python');

let server: JupyterServer;
const saved = { ...process.env };

beforeAll(async () => {
  if (!fs.existsSync('/usr/bin/bwrap') && !fs.existsSync('/usr/local/bin/bwrap')) {
    throw new Error('bubblewrap is missing: apt-get install bubblewrap (make setup installs it)');
  }
  vi.spyOn(console, 'debug').mockImplementation(() => undefined);
  // Secrets in the engine's environment, and so in the server's and its kernels': one by its
  // name, one (the server's token) under a name nobody would guess.
  process.env.ANTHROPIC_API_KEY = SECRET_KEY;
  process.env.JUPYTER_TOKEN = SECRET_TOKEN;
  process.env.LAB_SESSION_SECRET = SECRET_TOKEN;
  server = await startJupyterServer();
}, 120_000);

afterAll(async () => {
  await server?.stop();
  process.env = saved;
});

function subprocess(): SubprocessExecutor {
  return new SubprocessExecutor(1);
}

function kernel(): KernelExecutor {
  return new KernelExecutor({ serverUrl: server.url, token: server.token, kernelName: 'python3', graceS: 1 });
}

const EXECUTORS: Array<[string, () => Executor]> = [
  ['subprocess', subprocess],
  ['kernel', kernel],
];

interface Ran {
  outcome: RunOutcome;
  log: string;
}

async function run(
  ex: Executor,
  dir: string,
  o: { timeoutS?: number; isolation?: RunIsolation; signal?: AbortSignal; env?: Record<string, string> } = {},
): Promise<Ran> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-log-')), 'run.log');
  const log = new LogCapture(file);
  const outcome = await ex.run({
    cwd: dir,
    command: 'python train.py',
    timeoutS: o.timeoutS ?? 60,
    log,
    signal: o.signal,
    python: PYTHON,
    env: { AUTORESEARCH_SEED: '7', PATH: `${path.dirname(PYTHON)}:${process.env.PATH}`, ...o.env },
    isolation: o.isolation ?? { sandbox: 'off', network: false, readonly: ['prepare.py'] },
  });
  log.close();
  if (process.env.DEBUG_GUARD) console.log(JSON.stringify(outcome), fs.readFileSync(file, 'utf8'));
  return { outcome, log: fs.readFileSync(file, 'utf8') };
}

async function dispose(ex: Executor): Promise<void> {
  if (ex instanceof KernelExecutor) await ex.dispose();
}

/** A train.py that starts a process which leaves its group (setsid) and one that double-forks away, records both, then `then`. */
function escapingTrain(then: string): string {
  return `import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
a = subprocess.Popen(["sleep", "300"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open("daemon.pid", "w").write(str(os.getpid()))
        time.sleep(300)
    os._exit(0)
while not os.path.exists("daemon.pid"):
    time.sleep(0.05)
open("pids", "w").write("%d %d %d" % (os.getpid(), a.pid, int(open("daemon.pid").read())))
print("started", flush=True)
${then}
`;
}

function pids(dir: string): number[] {
  return fs.readFileSync(path.join(dir, 'pids'), 'utf8').trim().split(' ').map(Number);
}

describe.each(EXECUTORS)('the %s executor', (name, make) => {
  it("keeps the engine's and the server's credentials out of the run, by name and by value", async () => {
    const dir = makeWorkspace({
      train:
        'import os\nfor k, v in sorted(os.environ.items()):\n    print("ENV", k, v)\nprint("---")\nprint("val_bpb: 1.0")\n',
    });
    const ex = make();
    try {
      const { outcome, log } = await run(ex, dir);
      expect(outcome.exitCode).toBe(0);
      expect(log).toContain('ENV AUTORESEARCH_SEED 7'); // the run's own variables still arrive
      expect(log).not.toContain(SECRET_KEY);
      expect(log).not.toContain(SECRET_TOKEN);
      expect(log).not.toContain(server.token);
      expect(log).not.toMatch(/^ENV (ANTHROPIC_API_KEY|JUPYTER_TOKEN|LAB_SESSION_SECRET) /m);
    } finally {
      await dispose(ex);
    }
  }, 90_000);

  it('kills every process the run started, in its group or not, when the run exits', async () => {
    const dir = makeWorkspace({ train: escapingTrain('print("---")\nprint("val_bpb: 1.0")') });
    const ex = make();
    try {
      const { outcome } = await run(ex, dir);
      expect(outcome.exitCode).toBe(0);
      const [, sleeper, daemon] = pids(dir);
      await waitFor(() => !alive(sleeper) && !alive(daemon), 5000, "the run's leftovers to be killed");
      expect(outcome.strays).toBeGreaterThanOrEqual(2);
    } finally {
      await dispose(ex);
    }
  }, 90_000);

  it('kills every process the run started at its deadline, SIGTERM ignored', async () => {
    const dir = makeWorkspace({ train: escapingTrain('time.sleep(300)') });
    const ex = make();
    try {
      const { outcome } = await run(ex, dir, { timeoutS: 4 });
      expect(outcome.timedOut).toBe(true);
      for (const pid of pids(dir)) expect(alive(pid)).toBe(false);
    } finally {
      await dispose(ex);
    }
  }, 90_000);

  it('kills every process the run started on a stop', async () => {
    const dir = makeWorkspace({ train: escapingTrain('time.sleep(300)') });
    const ex = make();
    const stop = new AbortController();
    try {
      const running = run(ex, dir, { signal: stop.signal });
      await waitFor(() => fs.existsSync(path.join(dir, 'pids')), 30_000, 'the run to start its processes');
      stop.abort();
      const { outcome } = await running;
      expect(outcome.interrupted).toBe(true);
      for (const pid of pids(dir)) expect(alive(pid)).toBe(false);
    } finally {
      await dispose(ex);
    }
  }, 90_000);

  it('sandboxes the run: .git, .autoresearch and read-only files cannot change, secrets and the runtime folder are hidden, no network', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-home-'));
    fs.mkdirSync(path.join(home, '.ssh'));
    fs.writeFileSync(path.join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY');
    const listener = net.createServer(s => s.on('error', () => undefined).end('hello')).listen(0, '127.0.0.1');
    await new Promise(r => listener.once('listening', r));
    const port = (listener.address() as net.AddressInfo).port;
    const dir = makeWorkspace({ train: probeTrain(port, home) });
    fs.mkdirSync(path.join(dir, '.autoresearch'), { recursive: true });
    // The kernel's runtime folder is its server's (its token, the kernels' keys); the engine's side gets one alike.
    const env: Record<string, string> = { HOME: home };
    if (name === 'subprocess') {
      env.JUPYTER_RUNTIME_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-runtime-'));
      fs.writeFileSync(path.join(env.JUPYTER_RUNTIME_DIR, 'jpserver-1.json'), JSON.stringify({ token: SECRET_TOKEN }));
    }
    const ex = make();
    try {
      const sandboxed = await run(ex, dir, {
        isolation: { sandbox: 'on', network: false, readonly: ['prepare.py'] },
        env,
      });
      expect(sandboxed.outcome.sandbox).toBe('on');
      expect(sandboxed.log).toMatch(
        /^\[autoresearch\] sandbox: on \(bubblewrap; network off; read-only: \.git, \.autoresearch, program\.md, prepare\.py\)/m,
      );
      expect(sandboxed.log).toContain('write .git: refused');
      expect(sandboxed.log).toContain('write .autoresearch: refused');
      expect(sandboxed.log).toContain('write prepare.py: refused');
      expect(sandboxed.log).toContain('write train.py: ok'); // the workspace itself is writable
      expect(sandboxed.log).toContain('read ssh key: refused');
      expect(sandboxed.log).toMatch(/runtime files: \[\]/); // no jpserver-*.json, no kernel keys
      expect(sandboxed.log).toContain('connect: refused');
      expect(fs.readFileSync(path.join(dir, 'prepare.py'), 'utf8')).not.toContain('tampered');

      const open = await run(ex, dir, { isolation: { sandbox: 'on', network: true, readonly: ['prepare.py'] }, env });
      expect(open.log).toContain('sandbox: on (bubblewrap; network on;');
      expect(open.log).toContain('connect: ok');

      const off = await run(ex, dir, { isolation: { sandbox: 'off', network: false, readonly: ['prepare.py'] }, env });
      expect(off.outcome.sandbox).toBe('off');
      expect(off.log).toMatch(/runtime files: \['jpserver-/);
      expect(off.log).toContain('write prepare.py: ok'); // what the sandbox prevents, without it
      expect(off.log).toContain('read ssh key: ok');
    } finally {
      listener.close();
      await dispose(ex);
    }
  }, 120_000);
});

// The kernel's side looks bubblewrap up on the kernel's own PATH, which the engine does not set: one executor shows the rule.
describe('a sandbox that cannot be set up', () => {
  it('sandbox on where bubblewrap is missing is a crash that says so; auto goes on without it, saying why', async () => {
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-bin-'));
    fs.symlinkSync(PYTHON, path.join(bin, 'python'));
    fs.symlinkSync(PYTHON, path.join(bin, 'python3'));
    const dir = makeWorkspace({ train: 'print("trained")\nprint("---")\nprint("val_bpb: 1.0")\n' });
    const ex = subprocess();
    try {
      const on = await run(ex, dir, { isolation: { sandbox: 'on', network: false, readonly: [] }, env: { PATH: bin } });
      expect(on.outcome.exitCode).toBe(126);
      expect(on.log).toContain('sandbox: on, but bubblewrap is not installed (Debian: apt-get install bubblewrap)');
      expect(on.log).not.toContain('trained');
      const auto = await run(ex, dir, {
        isolation: { sandbox: 'auto', network: false, readonly: [] },
        env: { PATH: bin },
      });
      expect(auto.outcome.exitCode).toBe(0);
      expect(auto.outcome.sandbox).toBe('off');
      expect(auto.log).toContain('sandbox: off (bubblewrap is not installed');
      expect(auto.log).toContain('trained');
    } finally {
      await dispose(ex);
    }
  }, 90_000);
});

/** A train.py that tries what a sandbox must refuse and prints what happened. */
function probeTrain(port: number, home: string): string {
  return `import glob, os, socket
def attempt(what, fn):
    try:
        fn()
        print(what + ": ok")
    except OSError:
        print(what + ": refused")
attempt("write .git", lambda: open(".git/evil", "w").write("x"))
attempt("write .autoresearch", lambda: open(".autoresearch/engine.json", "w").write("{}"))
attempt("write prepare.py", lambda: open("prepare.py", "a").write("# tampered"))
attempt("write train.py", lambda: open("train.py", "a").write("\\n"))
attempt("read ssh key", lambda: open(${JSON.stringify(path.join(home, '.ssh', 'id_ed25519'))}).read())
runtime = os.environ.get("JUPYTER_RUNTIME_DIR", "")
print("runtime files: %s" % (sorted(os.listdir(runtime)) if runtime and os.path.isdir(runtime) else []))
attempt("connect", lambda: socket.create_connection(("127.0.0.1", ${port}), 2).close())
print("---")
print("val_bpb: 1.0")
`;
}

describe('a run group recorded in engine.json', () => {
  it('is killed by the next engine only while its leader is the process recorded', async () => {
    const { acquireEngineLock } = await import('../src/engine/run/engine-lock');
    const { identityOf } = await import('../src/engine/run/process-identity');
    const dir = makeWorkspace();
    const file = path.join(dir, '.autoresearch', 'engine.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const bystander = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' });
    const pid = bystander.pid as number;
    const dead = spawn('true');
    await new Promise(r => dead.on('exit', r));
    try {
      const stale = { pid: dead.pid, tag: 't', started: new Date().toISOString(), run_pgid: pid, run_pgids: [pid] };
      // A forged or stale file: no identity, then an identity of some other process.
      fs.writeFileSync(file, JSON.stringify(stale));
      acquireEngineLock(dir, 't');
      expect(alive(pid)).toBe(true);
      fs.writeFileSync(
        file,
        JSON.stringify({ ...stale, run_identities: { [pid]: { ...identityOf(pid), start: '1' } } }),
      );
      acquireEngineLock(dir, 't');
      expect(alive(pid)).toBe(true);
      // The genuine article: the group that engine's run really had.
      fs.writeFileSync(file, JSON.stringify({ ...stale, run_identities: { [pid]: identityOf(pid) } }));
      acquireEngineLock(dir, 't');
      await waitFor(() => !alive(pid), 5000, 'the recorded group to be killed');
    } finally {
      bystander.kill('SIGKILL');
    }
  });
});

describe('a run from the command line', () => {
  it("says whether its runs were sandboxed: the log's first line, the run records and status", async () => {
    const { cli, journal } = await import('./helpers/workspace');
    const dir = makeWorkspace();
    const r = await cli([
      'run',
      dir,
      '--tag',
      't1',
      '--max-experiments',
      '0',
      '--noise-runs',
      '1',
      '--proposer',
      'offline',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const runs = journal(dir, 't1').filter(x => x.type === 'run');
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ sandbox: 'on' });
    const log = fs.readFileSync((runs[0] as { log_path: string }).log_path, 'utf8');
    expect(log.split('\n')[0]).toBe(
      '[autoresearch] sandbox: on (bubblewrap; network off; read-only: .git, .autoresearch, program.md, prepare.py)',
    );
    const status = await cli(['status', dir]);
    expect(status.stdout).toMatch(/^sandbox: +auto, network off; the last run was sandboxed \(#0/m);

    const off = await cli([
      'run',
      dir,
      '--tag',
      't2',
      '--max-experiments',
      '0',
      '--noise-runs',
      '1',
      '--proposer',
      'offline',
      '--sandbox',
      'off',
    ]);
    expect(off.stderr).toBe('');
    expect(off.code).toBe(0);
    expect(journal(dir, 't2').find(x => x.type === 'run')).toMatchObject({ sandbox: 'off' });
    expect((await cli(['status', dir, '--tag', 't2'])).stdout).toMatch(
      /^sandbox: +off; the last run was not sandboxed/m,
    );
  }, 90_000);
});
