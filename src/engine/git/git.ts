/**
 * The git operations the loop needs, on one work tree, through the git CLI.
 * Not simple-git: it added ~50 ms to every git command that prints nothing
 * (status, reset), which alone broke the engine's overhead budget.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { exec } from './exec';
import { configKey, type ConfigScan, guardedEnv, scanConfig, userGitConfig } from './git-guard';
import type { Mutex } from '../run/mutex';
import { NotRegularFile, readNoFollow, readRegularIfAny, writeWorkspaceFile } from '../workspace/workspace-files';

/** Files the engine writes that must never be committed nor count as a dirty tree. */
export const ENGINE_IGNORES = ['.autoresearch/', 'results.tsv'];

/** git's version; rejects with a MissingProgram that says how to install git when there is none. */
export async function gitVersion(): Promise<string> {
  const r = await exec('git', ['--version']);
  return r.stdout.trim();
}

export class Repo {
  /**
   * `lock`: shared by the work trees of one repository when several workers use
   * it at once, so their git commands (which update shared refs and may start
   * an automatic gc) run one at a time. A single worker needs none.
   */
  constructor(
    readonly dir: string,
    private readonly lock?: Mutex,
  ) {
    // Read now, at the engine's start, before any run could have edited the user's config.
    void userGitConfig();
  }

  /** Runs git with the given arguments in the work tree; rejects with git's own message. */
  raw(args: string[]): Promise<string> {
    return this.lock ? this.lock.run(() => this.rawUnlocked(args)) : this.rawUnlocked(args);
  }

  private async rawUnlocked(args: string[]): Promise<string> {
    const [user, scan] = await Promise.all([userGitConfig(), this.configScan()]);
    const env = {
      ...guardedEnv(scan.overrides, user.safeDirectories),
      // The ceiling: with the work tree's .git gone (a training run may delete it), git must fail
      // here, not go up and reset, commit or check out in whatever repository encloses the folder.
      GIT_CEILING_DIRECTORIES: path.dirname(path.resolve(this.dir)),
      // Wins over a core.worktree planted in the config, which would move every reset elsewhere
      // (git init, which has no config yet, refuses it without a GIT_DIR).
      ...(args[0] === 'init' ? {} : { GIT_WORK_TREE: path.resolve(this.dir) }),
    };
    const r = await exec('git', args, { cwd: this.dir, maxBuffer: 256 * 1024 * 1024, env });
    if (r.code !== 0) {
      if (repositoryGone(this.dir)) {
        throw new Error(`git ${args[0]} failed: the git repository of ${this.dir} is gone (its .git was deleted)`);
      }
      throw new Error(
        `git ${args[0]} failed: ${r.stderr.trim() || (r.signal ? `killed by ${r.signal}` : `exit code ${r.code}`)}`,
      );
    }
    return r.stdout;
  }

  private scanned: { key: string; scan: ConfigScan } | null = null;
  /**
   * The overrides the repository's config needs, read again only when one of its files changed
   * (a few stats per command). The listing itself runs nothing, and follows no include.
   */
  private async configScan(): Promise<ConfigScan> {
    const key = configKey(this.dir);
    if (this.scanned?.key === key) return this.scanned.scan;
    const r = await exec('git', ['config', '--list', '--null', '--no-includes'], {
      cwd: this.dir,
      env: { ...guardedEnv(), GIT_CEILING_DIRECTORIES: path.dirname(path.resolve(this.dir)) },
    });
    // No repository (yet, or any more): the command itself fails with git's own message.
    if (r.code !== 0) return { overrides: [] };
    const scan = scanConfig(r.stdout, this.dir);
    this.scanned = { key, scan };
    return scan;
  }

  /** True when dir is the top of a git work tree. */
  async isRepoRoot(): Promise<boolean> {
    if (!fs.existsSync(path.join(this.dir, '.git'))) {
      return false;
    }
    try {
      const top = (await this.raw(['rev-parse', '--show-toplevel'])).trim();
      return fs.realpathSync(top) === fs.realpathSync(this.dir);
    } catch {
      return false;
    }
  }

  async hasCommits(): Promise<boolean> {
    try {
      await this.raw(['rev-parse', '--verify', 'HEAD']);
      return true;
    } catch {
      return false;
    }
  }

  /** Tracked files with changes (staged or not); untracked files don't count. */
  async changedTrackedFiles(): Promise<string[]> {
    const out = await this.raw(['status', '--porcelain=v1', '--untracked-files=no', '-z']);
    return out
      .split('\0')
      .filter(e => e.length > 3)
      .map(e => e.slice(3));
  }

  /** Adds the engine's own files to .git/info/exclude, so a repository needs no .gitignore of ours. */
  ensureEngineIgnores(): void {
    const rel = path.join('.git', 'info', 'exclude');
    fs.mkdirSync(path.join(this.dir, '.git', 'info'), { recursive: true });
    // Read and written without following a link a run without the sandbox may have put there.
    const current = readRegularIfAny(this.dir, rel)?.toString('utf8') ?? '';
    const lines = current.split('\n');
    const missing = ENGINE_IGNORES.filter(p => !lines.includes(p));
    if (missing.length) {
      const sep = current.length && !current.endsWith('\n') ? '\n' : '';
      writeWorkspaceFile(this.dir, rel, current + sep + missing.join('\n') + '\n');
    }
  }

  async head(): Promise<string> {
    return (await this.raw(['rev-parse', 'HEAD'])).trim();
  }

  async currentBranch(): Promise<string | null> {
    const name = (await this.raw(['rev-parse', '--abbrev-ref', 'HEAD'])).trim();
    return name === 'HEAD' ? null : name;
  }

  async branchExists(name: string): Promise<boolean> {
    const out = await this.raw(['branch', '--list', name]);
    return out.trim() !== '';
  }

  async createBranch(name: string): Promise<void> {
    await this.raw(['checkout', '-q', '-b', name]);
  }

  async checkout(name: string): Promise<void> {
    await this.raw(['checkout', '-q', '-f', name]);
  }

  /** Unified diff of the given paths against HEAD (work tree included). */
  async diff(paths: string[]): Promise<string> {
    return this.raw(['diff', '--no-color', '--no-ext-diff', '--no-textconv', 'HEAD', '--', ...paths]);
  }

  /** Unified diff of the given paths between two commits. */
  async diffCommits(from: string, to: string, paths: string[]): Promise<string> {
    return this.raw(['diff', '--no-color', '--no-ext-diff', '--no-textconv', from, to, '--', ...paths]);
  }

  /** Commits exactly the given paths with the message; returns the new commit's hash. */
  async commit(paths: string[], message: string): Promise<string> {
    const identity = await this.identity();
    const commit = () =>
      this.raw([...identity, 'commit', '-q', '--no-verify', '-m', message || '(no description)', '--', ...paths]);
    try {
      // Tracked paths commit straight from the work tree; a new file needs `git add` first.
      await commit();
    } catch {
      await this.raw(['add', '--', ...paths]);
      await commit();
    }
    return this.head();
  }

  /**
   * Resets the work tree and the branch to a commit, except program.md: the researcher may have
   * edited it since the last commit (the panel saves it mid-run), and a discarded experiment must
   * not throw that away. Its text is put back when it differs from what the reset left.
   */
  async resetHard(commit: string): Promise<void> {
    // Never through a link or FIFO a run left at program.md: such a file is not kept, and the
    // reset puts the committed program.md in its place.
    const keep = () => {
      try {
        return readRegularIfAny(this.dir, 'program.md');
      } catch (e) {
        if (e instanceof NotRegularFile) return null;
        throw e;
      }
    };
    const edited = keep();
    await this.raw(['reset', '-q', '--hard', commit]);
    if (edited !== null && !keep()?.equals(edited)) {
      writeWorkspaceFile(this.dir, 'program.md', edited);
    }
  }

  /** The commit a ref names, or null when there is no such ref. */
  async revParse(ref: string): Promise<string | null> {
    try {
      return (await this.raw(['rev-parse', '--verify', '-q', `${ref}^{commit}`])).trim() || null;
    } catch {
      return null;
    }
  }

  /** A file's text at a commit. */
  async showFile(commit: string, file: string): Promise<string> {
    return this.raw(['show', `${commit}:${file}`]);
  }

  /** Files git tracks among the given paths. */
  async trackedAmong(paths: string[]): Promise<string[]> {
    const out = await this.raw(['ls-files', '-z', '--', ...paths]);
    return out.split('\0').filter(Boolean);
  }

  /** Creates a work tree at `where` on `branch`, (re)set to `commit`. */
  async addWorktree(where: string, branch: string, commit: string): Promise<void> {
    // Forced twice: a worktree whose creation a kill -9 cut short is left registered and locked.
    await this.raw(['worktree', 'add', '-q', '--force', '--force', '-B', branch, where, commit]);
  }

  /** Removes a work tree (its folder too), and forgets any whose folder is gone. */
  async removeWorktree(where: string): Promise<void> {
    await this.raw(['worktree', 'remove', '--force', '--force', where]).catch(() => undefined);
    fs.rmSync(where, { recursive: true, force: true });
    await this.raw(['worktree', 'prune']);
  }

  /**
   * Who commits: the repository's own user.name/email where it sets them, else the user's as read
   * at the engine's start (their global config is hidden from git itself), else autoresearch's.
   */
  private async identity(): Promise<string[]> {
    const [user, scan] = await Promise.all([userGitConfig(), this.configScan()]);
    const name = scan.name || user.name;
    const email = scan.email || user.email;
    if (!name || !email) return ['-c', 'user.name=autoresearch', '-c', 'user.email=autoresearch@localhost'];
    return [...(scan.name ? [] : ['-c', `user.name=${name}`]), ...(scan.email ? [] : ['-c', `user.email=${email}`])];
  }
}

/**
 * Whether a work tree's git repository is gone: its .git deleted, or, for a worktree, the
 * repository its .git file points to. One stat (two for a worktree), so it is cheap after each run.
 */
export function repositoryGone(dir: string): boolean {
  const dotGit = path.join(dir, '.git');
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dotGit);
  } catch {
    return true;
  }
  if (stat.isDirectory()) {
    return !fs.existsSync(path.join(dotGit, 'HEAD'));
  }
  // A worktree's .git file; anything else there (a FIFO a run made) is no repository, and is never waited on.
  if (!stat.isFile()) return true;
  let text: string;
  try {
    text = readNoFollow(dotGit).toString('utf8');
  } catch {
    return true;
  }
  const m = /^gitdir:\s*(.+?)\s*$/m.exec(text);
  return !m || !fs.existsSync(path.resolve(dir, m[1]));
}

/** Lines added and removed in a unified diff. */
export function countDiffLines(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of diff.split('\n')) {
    if (line.startsWith('+') && !line.startsWith('+++')) {
      added++;
    } else if (line.startsWith('-') && !line.startsWith('---')) {
      removed++;
    }
  }
  return { added, removed };
}
