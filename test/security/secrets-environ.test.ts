/**
 * Secrets out of the engine's /proc/<pid>/environ: a training run without the sandbox (or a
 * hook it planted) can read the initial environment of every process of its user, and deleting
 * a variable from process.env does not change that file. The engine takes its secrets out of it
 * at start, or is handed them on a pipe; these runs look for them there, in every process.
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isSecretName, SECRET_NAMES } from '../../src/core/config/secrets';
import { resolvePython } from '../../src/engine/workspace/python';
import { ENGINE, experiments, finished, makeWorkspace, ROOT, standInTrain } from '../helpers/workspace';
import { MessagesApiServer } from '../stand-ins/messages-api';

/**
 * What train.py does first: reads /proc/<pid>/environ of every process it can see and of each
 * of its ancestors up to init, and appends what it found (one JSON line a run) to $AR_PROBE_OUT.
 */
const PROBE = `
import json as _json, os as _os
def _environ(pid):
    try:
        with open("/proc/%s/environ" % pid, "rb") as f:
            return f.read().decode("latin-1").split("\\0")
    except OSError:
        return None
def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read().decode("latin-1").split("\\0")
    except OSError:
        return []
def _ppid(pid):
    with open("/proc/%s/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])
_chain, _pid = [], _os.getpid()
while _pid > 1:
    _pid = _ppid(_pid)
    _chain.append(_pid)
_seen = {p: _environ(p) for p in _os.listdir("/proc") if p.isdigit()}
_seen.update({str(p): _environ(p) for p in _chain})
with open(_os.environ["AR_PROBE_OUT"], "a") as _out:
    _out.write(_json.dumps({"self": _os.getpid(), "ancestors": _chain, "environ": _seen,
                            "cmdline": {str(p): _cmdline(p) for p in _chain}}) + "\\n")
`;

interface Probe {
  self: number;
  ancestors: number[];
  environ: Record<string, string[] | null>;
  cmdline: Record<string, string[]>;
}

function probes(file: string): Probe[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map(line => JSON.parse(line) as Probe);
}

/** Where each secret value was found: `pid: entry`, the value masked. */
function leaks(probe: Probe, values: string[]): string[] {
  const found: string[] = [];
  for (const [pid, entries] of Object.entries(probe.environ)) {
    for (const entry of entries ?? []) {
      for (const v of values) if (entry.includes(v)) found.push(`${pid}: ${entry.split('=')[0]}=…`);
    }
  }
  return found;
}

/** The engine among the run's ancestors, whose environment the run could read (so the check is not vacuous). */
function engineAncestor(probe: Probe): number {
  const pid = probe.ancestors.find(p => probe.cmdline[String(p)].some(a => a.endsWith('autoresearch.cjs')));
  expect(pid, 'the engine is among the run’s ancestors').toBeDefined();
  expect(probe.environ[String(pid)], 'the run can read the engine’s environ').toContain('AR_PROBE_MARK=readable');
  return pid!;
}

const secretValue = (prefix: string) => `${prefix}-${randomBytes(12).toString('hex')}`;

let server: MessagesApiServer;
let out: string;
beforeEach(async () => {
  server = await MessagesApiServer.start({ apiKey: secretValue('sk-ant-api03-environ') });
  out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-probe-')), 'probe.jsonl');
});
afterEach(() => server.close());

const PROGRAM = '---\nbudget_s: 1\ntimeout_s: 30\nsandbox: off\n---\nMake val_bpb lower.\n';

describe('secrets in /proc/<pid>/environ', () => {
  it('a run without the sandbox cannot read the API key or the Jupyter token from the environ of the CLI engine, its ancestors or any process, and the claude proposer still authenticates with the key', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: PROBE + standInTrain() });
    server.enqueue({
      type: 'message',
      content: [
        {
          type: 'tool_use',
          name: 'str_replace_based_edit_tool',
          input: { command: 'str_replace', path: 'train.py', old_str: 'N_LAYER = 4', new_str: 'N_LAYER = 6' },
        },
        { type: 'tool_use', name: 'finish_experiment', input: { description: 'deeper', rationale: 'r' } },
      ],
    });
    const token = secretValue('jupyter-token');
    const child = spawn(
      process.execPath,
      [ENGINE, 'run', dir, '--tag', 's', '--max-experiments', '1', '--noise-runs', '1', '--no-pipeline'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          ANTHROPIC_API_KEY: server.apiKey,
          ANTHROPIC_BASE_URL: server.url,
          JUPYTER_TOKEN: token,
          // The token again under a name nobody would guess: its value gives it away.
          LAB_SESSION_SECRET: token,
          AUTORESEARCH_PYTHON: resolvePython(),
          AR_PROBE_OUT: out,
          AR_PROBE_MARK: 'readable',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const r = await finished(child);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // Claude (the default with a key) proposed the experiment: the key and the base URL reached the SDK.
    expect(experiments(dir, 's')[1]).toMatchObject({ description: 'deeper', proposer: 'claude' });
    const calls = server.requests.filter(q => q.path.startsWith('/v1/messages'));
    expect(calls.length).toBeGreaterThan(0);
    const runs = probes(out);
    expect(runs.length).toBe(2); // the baseline and the experiment
    for (const probe of runs) {
      expect(engineAncestor(probe)).toBe(child.pid);
      expect(leaks(probe, [server.apiKey, token, server.url])).toEqual([]);
    }
  });

  it('an engine handed its secrets on a pipe (as the server starts it) picks the claude proposer by the key and never has it in its environ', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: PROBE + standInTrain() });
    server.enqueue({
      type: 'message',
      content: [
        {
          type: 'tool_use',
          name: 'str_replace_based_edit_tool',
          input: { command: 'str_replace', path: 'train.py', old_str: 'N_LAYER = 4', new_str: 'N_LAYER = 5' },
        },
        { type: 'tool_use', name: 'finish_experiment', input: { description: 'five', rationale: 'r' } },
      ],
    });
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of Object.keys(env)) {
      if (isSecretName(name, SECRET_NAMES)) delete env[name];
    }
    const child = spawn(
      process.execPath,
      [ENGINE, 'run', dir, '--tag', 'p', '--max-experiments', '1', '--noise-runs', '1', '--no-pipeline'],
      {
        cwd: ROOT,
        env: {
          ...env,
          AUTORESEARCH_SECRETS_FD: '3',
          AUTORESEARCH_PYTHON: resolvePython(),
          AR_PROBE_OUT: out,
          AR_PROBE_MARK: 'readable',
        },
        stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
      },
    );
    const pipe = child.stdio[3] as NodeJS.WritableStream;
    pipe.on('error', () => undefined); // the engine closes its end once read
    pipe.end(JSON.stringify({ ANTHROPIC_API_KEY: server.apiKey, ANTHROPIC_BASE_URL: server.url }));
    const r = await finished(child);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(experiments(dir, 'p')[1]).toMatchObject({ description: 'five', proposer: 'claude' });
    for (const probe of probes(out)) {
      engineAncestor(probe);
      expect(leaks(probe, [server.apiKey, server.url])).toEqual([]);
      // Nor does the engine pass the pipe's variable on to its runs.
      expect(probe.environ[String(probe.self)]).not.toContain('AUTORESEARCH_SECRETS_FD=3');
    }
  });

  it("the server keeps from an engine's environment exactly the variables the engine counts as secrets", () => {
    // Names either side might get wrong: each exact name, a prefix's members, near misses.
    const names = [
      ...SECRET_NAMES,
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_BASE_URL',
      'ANTHROPIC',
      'CLAUDE_CODE_OAUTH_TOKEN_X',
      'JUPYTER_TOKENS',
      'XJUPYTER_TOKEN',
      'PATH',
      'HOME',
    ];
    const python = path.join(ROOT, '.venv', 'bin', 'python');
    const answers = execFileSync(
      python,
      [
        '-c',
        'import json, sys; from jupyterlab_autoresearch.supervise.secrets import is_secret_name; ' +
          'print(json.dumps([is_secret_name(n) for n in json.loads(sys.argv[1])]))',
        JSON.stringify(names),
      ],
      { env: { ...process.env, PYTHONPATH: path.join(ROOT, 'jupyter_server_ext') }, encoding: 'utf8' },
    );
    expect(JSON.parse(answers)).toEqual(names.map(n => isSecretName(n, SECRET_NAMES)));
    expect(names.filter(n => isSecretName(n, SECRET_NAMES))).toContain('ANTHROPIC_BASE_URL');
  });

  it('bad secrets on the pipe are a one-line error naming the fd and the fix', async () => {
    const child = spawn(process.execPath, [ENGINE, 'status', os.tmpdir()], {
      cwd: ROOT,
      env: { ...process.env, AUTORESEARCH_SECRETS_FD: '3' },
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    });
    const pipe = child.stdio[3] as NodeJS.WritableStream;
    pipe.on('error', () => undefined);
    pipe.end('{"ANTHROPIC_API_KEY": 7}');
    const r = await finished(child);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^autoresearch: the secrets on fd 3 \(AUTORESEARCH_SECRETS_FD\) are not a JSON object of strings; .+\n$/,
    );
  });
});
