/** The kernel executor against a real `jupyter server` and real ipykernel kernels from the venv, driven by the real loop. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as os from 'node:os';
import { KernelAPI, KernelConnection, type KernelMessage } from '@jupyterlab/services';
import { kernelReady } from '../src/engine/executor/kernel-call';
import { RUN_MIME, runnerCode, type KernelReport } from '../src/engine/executor/kernel-code';
import { KernelExecutor } from '../src/engine/executor/kernel';
import { serverSettings } from '../src/engine/executor/kernel-session';
import { LogCapture } from '../src/engine/experiment/log-capture';
import { Loop } from '../src/engine/run/setup';
import type { Proposer } from '../src/engine/proposers/types';
import { resolvePython } from '../src/engine/workspace/python';
import { kernelPid, startJupyterServer, type JupyterServer } from './helpers/jupyter-server';
import {
  alive,
  cli,
  experiments,
  finished,
  git,
  makeWorkspace,
  ScriptedProposer,
  standInTrain,
  startCli,
  trainProposal,
  waitFor,
  waitForPid,
} from './helpers/workspace';

let server: JupyterServer;

beforeAll(async () => {
  // @jupyterlab/services narrates its connections with console.debug.
  vi.spyOn(console, 'debug').mockImplementation(() => undefined);
  server = await startJupyterServer();
});

afterAll(async () => {
  await server?.stop();
});

function executor(): KernelExecutor {
  return new KernelExecutor({ serverUrl: server.url, token: server.token, kernelName: 'python3', graceS: 1 });
}

function loop(dir: string, proposer: Proposer, ex: KernelExecutor, signal = new AbortController().signal): Loop {
  return new Loop({ dir, tag: 'k1', proposer, executor: ex, python: resolvePython(), signal });
}

/** A train.py that records its pid, then ignores SIGINT and SIGTERM (its grandchild too) and hangs. */
function stubbornTrain(): string {
  return (
    'import os, signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n' +
    'open("train.pid", "w").write(str(os.getpid()))\n' +
    standInTrain({ hang: true, stubbornChild: true })
  );
}

/** A train.py that records its pid and trains for a minute (long enough to kill its kernel under it). */
function slowTrain(): string {
  return 'import os\nopen("train.pid", "w").write(str(os.getpid()))\n' + standInTrain({ sleep: 60 });
}

describe('the kernel executor', () => {
  it('runs experiments in one reused kernel, streaming output into the log, keeping and discarding as the subprocess executor does', async () => {
    const dir = makeWorkspace({ train: standInTrain({ metric: '1.000000' }) });
    const ex = executor();
    const proposer = new ScriptedProposer([
      trainProposal('better', { metric: '0.900000' }),
      trainProposal('worse', { metric: '0.950000' }),
      trainProposal('crashes', { exitCode: 3 }),
    ]);
    const l = loop(dir, proposer, ex);
    const kernels = new Set<string | null>();
    l.on('phase', (_n: number, phase: string) => phase === 'judge' && kernels.add(ex.kernelId));
    try {
      const end = await l.run();
      expect(end).toMatchObject({ reason: 'exhausted', best_metric: 0.9 });
    } finally {
      await ex.dispose();
    }
    const exps = experiments(dir, 'k1');
    expect(exps.map(e => [e.n, e.status, e.metric, e.description])).toEqual([
      [0, 'keep', 1.0, 'baseline'],
      [1, 'keep', 0.9, 'better'],
      [2, 'discard', 0.95, 'worse'],
      [3, 'crash', null, 'crashes'],
    ]);
    expect(exps[3].reason).toMatch(/exited with code 3: RuntimeError: stand-in failure/);
    expect(exps[3].exit_code).toBe(3);
    expect(exps[1].summary).toMatchObject({ val_bpb: 0.9, num_steps: 10, peak_vram_mb: 2048 });
    const log = fs.readFileSync(exps[1].log_path as string, 'utf8');
    expect(log).toContain('step 1 | loss 3.2500');
    expect(log).toContain('val_bpb:          0.900000');
    // stderr arrives in the same log, as with the subprocess executor.
    expect(fs.readFileSync(exps[3].log_path as string, 'utf8')).toContain('RuntimeError: stand-in failure');
    // All four experiments ran in the same kernel.
    expect(kernels.size).toBe(1);
    expect([...kernels][0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(git(dir, 'log', '--format=%s', 'autoresearch/k1').trim().split('\n')).toEqual(['better', 'initial']);
    expect(git(dir, 'status', '--porcelain', '--untracked-files=no').trim()).toBe('');
  });

  it('kills a run that ignores SIGINT and SIGTERM at the deadline; the kernel survives and runs the next experiment', async () => {
    const dir = makeWorkspace({
      program: '---\nbudget_s: 1\ntimeout_s: 3\nsandbox: off\n---\nGo.\n',
      train: standInTrain({ metric: '1.000000' }),
    });
    const ex = executor();
    const proposer = new ScriptedProposer([
      { description: 'hangs', rationale: '', files: { 'train.py': stubbornTrain() } },
      trainProposal('after', { metric: '0.900000' }),
    ]);
    const l = loop(dir, proposer, ex);
    const kernels: Array<string | null> = [];
    l.on('phase', (_n: number, phase: string) => phase === 'judge' && kernels.push(ex.kernelId));
    try {
      await l.run();
    } finally {
      await ex.dispose();
    }
    const [, hung, after] = experiments(dir, 'k1');
    expect(hung).toMatchObject({ status: 'crash', reason: 'killed at the 3 s deadline', metric: null });
    expect(hung.timings.run_s).toBeGreaterThanOrEqual(3);
    expect(hung.timings.run_s).toBeLessThan(12);
    const trainPid = Number(fs.readFileSync(path.join(dir, 'train.pid'), 'utf8'));
    const grandchild = Number(fs.readFileSync(path.join(dir, 'grandchild.pid'), 'utf8'));
    await waitFor(() => !alive(trainPid) && !alive(grandchild), 5000, 'the whole process group to die');
    expect(after).toMatchObject({ status: 'keep', metric: 0.9 });
    // The kernel that ran the hung experiment is the one that ran the next.
    expect(new Set(kernels).size).toBe(1);
  });

  it('counts a kernel killed mid-experiment as a crash, kills what it left running, and runs the next experiment on a fresh kernel', async () => {
    const dir = makeWorkspace({
      program: '---\nbudget_s: 1\ntimeout_s: 90\nsandbox: off\n---\nGo.\n',
      train: standInTrain({ metric: '1.000000' }),
    });
    const ex = executor();
    const proposer = new ScriptedProposer([
      { description: 'kernel dies', rationale: '', files: { 'train.py': slowTrain() } },
      trainProposal('after', { metric: '0.900000' }),
    ]);
    const l = loop(dir, proposer, ex);
    const kernels: Array<string | null> = [];
    l.on('phase', (_n: number, phase: string) => phase === 'run' && kernels.push(ex.kernelId));
    const pidFile = path.join(dir, 'train.pid');
    let victim: number | null;
    try {
      const running = l.run();
      await waitForPid(pidFile);
      victim = kernelPid(ex.kernelId as string);
      expect(victim).not.toBeNull();
      process.kill(victim as number, 'SIGKILL');
      await running;
    } finally {
      await ex.dispose();
    }
    const [, died, after] = experiments(dir, 'k1');
    expect(died).toMatchObject({ status: 'crash', metric: null, exit_code: null });
    expect(died.reason).toMatch(/kernel died or restarted during this experiment/);
    expect(died.timings.run_s).toBeLessThan(45);
    expect(fs.readFileSync(died.log_path as string, 'utf8')).toContain('[autoresearch] kernel error:');
    // The training run the dead kernel had started does not go on training.
    const trainPid = Number(fs.readFileSync(pidFile, 'utf8'));
    await waitFor(() => !alive(trainPid), 10_000, 'the orphaned training run to be killed');
    expect(after).toMatchObject({ status: 'keep', metric: 0.9 });
    // The next experiment ran on another kernel than the killed one.
    expect(kernels).toHaveLength(3);
    expect(kernels[2]).not.toBe(kernels[1]);
    expect(victim !== null && alive(victim)).toBe(false);
  });

  it('attaches to an existing kernel by id; when it dies a fresh kernel of its kernelspec goes on; the engine never shuts the attached one down', async () => {
    const dir = makeWorkspace({
      program: '---\nbudget_s: 1\ntimeout_s: 90\nsandbox: off\n---\nGo.\n',
      train: standInTrain({ metric: '1.000000' }),
    });
    const settings = serverSettings(server.url, server.token);
    const attached = await KernelAPI.startNew({ name: 'python3' }, settings);
    const ex = new KernelExecutor({
      serverUrl: server.url,
      token: server.token,
      kernelId: attached.id,
      kernelName: 'ignored-once-attached',
      graceS: 1,
    });
    const proposer = new ScriptedProposer([
      trainProposal('in the attached kernel', { metric: '0.950000' }),
      { description: 'kernel dies', rationale: '', files: { 'train.py': slowTrain() } },
      trainProposal('after', { metric: '0.900000' }),
    ]);
    const l = loop(dir, proposer, ex);
    const kernels: Array<string | null> = [];
    l.on('phase', (_n: number, phase: string) => phase === 'run' && kernels.push(ex.kernelId));
    const pidFile = path.join(dir, 'train.pid');
    let fresh: string | null = null;
    try {
      const running = l.run();
      await waitForPid(pidFile);
      expect(ex.kernelId).toBe(attached.id);
      process.kill(kernelPid(attached.id) as number, 'SIGKILL');
      await running;
      fresh = ex.kernelId;
    } finally {
      await ex.dispose();
      // A failure above must not leave the attached kernel for the next test's kernel count.
      if (!fresh) await KernelAPI.shutdownKernel(attached.id, settings).catch(() => undefined);
    }
    expect(experiments(dir, 'k1').map(e => [e.description, e.status])).toEqual([
      ['baseline', 'keep'],
      ['in the attached kernel', 'keep'],
      ['kernel dies', 'crash'],
      ['after', 'keep'],
    ]);
    // The baseline's run phase starts before the executor has attached.
    expect(kernels).toEqual([null, attached.id, attached.id, fresh]);
    expect(fresh).not.toBe(attached.id);
    expect(ex.kernelName).toBe('python3');
    // The fresh kernel was the engine's and is gone; the attached one is the researcher's (the server restarted it).
    const listed = (await KernelAPI.listRunning(settings)).map(k => k.id);
    await KernelAPI.shutdownKernel(attached.id, settings);
    expect(listed).toContain(attached.id);
    expect(listed).not.toContain(fresh);
  });

  it('refuses --kernel-id of a kernel that does not exist, in one line', async () => {
    const dir = makeWorkspace();
    const r = await cli([
      'run',
      dir,
      '--tag',
      'k1',
      '--proposer',
      'offline',
      '--executor',
      'kernel',
      '--server-url',
      server.url,
      '--token',
      server.token,
      '--kernel-id',
      '00000000-0000-0000-0000-000000000000',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(
      /^autoresearch: there is no kernel 00000000-0000-0000-0000-000000000000 on http:\/\/127\.0\.0\.1:\d+\/: pass the id of a running kernel .+$/,
    );
  });

  it('keeps reporting activity while a run prints nothing, so idle cullers outside the server see it busy', async () => {
    const dir = makeWorkspace({
      train: 'import time\nprint("started", flush=True)\ntime.sleep(4)\n' + standInTrain({ metric: '1.000000' }),
    });
    const ex = new KernelExecutor({ serverUrl: server.url, token: server.token, graceS: 1, heartbeatS: 0.5 });
    const logFile = path.join(dir, '.autoresearch', 'quiet.log');
    fs.mkdirSync(path.dirname(logFile), { recursive: true });
    const log = new LogCapture(logFile);
    const seen = new Set<string>();
    try {
      const running = ex.run({ cwd: dir, command: 'python train.py', timeoutS: 30, log });
      await waitFor(() => fs.readFileSync(logFile, 'utf8').includes('started'), 60_000, 'the run to start');
      const settings = serverSettings(server.url, server.token);
      for (let i = 0; i < 12; i++) {
        const model = await KernelAPI.getKernelModel(ex.kernelId as string, settings);
        seen.add(String((model as { last_activity?: string }).last_activity));
        await new Promise(r => setTimeout(r, 250));
      }
      expect(await running).toMatchObject({ exitCode: 0 });
    } finally {
      log.close();
      await ex.dispose();
    }
    // The script was silent for those 3 s; the heartbeats moved the kernel's last_activity on.
    expect(seen.size).toBeGreaterThanOrEqual(3);
    // They are reports to the engine, not output: the log holds only what the script printed.
    expect(fs.readFileSync(logFile, 'utf8')).not.toMatch(/alive|nonce/);
  });

  it('runs from the bundled command with --executor kernel, and shuts its kernel down at the end', async () => {
    const dir = makeWorkspace();
    const r = await cli([
      'run',
      dir,
      '--tag',
      'k1',
      '--proposer',
      'offline',
      '--max-experiments',
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
    // No connection chatter from @jupyterlab/services in the terminal output.
    expect(r.stdout).not.toMatch(/WebSocket|Kernel:/);
    const exps = experiments(dir, 'k1');
    expect(exps).toHaveLength(2);
    expect(exps[0]).toMatchObject({ status: 'keep', description: 'baseline' });
    expect(fs.readFileSync(exps[0].log_path as string, 'utf8')).toContain('loss 3.2500');
    const kernels = (await (
      await fetch(`${server.url}api/kernels`, { headers: { Authorization: `token ${server.token}` } })
    ).json()) as unknown[];
    expect(kernels).toEqual([]);
  });

  it('refuses --executor kernel without a server, in one line', async () => {
    const dir = makeWorkspace();
    const r = await cli(['run', dir, '--tag', 'k1', '--proposer', 'offline', '--executor', 'kernel'], {
      env: { JUPYTER_SERVER_URL: '' },
    });
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toBe(
      'autoresearch: --executor kernel needs a Jupyter server: pass --server-url URL (or set JUPYTER_SERVER_URL) and --token T (or JUPYTER_TOKEN)',
    );
  });

  it('stops with one line when the server cannot start a kernel', async () => {
    const dir = makeWorkspace();
    const r = await cli([
      'run',
      dir,
      '--tag',
      'k1',
      '--proposer',
      'offline',
      '--executor',
      'kernel',
      '--server-url',
      server.url,
      '--token',
      server.token,
      '--kernel',
      'no-such-kernel',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim()).toMatch(
      /^autoresearch: cannot start a "no-such-kernel" kernel on http:\/\/127\.0\.0\.1:\d+\/: .+$/,
    );
  });

  it('a stop interrupts the run: the experiment is recorded as interrupted, its group dies, the kernel lives on', async () => {
    const dir = makeWorkspace({
      program: '---\nbudget_s: 1\ntimeout_s: 90\nsandbox: off\n---\nGo.\n',
      train: standInTrain({ metric: '1.000000' }),
    });
    const ex = executor();
    const controller = new AbortController();
    const l = loop(
      dir,
      new ScriptedProposer([{ description: 'stopped', rationale: '', files: { 'train.py': slowTrain() } }]),
      ex,
      controller.signal,
    );
    const pidFile = path.join(dir, 'train.pid');
    try {
      const running = l.run();
      await waitForPid(pidFile);
      const kernel = ex.kernelId;
      controller.abort('stop');
      const end = await running;
      expect(end.reason).toBe('stop');
      expect(ex.kernelId).toBe(kernel);
    } finally {
      await ex.dispose();
    }
    const [, stopped] = experiments(dir, 'k1');
    expect(stopped).toMatchObject({ status: 'interrupted', reason: 'stopped by the user while training' });
    expect(stopped.timings.run_s).toBeLessThan(20);
    const trainPid = Number(fs.readFileSync(pidFile, 'utf8'));
    await waitFor(() => !alive(trainPid), 5000, 'the training run to die');
  });

  it('ends a stubborn run by itself at its backstop when the engine that should interrupt it is gone', async () => {
    const settings = serverSettings(server.url, server.token);
    const model = await KernelAPI.startNew({ name: 'python3' }, settings);
    const kernel = new KernelConnection({ model, serverSettings: settings, handleComms: false });
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-backstop-'));
    fs.writeFileSync(path.join(cwd, 'train.py'), stubbornTrain());
    try {
      expect(await kernelReady(kernel, 90)).toBe(true);
      const reports: KernelReport[] = [];
      // Nobody interrupts this run: only the runner's own backstop (2 s) can end it.
      const future = kernel.requestExecute({
        code: runnerCode({
          guard: { cmd: `"${resolvePython()}" train.py`, sandbox: 'off' },
          cwd,
          env: {},
          graceS: 1,
          nonce: 'n1',
          backstopS: 2,
        }),
      });
      future.onIOPub = (msg: KernelMessage.IIOPubMessage) => {
        if (msg.header.msg_type === 'display_data') {
          const r = (msg.content as KernelMessage.IDisplayDataMsg['content']).data[RUN_MIME] as
            KernelReport | undefined;
          if (r) reports.push(r);
        }
      };
      const t = Date.now();
      await future.done;
      expect((Date.now() - t) / 1000).toBeLessThan(30);
      const exit = reports.find(r => r.event === 'exit');
      expect(exit).toMatchObject({ event: 'exit', backstop: true, interrupted: true, exit_code: null });
      // SIGKILL once it ignores SIGTERM; SIGTERM when the backstop came before it could ignore it.
      expect(['SIGTERM', 'SIGKILL']).toContain((exit as { signal: string }).signal);
      const pid = Number(fs.readFileSync(path.join(cwd, 'train.pid'), 'utf8'));
      await waitFor(() => !alive(pid), 10_000, 'the stubborn run to be gone');
    } finally {
      kernel.dispose();
      await KernelAPI.shutdownKernel(model.id, settings);
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('after a kill -9 of the engine, the next one interrupts the run left on the kernel and shuts that kernel down', async () => {
    // The first run of train.py (the baseline) takes a minute; the re-run after the resume is quick.
    const train =
      'import os, time\nif os.path.exists("slow"):\n    os.remove("slow")\n    open("train.pid", "w").write(str(os.getpid()))\n    time.sleep(60)\n' +
      standInTrain({ metric: '1.000000' });
    const dir = makeWorkspace({ program: '---\nbudget_s: 1\ntimeout_s: 120\nsandbox: off\n---\nGo.\n', train });
    fs.writeFileSync(path.join(dir, 'slow'), '');
    const args = [
      'run',
      dir,
      '--tag',
      'k9',
      '--proposer',
      'offline',
      '--executor',
      'kernel',
      '--server-url',
      server.url,
      '--token',
      server.token,
    ];
    const engine = startCli([...args, '--max-experiments', '0']);
    const pidFile = path.join(dir, 'train.pid');
    const training = await waitForPid(pidFile, 'the baseline to start training');
    const info = JSON.parse(fs.readFileSync(path.join(dir, '.autoresearch', 'engine.json'), 'utf8'));
    expect(info.kernels).toHaveLength(1);
    const left = info.kernels[0] as { id: string; owned: boolean };
    expect(left.owned).toBe(true);
    engine.kill('SIGKILL');
    await finished(engine);
    expect(alive(training)).toBe(true); // nobody ended it yet: the engine is gone, its kernel runs on

    const resumed = await cli([...args, '--resume', '--max-experiments', '0']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    await waitFor(() => !alive(training), 15_000, 'the left-over training run to end');
    const kernels = (await KernelAPI.listRunning(serverSettings(server.url, server.token))).map(k => k.id);
    expect(kernels).not.toContain(left.id);
    expect(experiments(dir, 'k9').map(e => e.status)).toEqual(['interrupted', 'keep']);
  });
});
