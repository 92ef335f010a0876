/** What the benchmarks (and scripts/readme-pictures.mjs) share: a throwaway workspace in a git repository, a free port, a JupyterLab. */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * A train.py that "trains" by sleeping, then prints a random metric: the run's cost is known, so
 * what a benchmark measures on top of it is overhead. Its constants give the offline proposer moves.
 */
export function sleepTrain(seconds) {
  return `import random, time
LEARNING_RATE = 0.001
WEIGHT_DECAY = 0.1
N_LAYER = 4
BATCH_SIZE = 16
N_EMBD = 128
SEQ_LEN = 256
WARMUP_STEPS = 30
DROPOUT = 0.1
time.sleep(${seconds})
print("---")
print(f"val_bpb:          {random.uniform(0.9, 1.1):.6f}")
print("peak_vram_mb:     1024.0")
`;
}

/** A temp workspace with program.md, prepare.py and the given train.py, committed on main. */
export function benchWorkspace(name, { train, budgetS, timeoutS, gitignore }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `ar-bench-${name}-`));
  const timeout = timeoutS ? `timeout_s: ${timeoutS}\n` : '';
  fs.writeFileSync(path.join(dir, 'program.md'), `---\nbudget_s: ${budgetS}\n${timeout}---\nLower val_bpb.\n`);
  fs.writeFileSync(path.join(dir, 'prepare.py'), '# fixed\n');
  fs.writeFileSync(path.join(dir, 'train.py'), train);
  if (gitignore) {
    fs.writeFileSync(path.join(dir, '.gitignore'), gitignore);
  }
  const git = (...a) => execFileSync('git', a, { cwd: dir });
  git('init', '-q', '-b', 'main');
  git('config', 'user.name', 'bench');
  git('config', 'user.email', 'bench@localhost');
  git('add', '-A');
  git('commit', '-qm', 'initial');
  return dir;
}

/** A TCP port free on 127.0.0.1 at the time of asking. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The real Python interpreter, not a launcher (pyenv's shim costs ~90 ms a start). */
export function realPython() {
  return execFileSync(process.env.AUTORESEARCH_PYTHON ?? 'python3', ['-c', 'import sys; print(sys.executable)'], {
    encoding: 'utf8',
  }).trim();
}

/** Every record of a run's journal, `.autoresearch/<tag>/journal.jsonl`, parsed. */
export function readJournal(dir, tag) {
  const text = fs.readFileSync(path.join(dir, '.autoresearch', tag, 'journal.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter(l => l.trim() !== '')
    .map(l => JSON.parse(l));
}

/**
 * The strict rule, one run per experiment: the overhead, executor and pipeline benchmarks
 * measure what the engine adds around a run, so each side must run the same number of runs
 * (the noise-aware rule's repeats depend on the random metric; bench/noise.mjs measures them).
 */
export const ONE_RUN_EACH = ['--noise-runs', '1'];

/**
 * A token-less JupyterLab from .venv on 127.0.0.1:port serving serverRoot, its runtime,
 * workspaces and user settings under tmp; resolves once /lab answers, with the process (a
 * process group of its own: kill -pid ends it whole) and the base URL. Our own config rather
 * than ui-tests/jupyter_server_test_config.py: Galata's helper sets root_dir and a workspaces
 * folder of its own in the OS temp folder (left behind). Never use it for anything else.
 */
export async function startLab({ venvBin, tmp, serverRoot, port, onSpawn }) {
  const settings = path.join(tmp, 'lab-settings');
  const workspaces = path.join(tmp, 'lab-workspaces');
  const config = path.join(tmp, 'jupyter_lab_config.py');
  fs.writeFileSync(
    config,
    [
      '# Token-less, on 127.0.0.1, in a temp root (bench/common.mjs startLab). Never use it for anything else.',
      'c.ServerApp.ip = "127.0.0.1"',
      `c.ServerApp.port = ${port}`,
      'c.ServerApp.port_retries = 0',
      'c.ServerApp.open_browser = False',
      `c.ServerApp.root_dir = ${JSON.stringify(serverRoot)}`,
      'c.IdentityProvider.token = ""',
      'c.ServerApp.password = ""',
      'c.ServerApp.disable_check_xsrf = True',
      'c.LabApp.expose_app_in_browser = True',
      `c.LabApp.workspaces_dir = ${JSON.stringify(workspaces)}`,
      `c.LabApp.user_settings_dir = ${JSON.stringify(settings)}`,
      'c.ServerApp.log_level = "ERROR"',
      '',
    ].join('\n'),
  );
  // No "news?" or "update?" toast over what is measured or pictured: the user settings folder is ours.
  const notification = path.join(settings, '@jupyterlab', 'apputils-extension');
  fs.mkdirSync(notification, { recursive: true });
  fs.writeFileSync(
    path.join(notification, 'notification.jupyterlab-settings'),
    JSON.stringify({ fetchNews: 'false', checkForUpdates: false }),
  );
  const args = ['lab', '--config', config];
  if (process.getuid?.() === 0) {
    args.push('--allow-root');
  }
  let stderr = '';
  const server = spawn(path.join(venvBin, 'jupyter'), args, {
    cwd: serverRoot,
    detached: true, // a process group of its own, killed whole on cleanup
    stdio: ['ignore', 'ignore', 'pipe'],
    env: {
      ...process.env,
      PATH: `${venvBin}:${process.env.PATH}`,
      JUPYTER_RUNTIME_DIR: path.join(tmp, 'runtime'),
      JUPYTERLAB_WORKSPACES_DIR: workspaces,
      JUPYTERLAB_SETTINGS_DIR: settings,
    },
  });
  onSpawn?.(server); // the caller's cleanup can kill it even if it never answers
  server.stderr.on('data', d => {
    stderr = (stderr + d).slice(-4000);
  });
  const url = `http://127.0.0.1:${port}/lab`;
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) {
      throw new Error(`jupyter lab exited with ${server.exitCode}:\n${stderr}`);
    }
    try {
      const res = await fetch(url);
      if (res.ok) {
        return { server, base: `http://127.0.0.1:${port}` };
      }
    } catch {
      // not up yet
    }
    await new Promise(resolve => setTimeout(resolve, 250));
  }
  throw new Error(`jupyter lab did not answer on ${url} within 120 s:\n${stderr}`);
}

/**
 * A temp folder for a script that drives a JupyterLab of its own (bench/panel, the README's
 * pictures): `root` is the server's root inside it. On exit or a signal the server's process
 * group (jupyter and what it started; give it `onSpawn`) is stopped and the folder removed,
 * unless the environment variable `keepVar` is set.
 */
export function labScratch(prefix, keepVar) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  let server = null;
  const cleanup = () => {
    if (server && server.exitCode === null && server.signalCode === null) {
      try {
        process.kill(-server.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    server = null;
    if (!process.env[keepVar]) {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  };
  process.on('exit', cleanup);
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      cleanup();
      process.exit(130);
    });
  }
  return { tmp, serverRoot: path.join(tmp, 'root'), onSpawn: p => (server = p), cleanup };
}
