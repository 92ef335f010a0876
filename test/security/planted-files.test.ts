/**
 * The engine never follows what a run planted: links and FIFOs a training run leaves in the
 * workspace (or, without the sandbox, in .autoresearch/) are refused or replaced, never read
 * through, written through or waited on. Each test names the attack it replays.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { resolvePython } from '../../src/engine/workspace/python';
import {
  cli,
  experiments,
  finished,
  git,
  journal,
  makeWorkspace,
  standInTrain,
  startCli,
  waitFor,
  type CliResult,
} from '../helpers/workspace';
import { MessagesApiServer } from '../stand-ins/messages-api';

/** A file outside the workspace that a run should never get the engine to read or write. */
function outsideSecret(text = 'SECRET_TOKEN = 424242\n'): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-outside-')), 'secret.py');
  fs.writeFileSync(file, text);
  return file;
}

/** Runs the CLI, killing it (and failing) if it does not end within `ms`: a hang is the bug. */
async function bounded(args: string[], ms: number, env: Record<string, string> = {}): Promise<CliResult> {
  const child = startCli(args, { env });
  const timer = setTimeout(() => child.kill('SIGKILL'), ms);
  const r = await finished(child);
  clearTimeout(timer);
  expect(r.code, `autoresearch ${args.join(' ')} hung (killed after ${ms} ms): ${r.stderr}`).not.toBeNull();
  return r;
}

/** A stand-in train.py that, on its `at`-th run (counted outside the workspace), does `act` (Python lines) and reports a worse metric. */
function plantingTrain(at: number, act: string[]): string {
  const counter = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-count-')), 'runs');
  const lines = [
    `_c = ${JSON.stringify(counter)}`,
    '_n = int(open(_c).read()) if os.path.exists(_c) else 0',
    'open(_c, "w").write(str(_n + 1))',
    `if _n == ${at}:`,
    ...act.map(l => `    ${l}`),
    '    print("---")',
    '    print("val_bpb:          9.0")',
    '    print("training_seconds: 0.5")',
    '    print("peak_vram_mb:     2048.0")',
    '    print("num_steps:        10")',
    '    sys.exit(0)',
    '',
  ];
  return standInTrain().replace('print("step 1', `${lines.join('\n')}print("step 1`);
}

// Planted by the run itself: with the sandbox off nothing stops it (and the engine must hold either way).
const PROGRAM = '---\nbudget_s: 1\ntimeout_s: 20\nsandbox: off\n---\nMake val_bpb lower.\n';

describe('planted files', () => {
  let server: MessagesApiServer | null = null;
  afterEach(() => {
    server?.close();
    server = null;
  });

  it('export does not write through planted .<tag>.ipynb.<pid>.tmp links (autoresearch export)', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    expect((await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '1'])).code).toBe(0);
    const rc = outsideSecret('# ~/.bashrc\nexport PATH=$PATH\n');
    // The pids the export may get: the next ones the kernel hands out.
    const last = Number(fs.readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'));
    const planted = new Set<number>();
    for (let pid = last + 1; pid < last + 20_000; pid++) {
      fs.symlinkSync(rc, path.join(dir, `.t1.ipynb.${pid}.tmp`));
      planted.add(pid);
    }
    const child = startCli(['export', dir, '--tag', 't1']);
    const r = await finished(child);
    expect(planted.has(child.pid!), 'the export ran under a pid a link was planted for').toBe(true);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readFileSync(rc, 'utf8')).toBe('# ~/.bashrc\nexport PATH=$PATH\n');
    const nb = path.join(dir, 't1.ipynb');
    expect(fs.lstatSync(nb).isFile()).toBe(true);
    expect(JSON.parse(fs.readFileSync(nb, 'utf8')).nbformat).toBe(4);
    // A link planted at the notebook's own name is replaced by the notebook, not written through.
    fs.rmSync(nb);
    fs.symlinkSync(rc, nb);
    expect((await cli(['export', dir, '--tag', 't1'])).code).toBe(0);
    expect(fs.lstatSync(nb).isFile()).toBe(true);
    expect(fs.readFileSync(rc, 'utf8')).toBe('# ~/.bashrc\nexport PATH=$PATH\n');
  });

  it('a link at program.md is refused and its target never copied into the workspace', async () => {
    const secret = outsideSecret('ssh-ed25519 PRIVATE-KEY-MATERIAL\n');
    // The second run (experiment 1) swaps program.md for a link to the secret and reports a worse
    // metric, so the engine resets: before, the reset read the link and wrote the key back.
    const train = plantingTrain(1, ['os.remove("program.md")', `os.symlink(${JSON.stringify(secret)}, "program.md")`]);
    const dir = makeWorkspace({ program: PROGRAM, train });
    const r = await bounded(
      ['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '3', '--noise-runs', '1'],
      90_000,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(experiments(dir, 't1')[1]).toMatchObject({ status: 'discard' });
    expect(fs.lstatSync(path.join(dir, 'program.md')).isFile()).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'program.md'), 'utf8')).toBe(PROGRAM);
    for (const f of fs.readdirSync(dir)) {
      const p = path.join(dir, f);
      if (fs.lstatSync(p).isFile()) expect(fs.readFileSync(p, 'utf8'), f).not.toContain('PRIVATE-KEY');
    }
    expect(JSON.stringify(journal(dir, 't1'))).not.toContain('PRIVATE-KEY');
    // A link found at program.md when a run starts: one line naming it and the fix, nothing read.
    fs.rmSync(path.join(dir, 'program.md'));
    fs.symlinkSync(secret, path.join(dir, 'program.md'));
    for (const args of [
      ['run', dir, '--tag', 't2', '--proposer', 'offline'],
      ['run', dir, '--resume', '--proposer', 'offline'],
      ['export', dir, '--out', '-'],
    ]) {
      const refused = await bounded(args, 30_000);
      expect(refused.code, args.join(' ')).toBe(1);
      expect(refused.stderr).toMatch(
        /program\.md is a symbolic link .*not a regular file.*git checkout -- program\.md/,
      );
      expect(refused.stderr + refused.stdout).not.toContain('PRIVATE-KEY');
    }
  });

  it('a FIFO at program.md is a clear error, never a hang (run, --resume, stop)', async () => {
    // A run that leaves a FIFO at program.md, then stays busy: the engine must still stop.
    const train = plantingTrain(1, ['os.remove("program.md")', 'os.mkfifo("program.md")', 'time.sleep(600)']);
    const dir = makeWorkspace({ program: PROGRAM.replace('timeout_s: 20', 'timeout_s: 300'), train });
    const run = startCli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--noise-runs', '1']);
    const ended = finished(run);
    await waitFor(
      () => fs.existsSync(path.join(dir, 'program.md')) && fs.lstatSync(path.join(dir, 'program.md')).isFIFO(),
      60_000,
      'the run to plant the FIFO',
    );
    const stop = await bounded(['stop', dir, '--wait', '30'], 45_000);
    expect(stop.code, stop.stderr).toBe(0);
    const killer = setTimeout(() => run.kill('SIGKILL'), 30_000);
    const r = await ended;
    clearTimeout(killer);
    expect(r.code, `the engine hung after stop: ${r.stderr}`).not.toBeNull();
    // Whatever the stop left at program.md, a FIFO there now is a one-line refusal, never a wait.
    fs.rmSync(path.join(dir, 'program.md'), { force: true });
    execFileSync('mkfifo', [path.join(dir, 'program.md')]);
    for (const args of [
      ['run', dir, '--tag', 't2', '--proposer', 'offline'],
      ['run', dir, '--resume', '--proposer', 'offline'],
      ['export', dir, '--out', '-'],
      ['transfer', dir, '--defaults'],
    ]) {
      const refused = await bounded(args, 30_000);
      expect(refused.code, args.join(' ')).toBe(1);
      expect(refused.stderr.trim().split('\n')).toHaveLength(1);
      expect(refused.stderr).toMatch(/program\.md is a FIFO, not a regular file/);
    }
    expect((await bounded(['stop', dir, '--wait', '5'], 30_000)).code).not.toBeNull();
  });

  it('a linked train.py is refused before the proposer reads it (offline proposer, through the CLI)', async () => {
    const secret = outsideSecret();
    // The baseline run swaps train.py for a link to a file outside; it is kept (it is the baseline).
    const train = plantingTrain(0, ['os.remove("train.py")', `os.symlink(${JSON.stringify(secret)}, "train.py")`]);
    const dir = makeWorkspace({ program: PROGRAM, train });
    const r = await bounded(
      ['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '3', '--noise-runs', '1'],
      90_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const exps = experiments(dir, 't1');
    // The proposal was made from the best's text in git, never the link's target, and its edit refused.
    expect(exps[1]).toMatchObject({
      status: 'rejected',
      reason: expect.stringMatching(/^edit refused: train\.py is a link to .*outside the workspace/),
    });
    expect(JSON.stringify(journal(dir, 't1'))).not.toContain('SECRET_TOKEN');
    expect(fs.readFileSync(secret, 'utf8')).toBe('SECRET_TOKEN = 424242\n');
    // The reset after the refusal put the committed file back: the run went on (no crash loop).
    expect(fs.lstatSync(path.join(dir, 'train.py')).isFile()).toBe(true);
    expect(exps.length).toBeGreaterThanOrEqual(3);
    // A link at train.py when a run starts: refused before anything reads it.
    fs.rmSync(path.join(dir, 'train.py'));
    fs.symlinkSync('prepare.py', path.join(dir, 'train.py'));
    const refused = await bounded(['run', dir, '--tag', 't2', '--proposer', 'offline'], 30_000);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/train\.py is a symbolic link \(to prepare\.py\), not a regular file/);
    git(dir, 'checkout', '--', 'train.py');
  });

  it('a linked train.py is refused before the proposer reads it (Claude proposer, local Messages API)', async () => {
    server = await MessagesApiServer.start();
    const secret = outsideSecret();
    const train = plantingTrain(0, ['os.remove("train.py")', `os.symlink(${JSON.stringify(secret)}, "train.py")`]);
    const dir = makeWorkspace({ program: PROGRAM, train });
    const deeper = {
      type: 'message' as const,
      content: [
        {
          type: 'tool_use' as const,
          name: 'str_replace_based_edit_tool',
          input: { command: 'str_replace', path: 'train.py', old_str: 'N_LAYER = 4', new_str: 'N_LAYER = 6' },
        },
        { type: 'tool_use' as const, name: 'finish_experiment', input: { description: 'deeper', rationale: 'r' } },
      ],
    };
    // One for the refused proposal, one for the next (the reset restored train.py).
    server.enqueue(deeper, deeper, deeper);
    const env = {
      ANTHROPIC_API_KEY: server.apiKey,
      ANTHROPIC_BASE_URL: server.url,
      AUTORESEARCH_PYTHON: resolvePython(),
    };
    const r = await bounded(
      ['run', dir, '--tag', 't1', '--max-experiments', '1', '--noise-runs', '1', '--no-pipeline', '--max-dollars', '5'],
      90_000,
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const sent = server.requests.filter(q => q.path.startsWith('/v1/messages'));
    expect(sent.length).toBeGreaterThan(0);
    expect(JSON.stringify(sent.map(q => q.body))).not.toContain('SECRET_TOKEN');
    expect(experiments(dir, 't1')[1]).toMatchObject({
      status: 'rejected',
      reason: expect.stringMatching(/^edit refused: train\.py is a link to .*outside the workspace/),
    });
  });

  it('state files are written through exclusive temp names', async () => {
    // Without the sandbox a run can write .autoresearch/: links at the old predictable temp names
    // (<file>.tmp, <file>.<pid>.tmp) of engine.json, state.json and the logs must not be written through.
    const dir = makeWorkspace({ program: PROGRAM });
    const victim = outsideSecret('untouched\n');
    const state = path.join(dir, '.autoresearch');
    fs.mkdirSync(path.join(state, 't1', 'logs'), { recursive: true });
    const last = Number(fs.readFileSync('/proc/sys/kernel/ns_last_pid', 'utf8'));
    fs.symlinkSync(victim, path.join(state, 'engine.json.tmp'));
    for (let pid = last + 1; pid < last + 5_000; pid++) {
      fs.symlinkSync(victim, path.join(state, 't1', `state.json.${pid}.tmp`));
    }
    fs.symlinkSync(victim, path.join(state, 't1', 'logs', '0000.log'));
    const r = await bounded(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '2'], 90_000);
    expect(r.code, r.stderr).toBe(0);
    expect(fs.readFileSync(victim, 'utf8')).toBe('untouched\n');
    expect(fs.lstatSync(path.join(state, 't1', 'state.json')).isFile()).toBe(true);
    expect(fs.lstatSync(path.join(state, 't1', 'logs', '0000.log')).isFile()).toBe(true);
    // The engine's own temp files are gone: every one it made was renamed into place.
    const left = fs
      .readdirSync(path.join(state, 't1'))
      .filter(f => f.endsWith('.tmp') && !fs.lstatSync(path.join(state, 't1', f)).isSymbolicLink());
    expect(left).toEqual([]);
  });

  it('a link at .git/info/exclude is never appended through: the outside file stays as it was', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    const victim = outsideSecret('untouched\n');
    const exclude = path.join(dir, '.git', 'info', 'exclude');
    fs.mkdirSync(path.dirname(exclude), { recursive: true });
    fs.rmSync(exclude, { force: true });
    fs.symlinkSync(victim, exclude);
    const r = await bounded(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '0'], 60_000);
    expect(fs.readFileSync(victim, 'utf8')).toBe('untouched\n');
    // Refused with one line naming it (never a stack trace).
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^autoresearch: .*\.git\/info\/exclude is a symbolic link[^\n]*\n$/);
  });

  it('a FIFO or a link at the journal is a clear error, never a hang nor a read through it (status, results, --resume)', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    const journal = path.join(dir, '.autoresearch', 't1', 'journal.jsonl');
    fs.mkdirSync(path.dirname(journal), { recursive: true });
    for (const plant of ['fifo', 'link'] as const) {
      fs.rmSync(journal, { force: true });
      if (plant === 'fifo') execFileSync('mkfifo', [journal]);
      else fs.symlinkSync(outsideSecret('{"type":"run_start"}\n'), journal);
      for (const args of [
        ['status', dir, '--tag', 't1'],
        ['results', dir, '--tag', 't1'],
        ['run', dir, '--tag', 't1', '--resume', '--proposer', 'offline'],
      ]) {
        const r = await bounded(args, 30_000);
        expect(r.code, `${plant}: ${args[0]}`).toBe(1);
        expect(r.stderr).toMatch(
          new RegExp(
            `^autoresearch: \\S*journal\\.jsonl is ${plant === 'fifo' ? 'a FIFO' : 'a symbolic link'}, not a regular file[^\\n]*\\n$`,
          ),
        );
      }
    }
  });
});
