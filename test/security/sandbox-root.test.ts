/**
 * A training run as root inside the sandbox, attacking it from within: it has no capabilities,
 * is nobody in a user namespace of its own, cannot unmount, remount or chown, cannot make a
 * namespace of its own, sees its own /proc only, and cannot rewrite program.md to switch the
 * sandbox off for later runs. Where the kernel refuses the user namespace, `auto` says so and
 * `on` refuses. Real bubblewrap, the real run guard (through the subprocess executor) and the
 * real engine through its CLI; these tests run as root, as CI does.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GUARD_SOURCE, PROTECTED } from '../../src/engine/executor/guard';
import { SubprocessExecutor } from '../../src/engine/executor/subprocess';
import type { RunIsolation, RunOutcome } from '../../src/engine/executor/types';
import { LogCapture } from '../../src/engine/experiment/log-capture';
import { limitReached } from '../../src/engine/experiment/measure';
import { cli, journal, makeWorkspace } from '../helpers/workspace';

const PYTHON = path.join(__dirname, '..', '..', '.venv', 'bin', 'python');
const ON: RunIsolation = { sandbox: 'on', network: false, readonly: ['prepare.py'] };

beforeAll(() => {
  if (process.geteuid?.() !== 0)
    throw new Error('these tests attack the sandbox as root: run them as root, as CI does');
  if (!fs.existsSync('/usr/bin/bwrap') && !fs.existsSync('/usr/local/bin/bwrap')) {
    throw new Error('bubblewrap is missing: apt-get install bubblewrap (make setup installs it)');
  }
});

let ex: SubprocessExecutor;
beforeAll(() => {
  ex = new SubprocessExecutor(1);
});
afterAll(async () => {
  await ex.dispose();
});

interface Ran {
  outcome: RunOutcome;
  log: string;
}

/** Runs `train` (Python source) as the workspace's train.py through the executor. */
async function run(
  train: string,
  o: { isolation?: RunIsolation; env?: Record<string, string>; executor?: SubprocessExecutor; dir?: string } = {},
): Promise<Ran & { dir: string }> {
  const dir = o.dir ?? makeWorkspace();
  fs.writeFileSync(path.join(dir, 'train.py'), train);
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-log-')), 'run.log');
  const log = new LogCapture(file);
  const outcome = await (o.executor ?? ex).run({
    cwd: dir,
    command: 'python train.py',
    timeoutS: 60,
    log,
    python: PYTHON,
    env: { PATH: `${path.dirname(PYTHON)}:${process.env.PATH}`, ...o.env },
    isolation: o.isolation ?? ON,
  });
  log.close();
  return { outcome, log: fs.readFileSync(file, 'utf8'), dir };
}

/** Python that runs a command and prints `<what>: ok` or `<what>: refused`. */
const ATTEMPT = `import os, subprocess
def attempt(what, argv):
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(what + (": ok" if r.returncode == 0 else ": refused"), flush=True)
def tries(what, fn):
    try:
        fn()
        print(what + ": ok", flush=True)
    except OSError:
        print(what + ": refused", flush=True)
`;

function fakeHome(): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-home-'));
  fs.mkdirSync(path.join(home, '.ssh'));
  fs.writeFileSync(path.join(home, '.ssh', 'id_ed25519'), 'PRIVATE KEY');
  fs.writeFileSync(path.join(home, '.gitconfig'), '[http]\n\textraHeader = Authorization: Bearer GITCONFIG-SECRET\n');
  fs.mkdirSync(path.join(home, '.config', 'git'), { recursive: true });
  fs.writeFileSync(path.join(home, '.config', 'git', 'config'), '[credential]\n\thelper = store XDG-GIT-SECRET\n');
  return home;
}

describe('a training run as root inside the sandbox', () => {
  it('has no capabilities (CapEff 0), no new privileges (NoNewPrivs 1) and is nobody (uid 65534) inside', async () => {
    const { outcome, log } = await run(
      'for line in open("/proc/self/status"):\n    if line.startswith(("Cap", "NoNewPrivs", "Uid", "Gid")):\n        print(line.strip())\n',
    );
    expect(outcome.exitCode).toBe(0);
    expect(outcome.missing).toBeUndefined();
    for (const cap of ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb']) {
      expect(log).toMatch(new RegExp(`^${cap}:\\s+0000000000000000$`, 'm'));
    }
    expect(log).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(log).toMatch(/^Uid:\s+65534\s+65534\s+65534\s+65534$/m);
    expect(log).toMatch(/^Gid:\s+65534\s+65534\s+65534\s+65534$/m);
  }, 60_000);

  it('cannot umount ~/.ssh to read the key under it', async () => {
    const home = fakeHome();
    const key = path.join(home, '.ssh', 'id_ed25519');
    const { log } = await run(
      `${ATTEMPT}attempt("umount", ["umount", ${JSON.stringify(path.join(home, '.ssh'))}])
attempt("lazy umount", ["umount", "-l", ${JSON.stringify(path.join(home, '.ssh'))}])
tries("read ssh key", lambda: open(${JSON.stringify(key)}).read())
`,
      { env: { HOME: home } },
    );
    expect(log).toContain('umount: refused');
    expect(log).toContain('lazy umount: refused');
    expect(log).toContain('read ssh key: refused');
  }, 60_000);

  it('cannot remount .git read-write and plant a hook', async () => {
    const { log, dir } = await run(
      `${ATTEMPT}attempt("remount .git", ["mount", "-o", "remount,rw,bind", ".git"])
attempt("remount .git without bind", ["mount", "-o", "remount,rw", ".git"])
attempt("bind over .git", ["mount", "--bind", "/tmp", ".git/hooks"])
def plant():
    with open(".git/hooks/post-commit", "w") as f:
        f.write("#!/bin/sh\\necho planted > /tmp/planted\\n")
tries("plant hook", plant)
`,
    );
    expect(log).toContain('remount .git: refused');
    expect(log).toContain('remount .git without bind: refused');
    expect(log).toContain('bind over .git: refused');
    expect(log).toContain('plant hook: refused');
    expect(fs.existsSync(path.join(dir, '.git', 'hooks', 'post-commit'))).toBe(false);
  }, 60_000);

  it('cannot remount / read-write and write under /usr/local', async () => {
    const probe = `/usr/local/ar-sandbox-probe-${process.pid}-${Date.now()}`;
    try {
      const { log } = await run(
        `${ATTEMPT}attempt("remount /", ["mount", "-o", "remount,rw", "/"])
attempt("remount / bind", ["mount", "-o", "remount,rw,bind", "/"])
attempt("remount /usr/local", ["mount", "-o", "remount,rw,bind", "/usr/local"])
tries("write /usr/local", lambda: open(${JSON.stringify(probe)}, "w").write("x"))
`,
      );
      expect(log).toContain('remount /: refused');
      expect(log).toContain('remount / bind: refused');
      expect(log).toContain('remount /usr/local: refused');
      expect(log).toContain('write /usr/local: refused');
      expect(fs.existsSync(probe)).toBe(false);
    } finally {
      fs.rmSync(probe, { force: true });
    }
  }, 60_000);

  it('cannot chown a file, nor make a namespace of its own to gain capabilities there', async () => {
    const { log, dir } = await run(
      `${ATTEMPT}open("mine", "w").write("x")
tries("chown", lambda: os.chown("mine", 1234, 1234))
tries("chown prepare.py", lambda: os.chown("prepare.py", 1234, 1234))
attempt("user namespace", ["unshare", "--user", "--map-root-user", "true"])
attempt("mount namespace", ["unshare", "--mount", "true"])
`,
    );
    expect(log).toContain('chown: refused');
    expect(log).toContain('chown prepare.py: refused');
    expect(log).toContain('user namespace: refused');
    expect(log).toContain('mount namespace: refused');
    expect(fs.statSync(path.join(dir, 'mine')).uid).toBe(0); // the workspace stays the user's, and writable
  }, 60_000);

  it("sees its own /proc only: not the engine's /proc/<pid> nor its environment", async () => {
    const { log } = await run(
      `import os
print("engine visible:", os.path.exists("/proc/${process.pid}"))
try:
    open("/proc/${process.pid}/environ", "rb").read()
    print("engine environ: ok")
except OSError:
    print("engine environ: refused")
print("processes:", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
`,
    );
    expect(log).toContain('engine visible: False');
    expect(log).toContain('engine environ: refused');
    const pids = JSON.parse(/^processes: (\[.*\])$/m.exec(log)?.[1] ?? 'null') as number[];
    expect(Math.max(...pids)).toBeLessThan(100); // its own PID namespace: a handful, numbered from 1
  }, 60_000);

  it('cannot read ~/.gitconfig or ~/.config/git (credential helpers, http.extraHeader)', async () => {
    const home = fakeHome();
    const { log } = await run(
      `${ATTEMPT}tries("read gitconfig", lambda: print(open(${JSON.stringify(path.join(home, '.gitconfig'))}).read()))
tries("read xdg git config", lambda: print(open(${JSON.stringify(path.join(home, '.config', 'git', 'config'))}).read()))
print(subprocess.run(["git", "config", "--global", "--list"], capture_output=True, text=True, env=dict(os.environ, HOME=${JSON.stringify(home)})).stdout)
`,
      { env: { HOME: home } },
    );
    expect(log).not.toContain('GITCONFIG-SECRET');
    expect(log).not.toContain('XDG-GIT-SECRET');
    expect(log).toContain('read xdg git config: refused');
  }, 60_000);

  it('has core dumps off, and cannot turn them back on', async () => {
    const { log } = await run(
      `import resource
print("core:", resource.getrlimit(resource.RLIMIT_CORE))
try:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    print("raise: ok")
except (OSError, ValueError):
    print("raise: refused")
`,
      { isolation: { sandbox: 'off', network: false, readonly: [] } },
    );
    expect(log).toContain('core: (0, 0)');
    expect(log).toContain('raise: refused');
    const sandboxed = await run(`import resource\nprint("core:", resource.getrlimit(resource.RLIMIT_CORE))\n`);
    expect(sandboxed.log).toContain('core: (0, 0)');
  }, 60_000);

  it('cannot write past the file size limit: killed by SIGXFSZ, or refused in Python, with and without the sandbox', async () => {
    for (const sandbox of ['on', 'off'] as const) {
      const isolation: RunIsolation = { sandbox, network: false, readonly: [], limits: { file_size: '1M' } };
      const { outcome, log, dir } = await run(
        // Python ignores SIGXFSZ, and so would the command it starts: as a program of its own would, it takes it.
        `import os, signal
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
os.dup2(os.open("big.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
os.execvp("head", ["head", "-c", "3000000", "/dev/zero"])
`,
        { isolation },
      );
      // Killed by SIGXFSZ: bubblewrap (and a shell that did not exec) pass that on as 128 + its number.
      expect([outcome.signal, outcome.exitCode]).toContainEqual(
        sandbox === 'on' ? 128 + os.constants.signals.SIGXFSZ : expect.toBeOneOf(['SIGXFSZ', 153]),
      );
      expect(limitReached(outcome, log)).toBe('the file size limit (limits.file_size, 1 MiB) was reached');
      expect(outcome.limits).toEqual({ file_size_bytes: 1024 ** 2, processes: 4096 });
      expect(fs.statSync(path.join(dir, 'big.bin')).size).toBe(1024 ** 2);
      const py = await run(
        `try:
    with open("big.bin", "wb") as f:
        for _ in range(3):
            f.write(b"x" * 1000000)
            f.flush()
except OSError as e:
    print("write:", e)
`,
        { isolation },
      );
      expect(py.log).toContain('write: [Errno 27] File too large');
      expect(log).not.toContain('Traceback');
    }
  }, 60_000);
});

describe('a training run as an unprivileged user inside the sandbox', () => {
  it('has no capabilities, cannot make a user namespace, remount .git or write program.md', () => {
    const dir = makeWorkspace();
    fs.mkdirSync(path.join(dir, '.autoresearch'));
    fs.writeFileSync(
      path.join(dir, 'train.py'),
      `${ATTEMPT}for line in open("/proc/self/status"):
    if line.startswith(("CapEff", "NoNewPrivs", "Uid")):
        print(line.strip())
attempt("user namespace", ["unshare", "--user", "--map-root-user", "true"])
attempt("remount .git", ["mount", "-o", "remount,rw,bind", ".git"])
tries("write program.md", lambda: open("program.md", "a").write("sandbox: off"))
tries("write train.py", lambda: open("train.py", "a").write("\\n"))
`,
    );
    spawnSync('chown', ['-R', '65534:65534', dir]);
    // The guard as the engine starts it, one run, as nobody (whose python is the system's: the venv lies under /root).
    const config = { cmd: '/usr/bin/python3 train.py', cwd: dir, sandbox: 'on', protect: PROTECTED, readonly: [] };
    const r = spawnSync(
      'setpriv',
      [
        '--reuid',
        '65534',
        '--regid',
        '65534',
        '--clear-groups',
        '/usr/bin/python3',
        '-I',
        '-S',
        '-c',
        GUARD_SOURCE,
        JSON.stringify(config),
      ],
      { cwd: dir, encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: dir } },
    );
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(
      '[autoresearch] sandbox: on (bubblewrap; network off; read-only: .git, .autoresearch, program.md)',
    );
    expect(r.stdout).toMatch(/^CapEff:\s+0000000000000000$/m);
    expect(r.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(r.stdout).toMatch(/^Uid:\s+65534\s/m);
    expect(r.stdout).toContain('user namespace: refused');
    expect(r.stdout).toContain('remount .git: refused');
    expect(r.stdout).toContain('write program.md: refused');
    expect(r.stdout).toContain('write train.py: ok');
  }, 60_000);
});

describe('a sandbox without a user namespace (test hook AUTORESEARCH_TEST_NO_USERNS: the kernel refuses one)', () => {
  it('auto runs with capabilities dropped and says the user namespace is missing; on refuses, naming it and the fix', async () => {
    const saved = process.env.AUTORESEARCH_TEST_NO_USERNS;
    process.env.AUTORESEARCH_TEST_NO_USERNS = '1';
    // A guard of its own: the hook is read from the guard's environment, which it has from its start.
    const own = new SubprocessExecutor(1);
    try {
      const probe = `${ATTEMPT}for line in open("/proc/self/status"):
    if line.startswith(("CapEff", "NoNewPrivs", "Uid")):
        print(line.strip())
attempt("remount .git", ["mount", "-o", "remount,rw,bind", ".git"])
tries("chown", lambda: os.chown("prepare.py", 1234, 1234))
`;
      const auto = await run(probe, { executor: own, isolation: { ...ON, sandbox: 'auto' } });
      expect(auto.outcome.exitCode).toBe(0);
      expect(auto.outcome.sandbox).toBe('on');
      expect(auto.outcome.missing).toEqual([expect.stringMatching(/^user namespace \(user namespaces refused/)]);
      expect(auto.log.split('\n')[0]).toMatch(
        /^\[autoresearch\] sandbox: on \(bubblewrap; network off; read-only: .*; missing: user namespace \(user namespaces refused: test hook AUTORESEARCH_TEST_NO_USERNS is set\): the run keeps uid 0, without capabilities/,
      );
      expect(auto.log).toMatch(/^CapEff:\s+0000000000000000$/m);
      expect(auto.log).toMatch(/^NoNewPrivs:\s+1$/m);
      expect(auto.log).toMatch(/^Uid:\s+0\s/m);
      expect(auto.log).toContain('remount .git: refused');
      expect(auto.log).toContain('chown: refused');

      const on = await run('print("trained")\n', { executor: own, isolation: ON });
      expect(on.outcome.exitCode).toBe(126);
      expect(on.outcome.sandbox).toBe('off');
      expect(on.log).toContain(
        'sandbox: on, but bubblewrap cannot run here: no user namespace for the run (user namespaces refused: test hook AUTORESEARCH_TEST_NO_USERNS is set)',
      );
      expect(on.log).toContain('allow user namespaces (sysctl user.max_user_namespaces');
      expect(on.log).not.toContain('trained');
    } finally {
      await own.dispose();
      if (saved === undefined) delete process.env.AUTORESEARCH_TEST_NO_USERNS;
      else process.env.AUTORESEARCH_TEST_NO_USERNS = saved;
    }
  }, 60_000);
});

describe('what governs a run, from the command line', () => {
  const base = ['--max-experiments', '0', '--noise-runs', '1', '--proposer', 'offline'];

  it('program.md front matter written by a run does not switch the sandbox off for the next run', async () => {
    const dir = makeWorkspace({
      train: `def tamper():
    with open("program.md", "w") as f:
        f.write("---\\nbudget_s: 1\\ntimeout_s: 20\\nsandbox: off\\nreadonly: []\\n---\\nowned\\n")
try:
    tamper()
    print("write program.md: ok")
except OSError:
    print("write program.md: refused")
print("---")
print("val_bpb: 1.0")
`,
    });
    const program = fs.readFileSync(path.join(dir, 'program.md'), 'utf8');
    const first = await cli(['run', dir, '--tag', 't1', ...base]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const run1 = journal(dir, 't1').find(r => r.type === 'run') as { log_path: string; sandbox: string };
    expect(run1.sandbox).toBe('on');
    expect(fs.readFileSync(run1.log_path, 'utf8')).toContain('write program.md: refused');
    expect(fs.readFileSync(path.join(dir, 'program.md'), 'utf8')).toBe(program);

    const second = await cli(['run', dir, '--tag', 't2', ...base]);
    expect(second.code).toBe(0);
    const run2 = journal(dir, 't2').find(r => r.type === 'run') as { log_path: string; sandbox: string };
    expect(run2.sandbox).toBe('on');
    expect(fs.readFileSync(run2.log_path, 'utf8').split('\n')[0]).toMatch(
      /^\[autoresearch\] sandbox: on \(bubblewrap; network off; read-only: \.git, \.autoresearch, program\.md, prepare\.py\)$/,
    );
  }, 120_000);

  it('a sandbox without a user namespace under auto: the run record names what is missing and the terminal says so once', async () => {
    const dir = makeWorkspace();
    const r = await cli(['run', dir, '--tag', 't1', ...base, '--noise-runs', '2'], {
      env: { AUTORESEARCH_TEST_NO_USERNS: '1' },
    });
    expect(r.code, r.stderr).toBe(0);
    const runs = journal(dir, 't1').filter(x => x.type === 'run') as Array<{
      sandbox: string;
      sandbox_missing?: string[];
    }>;
    expect(runs).toHaveLength(2);
    for (const run of runs) {
      expect(run.sandbox).toBe('on');
      expect(run.sandbox_missing).toEqual([expect.stringMatching(/^user namespace \(/)]);
    }
    const said = (r.stdout + r.stderr)
      .split('\n')
      .filter(l => l.includes('training runs are sandboxed without: user namespace'));
    expect(said).toHaveLength(1);
  }, 120_000);

  it('a run writing past the file size limit (front matter limits) is a crash whose reason names the limit', async () => {
    const dir = makeWorkspace({
      program: '---\nbudget_s: 1\ntimeout_s: 20\nlimits: {file_size: 1M, processes: 512}\n---\nMake val_bpb lower.\n',
      train: `with open("checkpoint.bin", "wb") as f:
    for _ in range(3):
        f.write(b"x" * 1000000)
        f.flush()
print("---")
print("val_bpb: 1.0")
`,
    });
    const r = await cli(['run', dir, '--tag', 't1', ...base]);
    const run1 = journal(dir, 't1').find(x => x.type === 'run') as { reason: string | null };
    expect(run1.reason).toMatch(
      /^exited with code 1: the file size limit \(limits\.file_size, 1 MiB\) was reached: OSError: \[Errno 27\] File too large/,
    );
    expect(r.stderr + r.stdout).toContain('the file size limit (limits.file_size, 1 MiB) was reached');
  }, 120_000);

  it('a bad limits setting in program.md is a one-line error naming it and the fix', async () => {
    const dir = makeWorkspace({ program: '---\nlimits: {file_size: lots}\n---\nMake val_bpb lower.\n' });
    const r = await cli(['run', dir, '--tag', 't1', ...base]);
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim()).toMatch(
      /program\.md: bad front matter: "limits\.file_size" must be a size in bytes, or with a unit: 500M, 20G, 1\.5T \(powers of 1024\)$/,
    );
  }, 60_000);
});
