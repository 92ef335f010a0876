/**
 * Remote kernels for real: Jupyter Kernel Gateway on 127.0.0.1 that cannot see
 * the workspace (a tmpfs covers its parent in the gateway's mount namespace),
 * a `jupyter server` pointed at it with GatewayClient.url, and the engine
 * talking to that server, so the workspace must be shipped to the kernel.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KernelAPI, KernelConnection } from '@jupyterlab/services';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KernelExecutor } from '../src/engine/executor/kernel';
import { serverSettings } from '../src/engine/executor/kernel-session';
import { CALL_MIME, callKernel, kernelReady } from '../src/engine/executor/kernel-call';
import { LogCapture } from '../src/engine/experiment/log-capture';
import { Loop } from '../src/engine/run/setup';
import { resolvePython } from '../src/engine/workspace/python';
import {
  hiddenWorkspace,
  startGatewayServer,
  startHiddenGateway,
  type Gateway,
  type Service,
} from './helpers/kernel-gateway';
import { kernelPid } from './helpers/jupyter-server';
import {
  alive,
  cli,
  experiments,
  git,
  ScriptedProposer,
  standInTrain,
  trainProposal,
  waitFor,
  waitForPid,
} from './helpers/workspace';

let base: string;
let hidden: string;
let gateway: Gateway;
let server: Service & { root: string };

beforeAll(async () => {
  vi.spyOn(console, 'debug').mockImplementation(() => undefined);
  // Through a gateway the first websocket is routinely dropped and at once reconnected; @jupyterlab/services warns of it.
  const warn = console.warn.bind(console);
  vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
    if (!String(args[0]).startsWith('Connection lost, reconnecting')) warn(...args);
  });
  // The server's root holds the hidden folder, so the server extension's API can name workspaces in it.
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-gw-root-'));
  hidden = path.join(base, 'hidden');
  fs.mkdirSync(hidden);
  gateway = await startHiddenGateway(hidden);
  server = await startGatewayServer(gateway, base);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await gateway?.stop();
  fs.rmSync(base, { recursive: true, force: true });
});

/** Whether a kernel started through the server (so on the gateway) sees each path. */
async function kernelSees(paths: string[]): Promise<boolean[]> {
  const settings = serverSettings(server.url, server.token);
  const model = await KernelAPI.startNew({ name: 'python3' }, settings);
  const kernel = new KernelConnection({ model, serverSettings: settings, handleComms: false });
  try {
    // As the executor does: a fresh kernel's first reply means its channels are all up.
    expect(await kernelReady(kernel, 90)).toBe(true);
    const code = (nonce: string) =>
      `import os\nfrom IPython.display import display\ndisplay({${JSON.stringify(CALL_MIME)}: {"nonce": ${JSON.stringify(nonce)}, "seen": [os.path.exists(p) for p in ${JSON.stringify(paths)}]}}, raw=True)\n`;
    return (await callKernel<{ seen: boolean[] }>(kernel, code, 60_000)).seen;
  } finally {
    kernel.dispose();
    await KernelAPI.shutdownKernel(model.id, settings);
  }
}

/** A stand-in train.py that counts its runs in the kernel side's cache and says where it runs and what it sees. */
function remoteTrain(): string {
  return (
    [
      'import os',
      '_cache = os.path.join(os.environ.get("AUTORESEARCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "autoresearch"), "gateway-test")',
      'os.makedirs(_cache, exist_ok=True)',
      '_runs = os.path.join(_cache, "runs")',
      '_before = len(open(_runs).read().splitlines()) if os.path.exists(_runs) else 0',
      'open(_runs, "a").write("run\\n")',
      'print("cwd:", os.getcwd())',
      'print("cached runs before this one:", _before)',
      `print("hidden folder visible:", os.path.exists(${JSON.stringify(hidden)}) and bool(os.listdir(${JSON.stringify(hidden)})))`,
    ].join('\n') +
    '\n' +
    standInTrain({ sleep: 0.2 })
  );
}

describe('the kernel executor through Jupyter Kernel Gateway', () => {
  it('runs on kernels that really cannot see the workspace folder', async () => {
    const dir = hiddenWorkspace(hidden);
    expect(fs.existsSync(path.join(dir, 'train.py'))).toBe(true);
    // The gateway's kernels miss the workspace, yet see the rest of the filesystem.
    expect(await kernelSees([dir, path.join(dir, 'train.py'), gateway.home, base])).toEqual([false, false, true, true]);
  });

  it('ships the workspace and runs 3 experiments from the command line; the prepared-data cache stays between them', async () => {
    const dir = hiddenWorkspace(hidden, { train: remoteTrain() });
    // One run per experiment (the strict rule): the log of experiment i counts i runs before it.
    const r = await cli([
      'run',
      dir,
      '--tag',
      'gw',
      '--proposer',
      'offline',
      '--max-experiments',
      '3',
      '--noise-runs',
      '1',
      '--executor',
      'kernel',
      '--server-url',
      server.url,
      '--token',
      server.token,
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const exps = experiments(dir, 'gw');
    expect(exps).toHaveLength(4);
    expect(exps.map(e => e.status).filter(s => s !== 'keep' && s !== 'discard')).toEqual([]);
    const logs = exps.map(e => fs.readFileSync(e.log_path as string, 'utf8'));
    const shipRoot = path.join(gateway.home, '.autoresearch', 'workspaces');
    logs.forEach((log, i) => {
      expect(log).toMatch(
        new RegExp(
          `^\\[autoresearch\\] workspace shipped to [^:]+:${shipRoot}/${path.basename(dir)}-[0-9a-f]{16} \\(`,
          'm',
        ),
      );
      expect(log).toMatch(new RegExp(`^cwd: ${shipRoot}/${path.basename(dir)}-[0-9a-f]{16}$`, 'm'));
      expect(log).toContain(`cached runs before this one: ${i}`);
      expect(log).toContain('hidden folder visible: False');
      expect(log).toContain('val_bpb:');
    });
    // The baseline sends every tracked file; each experiment after it only the edited train.py.
    expect(logs[0]).toContain('(3 files sent');
    for (const log of logs.slice(1)) expect(log).toContain('(1 file sent');
    // The engine's state stays on its side.
    expect(fs.existsSync(path.join(dir, 'results.tsv'))).toBe(true);
    const kernels = (await (
      await fetch(`${server.url}api/kernels`, { headers: { Authorization: `token ${server.token}` } })
    ).json()) as unknown[];
    expect(kernels).toEqual([]);
  });

  it('sends only what changed, deletes what left the tree, keeps the mode, and gives each cwd its own folder', async () => {
    const a = hiddenWorkspace(hidden, {
      extra: { 'keep.txt': 'one\n', 'gone.txt': 'bye\n', 'run.sh': 'echo "run.sh ran"\n' },
    });
    // makeWorkspace writes flat files; a subfolder checks that folders are made and emptied ones removed.
    fs.mkdirSync(path.join(a, 'data'));
    fs.renameSync(path.join(a, 'keep.txt'), path.join(a, 'data', 'keep.txt'));
    fs.renameSync(path.join(a, 'gone.txt'), path.join(a, 'data', 'gone.txt'));
    git(a, 'add', '-A');
    git(a, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'into data/');
    fs.writeFileSync(path.join(a, 'untracked.txt'), 'not shipped\n');
    const b = hiddenWorkspace(hidden);
    const ex = new KernelExecutor({ serverUrl: server.url, token: server.token, graceS: 1 });
    const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-gw-logs-'));
    const list =
      'find . -path ./.autoresearch-ship.json -prune -o -type f -print | sort; cat data/keep.txt; [ -x run.sh ] && ./run.sh || echo "run.sh not executable"';
    const runIn = async (cwd: string, name: string) => {
      const log = new LogCapture(path.join(logDir, name));
      const outcome = await ex.run({ cwd, command: list, timeoutS: 60, log });
      log.close();
      expect(outcome).toMatchObject({ exitCode: 0, timedOut: false });
      return { text: fs.readFileSync(path.join(logDir, name), 'utf8'), root: ex.lastWorkdir };
    };
    try {
      const first = await runIn(a, 'first');
      expect(first.text).toContain('(6 files sent');
      expect(first.text).toContain('./data/gone.txt');
      expect(first.text).not.toContain('untracked.txt');
      expect(first.text).toContain('run.sh not executable');

      git(a, 'rm', '-q', 'data/gone.txt');
      fs.writeFileSync(path.join(a, 'data/keep.txt'), 'two\n');
      fs.chmodSync(path.join(a, 'run.sh'), 0o755);
      git(a, 'add', '-A', 'data', 'run.sh');
      git(a, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'change');
      const second = await runIn(a, 'second');
      expect(second.text).toContain('(2 files sent');
      expect(second.text).toContain('1 removed)');
      expect(second.text).not.toContain('gone.txt');
      expect(second.text).toContain('two');
      expect(second.text).toContain('run.sh ran');
      expect(second.root).toBe(first.root);

      // An edit not yet committed is shipped as it is on disk.
      fs.writeFileSync(path.join(a, 'data/keep.txt'), 'three\n');
      const third = await runIn(a, 'third');
      expect(third.text).toContain('(1 file sent');
      expect(third.text).toContain('three');

      const other = await runIn(b, 'other');
      expect(other.text).toContain('(3 files sent');
      expect(other.root).not.toBe(first.root);
      expect(other.text).not.toContain('./data/keep.txt');
    } finally {
      await ex.dispose();
      fs.rmSync(logDir, { recursive: true, force: true });
    }
  });

  it('a run started through the server extension with a kernel trains on the gateway, shipped, with the token kept out of argv', async () => {
    const dir = hiddenWorkspace(hidden, { train: remoteTrain() });
    const rel = path.relative(base, dir);
    const headers = { Authorization: `token ${server.token}`, 'Content-Type': 'application/json' };
    const r = await fetch(`${server.url}autoresearch/runs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ path: rel, tag: 'panel', proposer: 'offline', kernel: 'python3', max_experiments: 2 }),
    });
    const started = (await r.json()) as { pid: number; log: string };
    expect(r.status, JSON.stringify(started)).toBe(202);
    const journal = path.join(dir, '.autoresearch', 'panel', 'journal.jsonl');
    await waitFor(
      () => fs.existsSync(journal) && fs.readFileSync(journal, 'utf8').includes('"run_end"'),
      90_000,
      'the run to end',
    );
    const exps = experiments(dir, 'panel');
    expect(exps.map(e => e.status).filter(s => s !== 'keep' && s !== 'discard')).toEqual([]);
    expect(exps).toHaveLength(3);
    for (const e of exps)
      expect(fs.readFileSync(e.log_path as string, 'utf8')).toMatch(
        /^\[autoresearch\] workspace shipped to .+\/\.autoresearch\/workspaces\//m,
      );
    // The engine was told this server's loopback URL; the token reached it in its environment only.
    const engineLog = fs.readFileSync(path.join(base, started.log), 'utf8');
    expect(engineLog).toContain('--executor kernel');
    expect(engineLog).toContain(`--server-url ${server.url}`);
    expect(engineLog).not.toContain(server.token);
  });

  it('a remote kernel killed mid-experiment is a crash; its run is killed and a fresh kernel goes on in the same shipped folder', async () => {
    const dir = hiddenWorkspace(hidden, {
      program: '---\nbudget_s: 1\ntimeout_s: 90\nsandbox: off\n---\nGo.\n',
      train: standInTrain({ metric: '1.000000' }),
    });
    const ex = new KernelExecutor({ serverUrl: server.url, token: server.token, graceS: 1 });
    const slow = 'import os\nopen("train.pid", "w").write(str(os.getpid()))\n' + standInTrain({ sleep: 60 });
    const proposer = new ScriptedProposer([
      { description: 'kernel dies', rationale: '', files: { 'train.py': slow } },
      trainProposal('after', { metric: '0.900000' }),
    ]);
    const l = new Loop({
      dir,
      tag: 'gk',
      proposer,
      executor: ex,
      python: resolvePython(),
      signal: new AbortController().signal,
    });
    const kernels: Array<string | null> = [];
    l.on('phase', (_n: number, phase: string) => phase === 'judge' && kernels.push(ex.kernelId));
    let pidFile: string;
    try {
      const running = l.run();
      await waitFor(() => kernels.length === 1 && ex.lastWorkdir !== null, 60_000, 'the baseline to end');
      pidFile = path.join(ex.lastWorkdir as string, 'train.pid');
      // The shipped folder is in the gateway's home, which this side can read.
      await waitForPid(pidFile, 'the remote training run to start');
      process.kill(kernelPid(ex.kernelId as string) as number, 'SIGKILL');
      await running;
    } finally {
      await ex.dispose();
    }
    const [, died, after] = experiments(dir, 'gk');
    expect(died).toMatchObject({ status: 'crash', metric: null });
    expect(died.reason).toMatch(/kernel died or restarted during this experiment/);
    const trainPid = Number(fs.readFileSync(pidFile, 'utf8'));
    await waitFor(() => !alive(trainPid), 15_000, 'the orphaned remote training run to be killed');
    expect(after).toMatchObject({ status: 'keep', metric: 0.9 });
    expect(kernels[2]).not.toBe(kernels[0]);
    // The fresh kernel found the folder as the last one left it: only the edited train.py went over.
    expect(fs.readFileSync(after.log_path as string, 'utf8')).toMatch(/\(1 file sent/);
  });
});
