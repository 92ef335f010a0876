/**
 * Issue 25: without the sandbox a training run can write .git and the work tree, and whatever it
 * planted there (hooks, fsmonitor, filters, diff and merge drivers, signing, includes) used to run
 * inside the engine at its next git command, where /proc/<engine>/environ holds the user's secrets.
 * Each test commits a train.py that plants one of these during the run, as an attacker would, then
 * drives the real CLI through kept and discarded experiments, a second session (a checkout) and
 * the diffs the journal records, and checks the planted program never ran: it would have written
 * a marker file outside the workspace. A control then runs plain git in the workspace to prove the
 * plant was live all along.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, experiments, git, journal, makeWorkspace, standInTrain } from '../helpers/workspace';

const PROGRAM = '---\nbudget_s: 1\ntimeout_s: 20\nsandbox: off\nnoise_runs: 1\n---\nMake val_bpb lower.\n';

interface Plant {
  /** Files to write, relative to the workspace; an executable one holds `$EVIL`'s text. */
  files?: Record<string, string>;
  /** Text appended to .git/config. */
  config?: string;
}

/** The planted program: records that it ran, outside the workspace, and passes its input through (a filter must). */
function evil(marker: string): string {
  return `#!/bin/sh\necho "ran $0 $*" >> ${JSON.stringify(marker)}\nexec cat 2>/dev/null\n`;
}

/** train.py: plants once, during the first run, then trains like the stand-in. */
function plantingTrain(plant: Plant, program: string): string {
  const lines = [
    'import os, stat',
    'if not os.path.exists(".git/planted"):',
    `    EVIL = ${JSON.stringify(program)}`,
    `    for _p, _t in ${JSON.stringify({ '.git/evil.sh': '$EVIL', ...plant.files })}.items():`,
    '        os.makedirs(os.path.dirname(_p) or ".", exist_ok=True)',
    '        open(_p, "w").write(EVIL if _t == "$EVIL" else _t)',
    '        os.chmod(_p, 0o755)',
    `    open(".git/config", "a").write(${JSON.stringify(plant.config ?? '')})`,
    '    open(".git/planted", "w").write("")',
  ];
  return lines.join('\n') + '\n' + standInTrain();
}

interface Attack {
  dir: string;
  marker: string;
  /** What ran of the planted program while the engine ran (empty: nothing). */
  ranInEngine: string;
  /** What has run of it by now. */
  ran: () => string;
  first: { code: number | null; stdout: string; stderr: string };
  second: { code: number | null; stdout: string; stderr: string };
}

/** Plants through a run, then runs two sessions (three experiments, a new branch); `plant` gets the marker and the workspace. */
async function attack(plant: (evilPath: string, dir: string) => Plant): Promise<Attack> {
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-git-plant-'));
  const marker = path.join(outside, 'ran');
  const dir = makeWorkspace({ program: PROGRAM, train: '' });
  const evilPath = path.join(dir, '.git', 'evil.sh');
  fs.writeFileSync(path.join(dir, 'train.py'), plantingTrain(plant(evilPath, dir), evil(marker)));
  git(dir, 'commit', '-qam', 'the planting train.py');
  const run = (tag: string, n: string) =>
    cli(['run', dir, '--tag', tag, '--proposer', 'offline', '--max-experiments', n, '--noise-runs', '1']);
  const first = await run('t1', '2');
  const second = await run('t2', '1');
  const ran = () => (fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8') : '');
  // Taken before the test's own git commands, which obey the plant.
  return { dir, marker, ranInEngine: ran(), ran, first, second };
}

/** The engine went on as if nothing were planted: both sessions finished, every experiment recorded, the tree clean. */
function wentOn(a: Attack): void {
  expect(a.first.stderr).toBe('');
  expect(a.first.code).toBe(0);
  expect(a.second.code).toBe(0);
  expect(fs.existsSync(path.join(a.dir, '.git', 'planted'))).toBe(true);
  expect(experiments(a.dir, 't1').map(e => e.n)).toEqual([0, 1, 2]);
  expect(experiments(a.dir, 't2').map(e => e.n)).toEqual([0, 1]);
  const best = experiments(a.dir, 't2').filter(e => e.status === 'keep');
  expect(git(a.dir, 'rev-parse', 'HEAD').trim()).toBe(best.at(-1)?.commit);
  expect(git(a.dir, '--work-tree=.', 'status', '--porcelain', '--untracked-files=no')).toBe('');
  // The proposals' diffs were recorded as git prints them, untouched by any textconv.
  expect(experiments(a.dir, 't1')[1].diff).toMatch(/^diff --git a\/train.py b\/train.py/);
}

/** Runs plain git as a user would, with the planted config in force, to show the plant was live. */
function control(a: Attack, ...args: string[]): void {
  spawnSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: a.dir, stdio: 'ignore' });
}

const hook = (name: string) => () => ({ files: { [`.git/hooks/${name}`]: '$EVIL' } });

describe('git as the engine runs it obeys nothing a run planted (sandbox off)', () => {
  it('a post-commit hook planted by a run never runs inside the engine', async () => {
    const a = await attack(hook('post-commit'));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'commit', '-q', '--allow-empty', '-m', 'control');
    expect(a.ran()).toMatch(/post-commit/);
  });

  it('a pre-commit hook planted by a run never runs inside the engine', async () => {
    const a = await attack(hook('pre-commit'));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'commit', '-q', '--allow-empty', '-m', 'control');
    expect(a.ran()).toMatch(/pre-commit/);
  });

  it('a reference-transaction hook planted by a run never runs inside the engine', async () => {
    const a = await attack(hook('reference-transaction'));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'commit', '-q', '--allow-empty', '-m', 'control');
    expect(a.ran()).toMatch(/reference-transaction/);
  });

  it('a post-checkout hook planted by a run never runs when the engine checks out a branch', async () => {
    const a = await attack(hook('post-checkout'));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'checkout', '-q', '-b', 'control');
    expect(a.ran()).toMatch(/post-checkout/);
  });

  it('a core.fsmonitor program planted in .git/config never runs inside the engine', async () => {
    const a = await attack(evilPath => ({ config: `[core]\n\tfsmonitor = ${evilPath}\n` }));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'status');
    expect(a.ran()).not.toBe('');
  });

  it('core.hooksPath planted in .git/config, pointing at hooks in the workspace, is ignored', async () => {
    const a = await attack((_, dir) => ({
      files: { 'hooks/post-commit': '$EVIL', 'hooks/reference-transaction': '$EVIL', 'hooks/post-checkout': '$EVIL' },
      config: `[core]\n\thooksPath = ${path.join(dir, 'hooks')}\n`,
    }));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'commit', '-q', '--allow-empty', '-m', 'control');
    expect(a.ran()).toMatch(/hooks\/(post-commit|reference-transaction)/);
  });

  it('a clean/smudge filter planted in .git/config and named by an in-tree .gitattributes never runs', async () => {
    const a = await attack(evilPath => ({
      files: { '.gitattributes': '* filter=evil\n' },
      config: `[filter "evil"]\n\tclean = ${evilPath}\n\tsmudge = ${evilPath}\n\trequired = true\n`,
    }));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'add', '--renormalize', 'train.py');
    expect(a.ran()).not.toBe('');
  });

  it('a filter named in .git/info/attributes never runs', async () => {
    const a = await attack(evilPath => ({
      files: { '.git/info/attributes': '*.py filter=evil.x\n' },
      config: `[filter "evil.x"]\n\tclean = ${evilPath}\n\tsmudge = ${evilPath}\n\tprocess = ${evilPath}\n`,
    }));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'add', '--renormalize', 'train.py');
    expect(a.ran()).not.toBe('');
  });

  it('a diff driver (diff.X.command) and a textconv planted by a run never run for the diffs the engine records', async () => {
    const a = await attack(evilPath => ({
      files: { '.gitattributes': '*.py diff=evil\n' },
      config: `[diff "evil"]\n\tcommand = ${evilPath}\n\ttextconv = ${evilPath}\n`,
    }));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'diff', 'HEAD~1', 'HEAD');
    expect(a.ran()).not.toBe('');
  });

  it('a merge driver planted by a run never runs (the engine merges with its own merge-file)', async () => {
    const a = await attack(evilPath => ({
      files: { '.gitattributes': '* merge=evil\n' },
      config: `[merge "evil"]\n\tdriver = ${evilPath} %O %A %B\n`,
    }));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
  });

  it('core.sshCommand and a signing program planted by a run never run when the engine commits', async () => {
    const a = await attack(evilPath => ({
      config: `[core]\n\tsshCommand = ${evilPath}\n[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = ${evilPath}\n`,
    }));
    expect(a.ranInEngine).toBe('');
    wentOn(a);
    control(a, 'commit', '-q', '--allow-empty', '-m', 'control');
    expect(a.ran()).not.toBe('');
  });

  it('core.worktree planted by a run cannot move the engine’s commits and resets to another folder', async () => {
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-git-elsewhere-'));
    const a = await attack(() => ({ config: `[core]\n\tworktree = ${elsewhere}\n` }));
    wentOn(a);
    expect(fs.readdirSync(elsewhere)).toEqual([]);
  });

  it('include.path to a config file a run planted is refused with a clear error, and what it names never runs', async () => {
    const a = await attack(evilPath => ({
      files: { '.git/extra.cfg': `[core]\n\tfsmonitor = ${evilPath}\n` },
      config: `[include]\n\tpath = extra.cfg\n`,
    }));
    expect(a.ranInEngine).toBe('');
    expect(a.first.code).not.toBe(0);
    expect(a.first.stderr).toMatch(
      /^autoresearch: the git config of .* includes another file \(include\.path = extra\.cfg\); .*remove it with `git -C .* config --unset-all 'include\.path'`\n$/,
    );
    // The baseline was recorded; the refusal came at the next proposal's first git read (the moves the
    // search prepares from the journal's commits), before anything started: the run's end says why,
    // and the fix named works.
    expect(experiments(a.dir, 't1').map(e => [e.n, e.status])).toEqual([[0, 'keep']]);
    const end = journal(a.dir, 't1').filter(r => r.type === 'run_end');
    expect(end.at(-1)).toMatchObject({ reason: 'error', message: expect.stringMatching(/includes another file/) });
    control(a, 'status');
    const live = a.ran();
    expect(live).not.toBe('');
    git(a.dir, 'config', '--unset-all', 'include.path');
    const resumed = await cli(['run', a.dir, '--resume', '--proposer', 'offline', '--max-experiments', '1']);
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(a.ran()).toBe(live);
  });
});

describe('the user’s own git config', () => {
  it('commits carry the identity from the user’s global config, read once at the start', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-git-home-'));
    fs.writeFileSync(path.join(home, '.gitconfig'), '[user]\n\tname = Global Person\n\temail = global@example.org\n');
    // The run rewrites the user's global config; the engine read it before and keeps what it read.
    const rewrite = `open(${JSON.stringify(path.join(home, '.gitconfig'))}, "w").write("[user]\\n\\tname = Run\\n\\temail = run@x\\n")\n`;
    const dir = makeWorkspace({ program: PROGRAM, train: rewrite + standInTrain() });
    const r = await cli(['run', dir, '--tag', 't1', '--proposer', 'offline', '--max-experiments', '1'], {
      env: { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config') },
    });
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(home, '.gitconfig'), 'utf8')).toMatch(/Run/);
    const commit = experiments(dir, 't1')[1].commit as string;
    const author = execFileSync('git', ['show', '-s', '--format=%an <%ae>|%cn <%ce>', commit], {
      cwd: dir,
      encoding: 'utf8',
    });
    expect(author.trim()).toBe('Global Person <global@example.org>|Global Person <global@example.org>');
  });
});
