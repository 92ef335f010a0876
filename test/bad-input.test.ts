/**
 * Bad output from train.py and bad input on disk: summary values a double cannot hold, timeouts a
 * timer cannot hold, a journal that cannot be read, a training run that deletes .git or
 * results.tsv, a read-only file changed across a resume, an editable list that names the engine's
 * own files. Each ends in a clear message naming the fix, and nothing recorded is lost.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { subprocessLoop } from './helpers/loop';
import { FrontMatter, parseProgram, resolveConfig } from '../src/core/config/program';
import { belongsInResults, RESULTS_HEADER, resultsRow } from '../src/core/journal/results';
import { parseSummary, readMetric } from '../src/core/rule/summary';
import { Repo } from '../src/engine/git/git';
import { Loop, type LoopOptions } from '../src/engine/run/setup';
import type { Proposer } from '../src/engine/proposers/types';
import {
  cli,
  experiments,
  git,
  journal,
  makeWorkspace,
  ScriptedProposer,
  standInTrain,
  trainProposal,
} from './helpers/workspace';

/** One run per experiment, so each test spends as few runs as it needs. */
const PROGRAM = '---\nbudget_s: 1\ntimeout_s: 20\nnoise_runs: 1\n---\nMake val_bpb lower.\n';
/** A train.py the offline proposer tunes (one constant); `extra` runs only once it has changed it, i.e. in every experiment but the baseline. */
function tuned(extra: string, metric = '1.0'): string {
  return [
    'import os, shutil, sys',
    'LEARNING_RATE = 0.001',
    'if LEARNING_RATE != 0.001:',
    ...extra.split('\n').map(l => `    ${l}`),
    'print("---")',
    `print("val_bpb: ${metric}")`,
    'print("peak_vram_mb: 2048.0")',
    '',
  ].join('\n');
}

/** The strict rule (one run each), as the original: these tests are about bad input, not noise. */
function loop(dir: string, proposer: Proposer, extra: Partial<LoopOptions> = {}): Loop {
  return subprocessLoop(dir, proposer, { overrides: { noise_runs: 1 }, ...extra });
}

/** Asserts a command failed with one clear line (no stack, no "internal error") matching `message`. */
function expectClearError(r: { code: number | null; stderr: string }, message: RegExp): void {
  expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
  expect(r.code).toBe(1);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(/^autoresearch: /);
  expect(r.stderr).toMatch(message);
}

function journalFile(dir: string, tag = 't1'): string {
  return path.join(dir, '.autoresearch', tag, 'journal.jsonl');
}

/** results.tsv as the journal has it. */
function rowsFromJournal(dir: string, tag = 't1'): string {
  const rows = experiments(dir, tag)
    .filter(e => belongsInResults(e.status))
    .map(e => resultsRow(e));
  return [RESULTS_HEADER, ...rows].join('\n') + '\n';
}

describe('summary values a double cannot hold', () => {
  it('keeps them as the text printed; as the metric they are a clear reason, not a number', () => {
    const huge = '9'.repeat(400);
    const s = parseSummary(`---\nval_bpb: 1e999\npeak_vram_mb: -1e999\nbig: ${huge}\nnum_steps: 10\nloss: 1e308\n`);
    expect(s).toEqual({ val_bpb: '1e999', peak_vram_mb: '-1e999', big: huge, num_steps: 10, loss: 1e308 });
    expect(readMetric(s, 'val_bpb')).toEqual({ error: 'val_bpb is not a finite number: 1e999' });
    expect(readMetric(s, 'big')).toEqual({
      error: `big is not a finite number: ${huge.slice(0, 40)}… (400 characters)`,
    });
    expect(readMetric(parseSummary('---\nval_bpb: nan\n'), 'val_bpb')).toEqual({ error: 'val_bpb is NaN' });
    expect(readMetric(parseSummary('---\nval_bpb: -inf\n'), 'val_bpb')).toEqual({ error: 'val_bpb is infinite' });
  });

  it('an overflowing metric is a crash of that experiment, and the run goes on and ends cleanly', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    const extraKeys =
      standInTrain({ metric: '0.5' }) + 'print("mfu_percent: 1e999")\nprint("tokens: -' + '7'.repeat(400) + '")\n';
    const proposer = new ScriptedProposer([
      trainProposal('overflow', { metric: '1e999' }),
      trainProposal('400 digits', { metric: '1'.repeat(400) }),
      trainProposal('infinite', { metric: 'inf' }),
      { description: 'odd extra keys', rationale: '', files: { 'train.py': extraKeys } },
    ]);
    const end = await loop(dir, proposer).run();
    expect(end.reason).toBe('exhausted');
    const [baseline, overflow, digits, inf, odd] = experiments(dir, 't1');
    expect(baseline.status).toBe('keep');
    expect(overflow).toMatchObject({
      status: 'crash',
      metric: null,
      reason: 'val_bpb is not a finite number: 1e999',
      summary: { val_bpb: '1e999' },
    });
    expect(digits).toMatchObject({
      status: 'crash',
      reason: expect.stringMatching(/^val_bpb is not a finite number: 1{40}… \(400 characters\)$/),
    });
    expect(inf).toMatchObject({ status: 'crash', reason: 'val_bpb is infinite' });
    // Other keys a double cannot hold are kept as printed; the experiment itself is measured.
    expect(odd).toMatchObject({
      status: 'keep',
      metric: 0.5,
      summary: { val_bpb: 0.5, mfu_percent: '1e999', tokens: '-' + '7'.repeat(400) },
    });
    const records = journal(dir, 't1');
    expect(records.at(-1)?.type).toBe('run_end');
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(odd.commit);
    expect(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8')).toBe(rowsFromJournal(dir));
  });

  it('a metric so large its square overflows (the noise statistics square it) is a crash too', async () => {
    const train = 'import os\nprint("---")\nprint("val_bpb: %e" % (1e200 * int(os.environ["AUTORESEARCH_RUN"])))\n';
    const dir = makeWorkspace({ program: PROGRAM, train });
    await expect(loop(dir, new ScriptedProposer([]), { overrides: { noise_runs: 2 } }).run()).rejects.toThrow(
      /^the baseline crashed \(val_bpb is too large to compare: 1e\+200\); fix train.py/,
    );
    expect(experiments(dir, 't1')).toMatchObject([{ status: 'crash', summary: { val_bpb: 1e200 } }]);
    expect(journal(dir, 't1').at(-1)).toMatchObject({ type: 'run_end', reason: 'error' });
    expect(readMetric({ val_bpb: -3.4e38 }, 'val_bpb')).toEqual({ value: -3.4e38 }); // a float32's range compares fine
  });

  it('a baseline that prints 1e999 ends the run with the reason, the record and run_end written', async () => {
    const dir = makeWorkspace({ program: PROGRAM, train: standInTrain({ metric: '1e999' }) });
    const r = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline']);
    expectClearError(r, /the baseline crashed \(val_bpb is not a finite number: 1e999\); fix train.py/);
    const records = journal(dir, 't1');
    expect(experiments(dir, 't1')).toMatchObject([
      { n: 0, status: 'crash', reason: 'val_bpb is not a finite number: 1e999' },
    ]);
    expect(records.at(-1)).toMatchObject({ type: 'run_end', reason: 'error' });
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });
});

describe('timeouts a timer cannot hold (Node fires a longer setTimeout at once)', () => {
  const refused = async (dir: string, args: string[], message: RegExp) => {
    const r = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '0', ...args]);
    expect(r.stderr).not.toMatch(/internal error|TimeoutOverflowWarning/);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(fs.existsSync(journalFile(dir))).toBe(false);
    expect(git(dir, 'branch', '--list', 'autoresearch/*').trim()).toBe('');
  };

  it('--timeout, timeout_s and budget_s past 2147483 s are refused, naming the flag or key and the maximum', async () => {
    await refused(makeWorkspace({ program: PROGRAM }), ['--timeout', '3000000'], /--timeout.*at most 2147483/);
    await refused(makeWorkspace({ program: PROGRAM }), ['--budget', '3000000'], /--budget.*at most 2147483/);
    await refused(
      makeWorkspace({ program: '---\nbudget_s: 1\ntimeout_s: 3000000\n---\nGo.\n' }),
      [],
      /"timeout_s" must be .*at most 2147483/,
    );
    await refused(
      makeWorkspace({ program: '---\nbudget_s: 3000000\n---\nGo.\n' }),
      [],
      /"budget_s" must be .*at most 2147483/,
    );
  });

  it('the maximum itself works: the run is not killed at once', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    const r = await cli([
      'run',
      dir,
      '--tag',
      't1',
      '--proposer',
      'offline',
      '--max-experiments',
      '0',
      '--timeout',
      '2147483',
    ]);
    expect(r.stderr).not.toMatch(/TimeoutOverflowWarning/);
    expect(r.code).toBe(0);
    expect(experiments(dir, 't1')).toMatchObject([{ status: 'keep' }]);
  });

  it('a budget near the maximum gets a default timeout a timer can hold; the Loop API refuses a longer one', async () => {
    expect(resolveConfig({ budget_s: 2_000_000 }).timeout_s).toBe(2_147_483);
    expect(() => resolveConfig({}, { timeout_s: 3_000_000 })).toThrow(/timeout_s .*at most 2147483/);
    await expect(
      loop(makeWorkspace({ program: PROGRAM }), new ScriptedProposer([]), {
        overrides: { timeout_s: 3_000_000 },
      }).run(),
    ).rejects.toThrow(/at most 2147483/);
  });
});

describe('a journal that cannot be read: every command says which file and line, and how to fix it', () => {
  /** A finished one-experiment run, to damage. */
  async function finishedRun(): Promise<string> {
    const dir = makeWorkspace({ program: PROGRAM });
    expect((await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '1'])).code).toBe(0);
    return dir;
  }
  const commands = (dir: string) => [
    ['status', dir],
    ['results', dir],
    ['export', dir, '--out', path.join(dir, 'out.ipynb')],
    ['run', dir, '--resume', '--proposer', 'offline', '--max-experiments', '1'],
  ];

  it('a garbage line in the middle, and a record with "n": 1e300', async () => {
    const dir = await finishedRun();
    const file = journalFile(dir);
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    const garbage = [...lines.slice(0, 2), 'GARBAGE {', ...lines.slice(3)].join('\n');
    const big = [...lines.slice(0, 1), lines[1].replace(/"n":0/, '"n":1e300'), ...lines.slice(2)].join('\n');
    expect(big).toContain('"n":1e300');
    const refs = git(dir, 'show-ref');
    for (const [text, message] of [
      [garbage, /journal\.jsonl line 3 is not JSON \("GARBAGE \{"\); .*(repair|delete) that line/],
      [big, /journal\.jsonl line 2 is invalid: experiment_start record, n: Too big.*; repair that line/],
    ] as const) {
      fs.writeFileSync(file, text);
      for (const args of commands(dir)) {
        expectClearError(await cli(args), message);
        expect(fs.readFileSync(file, 'utf8')).toBe(text);
      }
      expect(fs.existsSync(path.join(dir, 'out.ipynb'))).toBe(false);
      expect(git(dir, 'show-ref')).toBe(refs);
      expect(git(dir, 'status', '--porcelain').trim()).toBe('');
    }
  });
});

/** A repository with one commit, and a workspace moved inside it. */
function nested(): { outer: string; dir: string; train: string } {
  const outer = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-outer-'));
  git(outer, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(outer, 'train.py'), 'OUTER = 1\n');
  git(outer, 'add', '-A');
  git(outer, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'outer');
  const dir = path.join(outer, 'ws');
  fs.renameSync(makeWorkspace({ program: PROGRAM }), dir);
  return { outer, dir, train: path.join(outer, 'train.py') };
}

describe('a training run that deletes .git', () => {
  it('git in a workspace whose .git is gone fails there, and never reaches the repository around it', async () => {
    const { outer, dir } = nested();
    const head = git(outer, 'rev-parse', 'HEAD');
    fs.rmSync(path.join(dir, '.git'), { recursive: true });
    fs.appendFileSync(path.join(dir, 'train.py'), 'X = 2\n');
    const repo = new Repo(dir);
    await expect(repo.commit(['train.py'], 'an experiment')).rejects.toThrow(
      /the git repository of .* is gone \(its \.git was deleted\)/,
    );
    await expect(repo.resetHard('HEAD')).rejects.toThrow(/is gone/);
    expect(git(outer, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(outer, 'status', '--porcelain')).toBe('?? ws/\n');
  });

  it('stops the run with what happened and how to recover, writes what it can, and never reaches an enclosing repository', async () => {
    // The workspace sits inside another repository: git run in it after its .git is gone must not fall through to that one.
    const outer = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-outer-'));
    git(outer, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(outer, 'train.py'), 'OUTER = 1\n');
    git(outer, 'add', '-A');
    git(outer, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'outer');
    const outerHead = git(outer, 'rev-parse', 'HEAD');
    // Without the sandbox (which keeps .git read-only where bubblewrap works), as on a machine that has none.
    // Experiment #1 (LEARNING_RATE 5e-4) is kept; the next one that runs deletes .git.
    const train = [
      'import shutil',
      'LEARNING_RATE = 0.001',
      'if LEARNING_RATE not in (0.001, 0.0005): shutil.rmtree(".git")',
      'print("---")',
      'print("val_bpb: %f" % (1.0 if LEARNING_RATE == 0.001 else 0.5))',
      '',
    ].join('\n');
    const sandboxOff = 'sandbox' in FrontMatter.shape ? 'sandbox: off\n' : '';
    const inner = makeWorkspace({ program: PROGRAM.replace('noise_runs: 1\n', `noise_runs: 1\n${sandboxOff}`), train });
    const dir = path.join(outer, 'ws');
    fs.renameSync(inner, dir);

    const r = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '5']);
    expectClearError(
      r,
      /the training run of experiment #(\d+) deleted the workspace's git repository \(\.git\).*recover\.patch.*restore \.git from a backup, or clone/,
    );
    const records = journal(dir, 't1');
    const exps = experiments(dir, 't1');
    const n = Number(/experiment #(\d+)/.exec(r.stderr)?.[1]);
    expect(exps.map(e => e.n)).toEqual(Array.from({ length: n + 1 }, (_, i) => i));
    expect(exps[1]).toMatchObject({ status: 'keep', metric: 0.5 });
    expect(exps[n].reason).toMatch(/deleted the workspace's git repository/);
    expect(records.at(-1)).toMatchObject({
      type: 'run_end',
      reason: 'error',
      message: expect.stringMatching(/deleted the workspace's git repository/),
    });
    // What it can: the journal, results.tsv, and the kept edits as one patch that rebuilds the best on the starting code.
    expect(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8')).toBe(rowsFromJournal(dir));
    const clone = makeWorkspace({ program: PROGRAM, train });
    git(clone, 'apply', path.join(dir, '.autoresearch', 't1', 'recover.patch'));
    expect(fs.readFileSync(path.join(clone, 'train.py'), 'utf8')).toMatch(/^LEARNING_RATE = (0\.0005|5e-4)$/m);
    // The enclosing repository is untouched.
    expect(git(outer, 'rev-parse', 'HEAD')).toBe(outerHead);
    expect(fs.readFileSync(path.join(outer, 'train.py'), 'utf8')).toBe('OUTER = 1\n');
    expect(git(outer, 'status', '--porcelain', '--untracked-files=no').trim()).toBe('');
    // status and results still read the journal.
    expect((await cli(['status', dir])).code).toBe(0);
  });
});

describe('results.tsv is rebuilt from the journal when it does not match', () => {
  it('deleted by train.py during each experiment: it comes back whole, and the engine says so', async () => {
    const dir = makeWorkspace({
      program: PROGRAM,
      train: tuned('if os.path.exists("results.tsv"): os.remove("results.tsv")'),
    });
    const r = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '2']);
    expect(r.code).toBe(0);
    expect(experiments(dir, 't1').filter(e => belongsInResults(e.status))).toHaveLength(3);
    expect(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8')).toBe(rowsFromJournal(dir));
    expect(r.stdout).toMatch(/^results\.tsv was missing; rebuilt from the journal \(\d+ rows?\)$/m);
  });

  it('swapped by train.py for a link to a file elsewhere, or a folder: the engine writes nothing through it, and rebuilds', async () => {
    const victim = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-victim-')), 'victim.txt');
    fs.writeFileSync(victim, 'keep me\n');
    const swap = [
      'if os.path.isdir("results.tsv"): shutil.rmtree("results.tsv")',
      'elif os.path.lexists("results.tsv"): os.remove("results.tsv")',
      `if LEARNING_RATE > 0.001: os.mkdir("results.tsv")`,
      `else: os.symlink(${JSON.stringify(victim)}, "results.tsv")`,
    ].join('\n');
    const dir = makeWorkspace({ program: PROGRAM, train: tuned(swap) });
    const r = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '3']);
    expect(r.code).toBe(0);
    expect(fs.readFileSync(victim, 'utf8')).toBe('keep me\n');
    expect(fs.lstatSync(path.join(dir, 'results.tsv')).isFile()).toBe(true);
    expect(fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8')).toBe(rowsFromJournal(dir));
    expect(r.stdout).toMatch(
      /^results\.tsv was a link; moved to \.autoresearch\/\S+ and rebuilt from the journal \(\d+ rows?\)$/m,
    );
    expect(r.stdout).toMatch(
      /^results\.tsv was a folder; moved to \.autoresearch\/\S+ and rebuilt from the journal \(\d+ rows?\)$/m,
    );
  });

  it('an extra header column or a row the journal does not have: rebuilt, the old file kept aside', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    expect((await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '1'])).code).toBe(0);
    const file = path.join(dir, 'results.tsv');
    for (const damage of [
      (t: string) => t.replace(RESULTS_HEADER, `${RESULTS_HEADER}\tnotes`),
      (t: string) => t + 'abcdef0\t0.100000\t1.0\tkeep\tinvented\n',
    ]) {
      const damaged = damage(fs.readFileSync(file, 'utf8'));
      fs.writeFileSync(file, damaged);
      const r = await cli(['run', dir, '--resume', '--proposer', 'offline', '--max-experiments', '1']);
      expect(r.code).toBe(0);
      expect(fs.readFileSync(file, 'utf8')).toBe(rowsFromJournal(dir));
      const note =
        /^results\.tsv did not match the journal \(.+\); rebuilt from the journal \(\d+ rows\), the old file is (\S+)$/m.exec(
          r.stdout,
        );
      expect(note).not.toBeNull();
      expect(fs.readFileSync(path.join(dir, note?.[1] ?? ''), 'utf8')).toBe(damaged);
    }
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });

  it("a second run (another tag) keeps the first run's rows, and a rebuild keeps them too", async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    expect((await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '1'])).code).toBe(0);
    const first = fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8');
    git(dir, 'checkout', '-q', 'main');
    fs.rmSync(path.join(dir, 'results.tsv'));
    const r = await cli(['run', dir, '--tag', 't2', '--proposer', 'offline', '--max-experiments', '1']);
    expect(r.code).toBe(0);
    const text = fs.readFileSync(path.join(dir, 'results.tsv'), 'utf8');
    expect(text.startsWith(first)).toBe(true);
    expect(text).toBe(first + rowsFromJournal(dir, 't2').split('\n').slice(1).join('\n'));
  });
});

describe('read-only files across a resume', () => {
  it('prepare.py changed and committed after the run started: --resume refuses with the fix, changing nothing', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    expect((await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '1'])).code).toBe(0);
    const base = journal(dir, 't1')[0];
    fs.appendFileSync(path.join(dir, 'prepare.py'), 'TIME_BUDGET = 2\n');
    git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qam', 'tweak prepare');
    const before = fs.readFileSync(journalFile(dir), 'utf8');
    const refs = git(dir, 'show-ref');
    const r = await cli(['run', dir, '--resume', '--proposer', 'offline', '--max-experiments', '1']);
    expect(base.type).toBe('run_start');
    const commit = base.type === 'run_start' ? base.base_commit.slice(0, 7) : '';
    expectClearError(
      r,
      new RegExp(
        `prepare\\.py changed since run t1 started \\(sha256 [0-9a-f]{12} then, [0-9a-f]{12} now\\); .*git checkout ${commit} -- prepare\\.py.*--tag`,
      ),
    );
    expect(fs.readFileSync(journalFile(dir), 'utf8')).toBe(before);
    expect(git(dir, 'show-ref')).toBe(refs);
  });

  it('a training run that turns an editable file into a link to .git/config: the next edit is refused, not written through it', async () => {
    const dir = makeWorkspace({ program: PROGRAM });
    const config = fs.readFileSync(path.join(dir, '.git', 'config'), 'utf8');
    const relink =
      standInTrain({ metric: '0.5' }) +
      'os.remove("train.py")\nos.symlink(os.path.join(".git", "config"), "train.py")\n';
    const proposer = new ScriptedProposer([
      { description: 'relink', rationale: '', files: { 'train.py': relink } },
      trainProposal('next', { metric: '0.4' }),
    ]);
    await loop(dir, proposer).run();
    const [, relinked, next] = experiments(dir, 't1');
    expect(relinked.status).toBe('keep');
    expect(next).toMatchObject({
      status: 'rejected',
      reason: expect.stringMatching(/^edit refused: train\.py is a link to \.git\/config/),
    });
    expect(fs.readFileSync(path.join(dir, '.git', 'config'), 'utf8')).toBe(config);
    // The reset after the refusal puts the committed file back in the link's place.
    expect(fs.lstatSync(path.join(dir, 'train.py')).isSymbolicLink()).toBe(false);
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  });

  it('editable may not name .git, .autoresearch or results.tsv, nor a file that leads there through a link', async () => {
    for (const bad of [
      '.git/hooks/pre-commit',
      './.git/config',
      '.autoresearch/t1/journal.jsonl',
      'results.tsv',
      'sub/../.git/config',
    ]) {
      expect(() => parseProgram(`---\neditable: [train.py, "${bad}"]\n---\nGo.\n`)).toThrow(
        /bad front matter: "editable.1" /,
      );
    }
    expect(() => resolveConfig({}, { editable: ['.git/config'] })).toThrow(/\.git/);
    const dir = makeWorkspace({
      program: '---\nbudget_s: 1\neditable: [train.py, .git/hooks/post-commit]\n---\nGo.\n',
    });
    expectClearError(await cli(['run', dir, '--tag', 't1', '--proposer', 'offline']), /"editable\.1" .*\.git/);
    // A committed symlink: writing "hooks.py" would write into .git.
    const linked = makeWorkspace({ program: '---\nbudget_s: 1\neditable: [train.py, hooks.py]\n---\nGo.\n' });
    fs.symlinkSync(path.join('.git', 'hooks', 'post-commit'), path.join(linked, 'hooks.py'));
    fs.writeFileSync(path.join(linked, '.git', 'hooks', 'post-commit'), '#!/bin/sh\n');
    git(linked, 'add', 'hooks.py');
    git(linked, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'link');
    expectClearError(await cli(['run', linked, '--tag', 't1', '--proposer', 'offline']), /hooks\.py .*\.git/);
  });
});
