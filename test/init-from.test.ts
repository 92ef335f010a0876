/** `autoresearch init --from`: a workspace from a repository laid out like the original autoresearch. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, experiments, git, standInTrain } from './helpers/workspace';

const ID = ['-c', 'user.name=t', '-c', 'user.email=t@t'];

/**
 * A repository as the original is laid out: program.md without front matter, prepare.py,
 * train.py and a pyproject.toml, on its default branch `master`, with a tag on the first commit.
 */
function originalLike(files: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-orig-'));
  const all = {
    'program.md': '# autoresearch\n\nLower val_bpb. Only train.py may change.\n',
    'prepare.py': 'TIME_BUDGET = 300\n',
    'train.py': standInTrain({ metric: '1.000000' }),
    'pyproject.toml': '[project]\nname = "x"\ndependencies = ["torch"]\n',
    ...files,
  };
  for (const [name, text] of Object.entries(all)) fs.writeFileSync(path.join(dir, name), text);
  git(dir, 'init', '-q', '-b', 'master');
  git(dir, 'add', '-A');
  git(dir, ...ID, 'commit', '-qm', 'first');
  git(dir, 'tag', 'v1');
  fs.appendFileSync(path.join(dir, 'program.md'), '\nAlso: keep it short.\n');
  git(dir, ...ID, 'commit', '-qam', 'second');
  return dir;
}

const target = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-from-')), 'ws');

describe('autoresearch init --from', () => {
  it('clones the repository with its history, ignores the engine files, and runs there as is', async () => {
    const origin = originalLike();
    const dir = target();
    const r = await cli(['init', dir, '--from', origin]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /\(branch master, commit [0-9a-f]{7}\); its Python needs: the packages its pyproject\.toml lists/,
    );
    expect(r.stdout).toMatch(/run `python prepare\.py` once/);
    expect(git(dir, 'log', '--format=%s').trim().split('\n')).toEqual([
      'autoresearch init: keep results.tsv and .autoresearch/ out of git',
      'second',
      'first',
    ]);
    expect(fs.readFileSync(path.join(dir, '.gitignore'), 'utf8')).toBe('results.tsv\n.autoresearch/\n');
    // The origin is untouched.
    expect(git(origin, 'rev-list', '--count', 'HEAD').trim()).toBe('2');
    const run = await cli(['run', dir, '--tag', 'o1', '--max-experiments', '1', '--proposer', 'offline']);
    expect(run.stderr).not.toMatch(/error/i);
    expect(run.code).toBe(0);
    expect(experiments(dir, 'o1')[0]).toMatchObject({ status: 'keep', metric: 1 });
    expect(git(dir, 'status', '--porcelain').trim()).toBe('');
  }, 60_000);

  it('starts from a tag on a branch of its own, and keeps a .gitignore that already has the entries', async () => {
    const origin = originalLike({ '.gitignore': 'results.tsv\n.autoresearch\n' });
    const dir = target();
    const r = await cli(['init', dir, '--from', origin, '--ref', 'v1']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/branch autoresearch-base-v1/);
    expect(git(dir, 'log', '--format=%s').trim()).toBe('first');
    expect(git(dir, 'rev-parse', 'HEAD').trim()).toBe(git(origin, 'rev-parse', 'v1').trim());
  });

  it('refuses what cannot be a workspace, naming it, and leaves no folder behind', async () => {
    const dir = target();
    const noPrepare = originalLike();
    git(noPrepare, 'rm', '-q', 'prepare.py');
    git(noPrepare, ...ID, 'commit', '-qm', 'drop prepare');
    const missing = await cli(['init', dir, '--from', noPrepare]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/is not laid out like autoresearch: prepare\.py missing at its root/);
    expect(fs.existsSync(dir)).toBe(false);
    const ref = await cli(['init', dir, '--from', originalLike(), '--ref', 'nope']);
    expect(ref.stderr).toMatch(/has no branch, tag or commit named "nope"/);
    expect(fs.existsSync(dir)).toBe(false);
    const nowhere = await cli(['init', dir, '--from', path.join(os.tmpdir(), 'no-such-repo-here')]);
    expect(nowhere.stderr).toMatch(/cannot clone .*no-such-repo-here: .*; check the URL or path/);
    expect(fs.existsSync(dir)).toBe(false);
    const budget = await cli(['init', dir, '--from', originalLike(), '--budget', '60']);
    expect(budget.stderr).toMatch(/set budget_s in its program\.md front matter/);
    const both = await cli(['init', dir, '--from', originalLike(), '--template', 'tiny-cpu']);
    expect(both.stderr).toMatch(/--template and --from exclude each other/);
    const option = await cli(['init', dir, '--from', '--upload-pack=touch /tmp/ar-pwned']);
    expect(option.stderr).toMatch(/a URL or path may not start with "-"/);
    expect(fs.existsSync(dir)).toBe(false);
    for (const r of [missing, ref, nowhere, budget, both, option]) expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
