/**
 * Nothing a run starts outlives it, even when the run kills its own guard, forks without end,
 * or its engine is killed: each run has its own cgroup (killed whole, capped by pids.max), and
 * the engine ends what a dead guard left at once. Real processes, real cgroups (CI runs as root).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { KernelExecutor } from '../../src/engine/executor/kernel';
import { SubprocessExecutor } from '../../src/engine/executor/subprocess';
import type { Executor, RunIsolation, RunOutcome } from '../../src/engine/executor/types';
import { LogCapture } from '../../src/engine/experiment/log-capture';
import { startJupyterServer, type JupyterServer } from '../helpers/jupyter-server';
import { alive, cli, experiments, finished, makeWorkspace, startCli, waitFor } from '../helpers/workspace';

const PYTHON = path.join(__dirname, '..', '..', '.venv', 'bin', 'python');
const GRACE_S = 1;

function isolation(sandbox: 'on' | 'off', processes?: number): RunIsolation {
  return { sandbox, network: false, readonly: [], ...(processes && { limits: { processes } }) };
}

async function run(
  ex: Executor,
  dir: string,
  o: { timeoutS: number; isolation: RunIsolation },
): Promise<{ outcome: RunOutcome; log: string; cgroups: string[] }> {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-log-')), 'run.log');
  const log = new LogCapture(file);
  const cgroups: string[] = [];
  const outcome = await ex.run({
    cwd: dir,
    command: 'python train.py',
    timeoutS: o.timeoutS,
    log,
    python: PYTHON,
    env: { PATH: `${path.dirname(PYTHON)}:${process.env.PATH}` },
    isolation: o.isolation,
    onSpawn: (_, c) => cgroups.push(...(c ?? [])),
  });
  log.close();
  return { outcome, log: fs.readFileSync(file, 'utf8'), cgroups };
}

/**
 * A train.py that leaves a daemon (setsid, double fork, SIGTERM ignored, holding the run's
 * output), then SIGKILLs its run guard (the ancestor running run-guard.py) where it can see it,
 * and sleeps on.
 */
const GUARD_KILLER = `import os, signal, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open("daemon.pid", "w").write(str(os.getpid()))
        time.sleep(300)
    os._exit(0)
while not os.path.exists("daemon.pid") or not open("daemon.pid").read():
    time.sleep(0.05)
pid, guard = os.getppid(), None
while pid > 1 and guard is None:
    if b"PR_SET_CHILD_SUBREAPER" in open("/proc/%d/cmdline" % pid, "rb").read():
        guard = pid
    pid = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
print("guard:", "killed" if guard else "not found", flush=True)
if guard:
    os.kill(guard, signal.SIGKILL)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(300)
`;

/** A train.py that forks children that sleep, until a fork is refused (then it goes on, quietly). */
const FORK_BOMB = `import os, time
n = 0
try:
    while n < 100000:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    print("fork refused after %d: %s" % (n, e), flush=True)
print("---")
print("val_bpb: 1.0")
`;

/**
 * The live processes working in `dir` but the run guard the executor keeps there (a sandboxed
 * one's pid file holds its pid in the sandbox, not here).
 */
function workingIn(dir: string): number[] {
  const real = fs.realpathSync(dir);
  return fs
    .readdirSync('/proc')
    .filter(n => /^\d+$/.test(n))
    .map(Number)
    .filter(pid => {
      try {
        const guard = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('PR_SET_CHILD_SUBREAPER');
        return fs.readlinkSync(`/proc/${pid}/cwd`) === real && alive(pid) && !guard;
      } catch {
        return false;
      }
    });
}

describe('a run that kills its guard', () => {
  it('a run that SIGKILLs its guard and leaves a SIGTERM-ignoring daemon (setsid, double fork) ends with the daemon dead and the engine within timeout + grace', async () => {
    const dir = makeWorkspace({ train: GUARD_KILLER });
    const ex = new SubprocessExecutor(GRACE_S);
    try {
      const timeoutS = 20;
      const { outcome, log, cgroups } = await run(ex, dir, { timeoutS, isolation: isolation('off') });
      expect(log).toContain('guard: killed');
      expect(outcome.seconds).toBeLessThan(timeoutS + GRACE_S);
      expect(outcome.timedOut).toBe(false); // ended when the guard died, not at the deadline
      expect(outcome.failure).toMatch(/the run guard was killed during the run/);
      expect(log).toMatch(/^\[autoresearch\] error: the run guard was killed during the run/m);
      await waitFor(() => workingIn(dir).length === 0, 2000, 'the daemon to be dead');
      expect(cgroups.length).toBeGreaterThan(0); // root: the run had its own cgroup…
      for (const c of cgroups) expect(fs.existsSync(c)).toBe(false); // …killed and removed

      // A fresh guard runs the next experiment.
      fs.writeFileSync(path.join(dir, 'train.py'), 'print("---")\nprint("val_bpb: 1.0")\n');
      const next = await run(ex, dir, { timeoutS, isolation: isolation('off') });
      expect(next.outcome).toMatchObject({ exitCode: 0, sandbox: 'off' });
      expect(next.outcome.failure).toBeUndefined();
    } finally {
      await ex.dispose();
    }
  }, 60_000);

  describe('on a kernel', () => {
    let server: JupyterServer;
    beforeAll(async () => {
      vi.spyOn(console, 'debug').mockImplementation(() => undefined); // @jupyterlab/services narrates
      server = await startJupyterServer();
    }, 120_000);
    afterAll(async () => {
      await server?.stop();
    });

    it('a run that SIGKILLs its guard in the kernel and leaves a SIGTERM-ignoring daemon (setsid, double fork) ends with the daemon dead within timeout + grace', async () => {
      const dir = makeWorkspace({ train: GUARD_KILLER });
      const ex = new KernelExecutor({ serverUrl: server.url, token: server.token, kernelName: 'python3', graceS: 1 });
      try {
        const timeoutS = 20;
        const { outcome, log } = await run(ex, dir, { timeoutS, isolation: isolation('off') });
        expect(log).toContain('guard: killed');
        expect(outcome.seconds).toBeLessThan(timeoutS + GRACE_S);
        expect(outcome.timedOut).toBe(false);
        expect(outcome.failure).toMatch(/the run guard was killed during the run/);
        await waitFor(() => workingIn(dir).length === 0, 2000, 'the daemon to be dead');
      } finally {
        await ex.dispose();
      }
    }, 120_000);
  });

  it('a sandboxed run cannot see its guard to kill it, and its SIGTERM-ignoring daemon dies at the deadline', async () => {
    const dir = makeWorkspace({ train: GUARD_KILLER });
    const ex = new SubprocessExecutor(GRACE_S);
    try {
      const timeoutS = 4;
      const { outcome, log } = await run(ex, dir, { timeoutS, isolation: isolation('on') });
      expect(outcome.sandbox).toBe('on');
      expect(log).toContain('guard: not found');
      expect(outcome.timedOut).toBe(true);
      expect(outcome.seconds).toBeLessThan(timeoutS + GRACE_S + 3);
      expect(workingIn(dir)).toEqual([]);
    } finally {
      await ex.dispose();
    }
  }, 60_000);
});

describe.each(['off', 'on'] as const)('a fork bomb, sandbox %s', sandbox => {
  it('a fork bomb run is capped by pids.max and is a crash', async () => {
    const dir = makeWorkspace({ train: FORK_BOMB });
    const ex = new SubprocessExecutor(GRACE_S);
    try {
      const { outcome, log, cgroups } = await run(ex, dir, { timeoutS: 30, isolation: isolation(sandbox, 64) });
      expect(outcome.sandbox).toBe(sandbox);
      // Root: RLIMIT_NPROC does not hold it back, the cgroup does (64 tasks, the run's own among them).
      expect(log).toMatch(/fork refused after (\d\d): /);
      expect(Number(/fork refused after (\d+)/.exec(log)?.[1])).toBeLessThan(64);
      expect(outcome.failure).toMatch(/^reached its process limit \(64 processes and threads; limits: processes/);
      expect(log).toContain('[autoresearch] error: the run reached its process limit (64');
      for (const c of cgroups) expect(fs.existsSync(c)).toBe(false);
    } finally {
      await ex.dispose();
    }
  }, 60_000);
});

/** Process groups engine.json records for the run in progress. */
function recorded(dir: string): { run_pgids?: number[]; run_cgroups?: string[] } {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, '.autoresearch', 'engine.json'), 'utf8'));
  } catch {
    return {};
  }
}

// With the sandbox on, the guard's death ends the sandbox (bubblewrap dies with it, and its PID
// namespace with it): only an unsandboxed run can leave a daemon for the next engine.
describe('an engine killed mid-run, sandbox off', () => {
  it("kill -9 of the engine, then --resume, kills the run's cgroup leftovers", async () => {
    // A daemon the run's group does not hold (setsid, double fork, SIGTERM ignored), and a run
    // that sleeps; the guard killed too (the OOM killer's choice, say), so only engine.json is left.
    // While the file `hang` exists: once the resumed engine runs it again, it trains and ends.
    const hang = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-hang-')), 'hang');
    fs.writeFileSync(hang, '');
    const train = `import os\nif not os.path.exists(${JSON.stringify(hang)}):\n    print("---")\n    print("val_bpb: 1.0")\n    raise SystemExit\n${GUARD_KILLER.replace(/daemon\.pid/g, `${hang}.pid`).replace('pid, guard = os.getppid(), None', 'pid, guard = 1, None')}`;
    const dir = makeWorkspace({ train, program: '---\nbudget_s: 1\ntimeout_s: 60\n---\nMake val_bpb lower.\n' });
    const child = startCli(['run', dir, '--tag', 't1', '--sandbox', 'off', '--noise-runs', '1']);
    const done = finished(child);
    await waitFor(
      () =>
        fs.existsSync(`${hang}.pid`) &&
        fs.readFileSync(`${hang}.pid`, 'utf8') !== '' &&
        recorded(dir).run_pgids?.length === 2,
      60_000,
      'the run to start its daemon',
    );
    const daemon = Number(fs.readFileSync(`${hang}.pid`, 'utf8'));
    const { run_pgids = [], run_cgroups = [] } = recorded(dir);
    child.kill('SIGSTOP');
    process.kill(run_pgids[0], 'SIGKILL');
    child.kill('SIGKILL');
    await done;
    await new Promise(r => setTimeout(r, 1000));
    expect(alive(daemon)).toBe(true); // nothing else ends it: it would sleep 300 s more
    fs.rmSync(hang);

    const r = await cli(['run', dir, '--resume', '--max-experiments', '0', '--sandbox', 'off']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    await waitFor(() => !alive(daemon), 5000, "the daemon in the run's cgroup to be killed");
    // cgroup.kill is asynchronous: what it killed may take a moment to be gone from /proc.
    await waitFor(() => workingIn(dir).length === 0, 5000, "every process of the run's cgroup to be gone");
    for (const c of run_cgroups) expect(fs.existsSync(c)).toBe(false);
    expect(experiments(dir, 't1')[0]).toMatchObject({ status: 'interrupted' });
  }, 120_000);
});

describe('a forged engine.json', () => {
  it("naming a cgroup that is not a run's (a forged engine.json) does not get it killed by the next engine", async () => {
    const { acquireEngineLock } = await import('../../src/engine/run/engine-lock');
    const dir = makeWorkspace();
    const file = path.join(dir, '.autoresearch', 'engine.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const v2 = fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .find(l => / - cgroup2 /.test(l))
      ?.split(' ')[4];
    expect(v2, 'a cgroup2 mount').toBeTruthy();
    const bystander = path.join(v2 as string, `bystander-${process.pid}`);
    fs.mkdirSync(bystander);
    const sleeper = spawn('sleep', ['300'], { stdio: 'ignore' });
    try {
      fs.writeFileSync(path.join(bystander, 'cgroup.procs'), String(sleeper.pid));
      const named = [bystander, `${bystander}/../autoresearch-run-x`, 'autoresearch-run-relative'];
      const dead = { pid: 999_999_999, tag: 't', started: new Date().toISOString(), run_pgid: null };
      fs.writeFileSync(file, JSON.stringify({ ...dead, run_cgroups: named }));
      acquireEngineLock(dir, 't');
      expect(alive(sleeper.pid as number)).toBe(true);
      expect(fs.existsSync(bystander)).toBe(true);
    } finally {
      sleeper.kill('SIGKILL');
      await new Promise(r => sleeper.once('exit', r));
      fs.rmdirSync(bystander);
    }
  });
});
