/**
 * The kernel executor on Jupyter Enterprise Gateway, as test/kernel-gateway.test.ts runs it on
 * Kernel Gateway: EG (its local process proxy) on 127.0.0.1 in a mount namespace where a tmpfs
 * hides the workspaces, a `jupyter server` pointed at it with GatewayClient.url, and the engine's
 * command line talking to that server (or to EG itself), so every workspace is shipped.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hiddenWorkspace,
  startGatewayServer,
  startHiddenEnterpriseGateway,
  type Gateway,
  type Service,
} from './helpers/kernel-gateway';
import { alive, cli, experiments, finished, journal, standInTrain, startCli, waitFor } from './helpers/workspace';

let base: string;
let hidden: string;
let gateway: Gateway;
let server: Service & { root: string };
let gatewayStartMs: number;

beforeAll(async () => {
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-eg-root-'));
  hidden = path.join(base, 'hidden');
  fs.mkdirSync(hidden);
  const t0 = Date.now();
  gateway = await startHiddenEnterpriseGateway(hidden);
  gatewayStartMs = Date.now() - t0;
  server = await startGatewayServer(gateway, base);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await gateway?.stop();
  fs.rmSync(base, { recursive: true, force: true });
});

/** The kernels a service lists (EG lists them: --EnterpriseGatewayApp.list_kernels=True). */
async function kernelsOn(svc: Service): Promise<Array<{ id: string }>> {
  const r = await fetch(`${svc.url}api/kernels`, { headers: { Authorization: `token ${svc.token}` } });
  expect(r.status).toBe(200);
  return (await r.json()) as Array<{ id: string }>;
}

/** Kernel ids in EG's log lines of one kind ("Kernel started: <id>", "Kernel shutdown: <id>"). */
function logged(what: 'started' | 'shutdown'): string[] {
  return [...gateway.output().matchAll(new RegExp(`Kernel ${what}: ([0-9a-f-]{36})`, 'g'))].map(m => m[1]).sort();
}

/** A stand-in train.py that says where it runs, in which kernel, and what of the engine's environment it got. */
function whereTrain(sleep = 0.2): string {
  return (
    [
      'import os',
      'print("cwd:", os.getcwd())',
      'print("kernel:", os.environ.get("KERNEL_ID"))',
      'print("KERNEL_AUTORESEARCH_TEST:", os.environ.get("KERNEL_AUTORESEARCH_TEST"))',
      'print("AUTORESEARCH_EG_ENGINE_ONLY:", os.environ.get("AUTORESEARCH_EG_ENGINE_ONLY"))',
      `print("hidden folder visible:", os.path.exists(${JSON.stringify(hidden)}) and bool(os.listdir(${JSON.stringify(hidden)})))`,
    ].join('\n') +
    '\n' +
    standInTrain({ sleep })
  );
}

describe('the kernel executor through Jupyter Enterprise Gateway', () => {
  it('The same two-worker run on Enterprise Gateway: every experiment recorded once, each worker in a kernel of its own, shipped, and every kernel gone at the end', async () => {
    const before = logged('started').length;
    const dir = hiddenWorkspace(hidden, { train: whereTrain() });
    const t0 = Date.now();
    const r = await cli([
      'run',
      dir,
      '--tag',
      'eg',
      '--proposer',
      'offline',
      '--workers',
      '2',
      '--max-experiments',
      '5',
      '--noise-runs',
      '1',
      '--executor',
      'kernel',
      '--server-url',
      server.url,
      '--token',
      server.token,
    ]);
    const runMs = Date.now() - t0;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const exps = experiments(dir, 'eg');
    // The baseline and 5 experiments, each recorded once, none lost to the gateway.
    expect(exps.map(e => e.n).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(exps.map(e => e.status).filter(s => s !== 'keep' && s !== 'discard')).toEqual([]);
    expect(journal(dir, 'eg').at(-1)).toMatchObject({ type: 'run_end', reason: 'max-experiments' });
    const shipRoot = path.join(gateway.home, '.autoresearch', 'workspaces');
    const kernelOf = new Map<number, Set<string>>();
    const folderOf = new Map<number, Set<string>>();
    for (const e of exps.slice(1)) {
      const log = fs.readFileSync(e.log_path as string, 'utf8');
      expect(log).toContain('hidden folder visible: False');
      expect(log).toContain('val_bpb:');
      const folder = new RegExp(`^cwd: (${shipRoot}/[^\\n]+)$`, 'm').exec(log)?.[1];
      const kernel = /^kernel: ([0-9a-f-]{36})$/m.exec(log)?.[1];
      expect(folder, log).toBeDefined();
      expect(kernel, log).toBeDefined();
      const w = e.worker as number;
      kernelOf.set(w, (kernelOf.get(w) ?? new Set()).add(kernel as string));
      folderOf.set(w, (folderOf.get(w) ?? new Set()).add(folder as string));
    }
    // Both workers trained, each in one kernel and one shipped folder of its own.
    expect([...kernelOf.keys()].sort()).toEqual([1, 2]);
    const [k1, k2] = [[...(kernelOf.get(1) ?? [])], [...(kernelOf.get(2) ?? [])]];
    expect([k1.length, k2.length]).toEqual([1, 1]);
    expect(k1[0]).not.toBe(k2[0]);
    const [f1, f2] = [[...(folderOf.get(1) ?? [])], [...(folderOf.get(2) ?? [])]];
    expect([f1.length, f2.length]).toEqual([1, 1]);
    expect(f1[0]).not.toBe(f2[0]);
    // The engine shut down every kernel it started on EG: none listed, each start matched by a shutdown.
    expect(await kernelsOn(gateway)).toEqual([]);
    expect(await kernelsOn(server)).toEqual([]);
    const started = logged('started');
    expect(started.length - before).toBeGreaterThanOrEqual(2);
    expect(started.filter(id => !logged('shutdown').includes(id))).toEqual([]);
    for (const id of [k1[0], k2[0]]) expect(started).toContain(id);
    console.log(`[enterprise-gateway] EG answered in ${gatewayStartMs} ms; the 2-worker run took ${runMs} ms`);
  });

  it('the engine pointed at EG itself hands the kernel its KERNEL_* variables, and only those', async () => {
    const dir = hiddenWorkspace(hidden, { train: whereTrain() });
    const r = await cli(
      [
        'run',
        dir,
        '--tag',
        'direct',
        '--proposer',
        'offline',
        '--max-experiments',
        '1',
        '--noise-runs',
        '1',
        '--executor',
        'kernel',
        '--server-url',
        gateway.url,
        '--token',
        gateway.token,
      ],
      { env: { KERNEL_AUTORESEARCH_TEST: 'gpu-pool-a', AUTORESEARCH_EG_ENGINE_ONLY: 'engine side' } },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const exps = experiments(dir, 'direct');
    expect(exps.map(e => e.status).filter(s => s !== 'keep' && s !== 'discard')).toEqual([]);
    expect(exps).toHaveLength(2);
    for (const e of exps) {
      const log = fs.readFileSync(e.log_path as string, 'utf8');
      expect(log).toContain('KERNEL_AUTORESEARCH_TEST: gpu-pool-a');
      // The kernel's environment is the gateway's: nothing else of the engine's goes over.
      expect(log).toContain('AUTORESEARCH_EG_ENGINE_ONLY: None');
      expect(log).toMatch(/^\[autoresearch\] workspace shipped to /m);
    }
    expect(await kernelsOn(gateway)).toEqual([]);
  });

  it('a stop mid-run interrupts both workers: each experiment interrupted once, their training ended, the kernels gone', async () => {
    // The baseline runs at once; every later run writes its pid where this side can read it (the
    // gateway's home) and sleeps. No sandbox, so the pid is the host's.
    const train =
      [
        'import os, sys, time',
        '_dir = os.path.join(os.path.expanduser("~"), ".cache", "autoresearch", "eg-stop")',
        'os.makedirs(os.path.join(_dir, "pids"), exist_ok=True)',
        '_runs = os.path.join(_dir, "runs")',
        '_before = len(open(_runs).read().splitlines()) if os.path.exists(_runs) else 0',
        'open(_runs, "a").write("run\\n")',
        'if _before > 0:',
        '    open(os.path.join(_dir, "pids", str(os.getpid())), "w").close()',
        '    time.sleep(60)',
      ].join('\n') + `\n${standInTrain()}`;
    const dir = hiddenWorkspace(hidden, {
      program: '---\nbudget_s: 1\ntimeout_s: 90\nsandbox: off\n---\nGo.\n',
      train,
    });
    const pids = path.join(gateway.home, '.cache', 'autoresearch', 'eg-stop', 'pids');
    const child = startCli([
      'run',
      dir,
      '--tag',
      'stop',
      '--proposer',
      'offline',
      '--workers',
      '2',
      '--noise-runs',
      '1',
      '--executor',
      'kernel',
      '--server-url',
      server.url,
      '--token',
      server.token,
    ]);
    const done = finished(child);
    try {
      await waitFor(
        () => fs.existsSync(pids) && fs.readdirSync(pids).length === 2,
        60_000,
        'both training runs to start',
      );
    } catch (e) {
      child.kill('SIGKILL');
      throw e;
    }
    const running = fs.readdirSync(pids).map(Number);
    const t0 = Date.now();
    child.kill('SIGINT');
    const r = await done;
    const stopMs = Date.now() - t0;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const exps = experiments(dir, 'stop');
    expect(exps[0].status).not.toBe('interrupted');
    expect(
      exps
        .slice(1)
        .map(e => [e.status, e.worker, e.reason])
        .sort(),
    ).toEqual([
      ['interrupted', 1, 'stopped by the user while training'],
      ['interrupted', 2, 'stopped by the user while training'],
    ]);
    expect(journal(dir, 'stop').at(-1)).toMatchObject({ type: 'run_end', reason: 'signal' });
    await waitFor(() => running.every(p => !alive(p)), 15_000, 'both remote training runs to end');
    expect(await kernelsOn(gateway)).toEqual([]);
    expect(stopMs).toBeLessThan(30_000);
    console.log(`[enterprise-gateway] the stop took ${stopMs} ms`);
  });
});
