/**
 * git as the engine runs it obeys nothing a training run could have written. Without the sandbox
 * a run can write .git/config, .git/hooks, .git/info/attributes and .gitattributes, and git
 * would run what they name (hooks, fsmonitor, filters, diff and merge drivers, signing programs)
 * inside the engine, whose /proc/<pid>/environ holds the user's secrets. git cannot be told to
 * ignore a repository's config, so every command gets config of the command's own scope (which
 * wins over every file) that switches those off: fixed keys for what has a fixed name, and, for
 * the drivers a config names itself, one override per driver found by reading the config (which
 * runs nothing) whenever its files changed. System and global config are not read at all; the
 * user's identity and safe.directory entries are read from them once and passed on.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { exec } from './exec';
import { UserError } from '../user-error';

type Pair = readonly [string, string];

/**
 * What every command gets, whatever the config says. An empty program fails closed: git reports
 * that it cannot run "" rather than running anything (the engine's diffs pass --no-ext-diff
 * --no-textconv, so they never get that far).
 */
const FIXED: Pair[] = [
  // /dev/null/<hook> is never a file, so no hook runs (git 2.39 accepts it; no folder to own).
  ['core.hooksPath', '/dev/null'],
  ['core.fsmonitor', 'false'],
  ['core.sshCommand', 'ssh'],
  ['core.askPass', ''],
  ['credential.helper', ''],
  ['core.pager', 'cat'],
  ['core.editor', 'false'],
  ['sequence.editor', 'false'],
  ['core.alternateRefsCommand', ''],
  ['diff.external', ''],
  ['commit.gpgSign', 'false'],
  ['tag.gpgSign', 'false'],
  ['log.showSignature', 'false'],
  ['gpg.program', ''],
  ['gpg.openpgp.program', ''],
  ['gpg.x509.program', ''],
  ['gpg.ssh.program', ''],
  ['gpg.ssh.defaultKeyCommand', ''],
  ['uploadpack.packObjectsHook', ''],
  ['submodule.recurse', 'false'],
  ['protocol.ext.allow', 'never'],
];

/** The keys of each driver a config defines, and what disables them. */
const DRIVER_OFF: Record<string, Pair[]> = {
  filter: [
    ['clean', ''],
    ['smudge', ''],
    ['process', ''],
    ['required', 'false'],
  ],
  diff: [
    ['command', ''],
    ['textconv', ''],
  ],
  merge: [['driver', '']],
};

/** Environment variables of the user's that still apply: the commit identity and where git's own programs are. */
const KEPT_GIT_ENV = /^GIT_(AUTHOR|COMMITTER)_(NAME|EMAIL|DATE)$|^GIT_EXEC_PATH$/;

/** From the user's system and global config, read once: what the engine still honours of them. */
export interface UserGitConfig {
  name?: string;
  email?: string;
  safeDirectories: string[];
}

let userConfig: Promise<UserGitConfig> | null = null;

/**
 * The user's identity and safe.directory entries, read once per engine from system and global
 * config (outside any repository, so no repository's config takes part). Later edits, a run's
 * included, change nothing.
 */
export function userGitConfig(): Promise<UserGitConfig> {
  userConfig ??= exec(
    'git',
    ['config', '--null', '--includes', '--get-regexp', '^(user\\.(name|email)|safe\\.directory)$'],
    {
      cwd: '/',
      env: { ...userEnv(), GIT_DIR: '/nonexistent/.git' },
    },
  ).then(
    r => {
      const found: UserGitConfig = { safeDirectories: [] };
      for (const entry of r.code === 0 ? r.stdout.split('\0') : []) {
        const nl = entry.indexOf('\n');
        if (nl < 0) continue;
        const [key, value] = [entry.slice(0, nl), entry.slice(nl + 1)];
        if (key === 'user.name') found.name = value;
        else if (key === 'user.email') found.email = value;
        else if (key === 'safe.directory') found.safeDirectories.push(value);
      }
      return found;
    },
    () => ({ safeDirectories: [] }),
  );
  return userConfig;
}

/** The process's environment less git's own variables (but the identity's). */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('GIT_') || KEPT_GIT_ENV.test(k)) env[k] = v;
  }
  delete env.SSH_ASKPASS;
  return env;
}

/** userEnv with config files outside the repository off, and nothing interactive. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = userEnv();
  env.GIT_CONFIG_NOSYSTEM = '1';
  env.GIT_CONFIG_GLOBAL = '/dev/null';
  env.GIT_TERMINAL_PROMPT = '0';
  env.GIT_PAGER = 'cat';
  env.GIT_EDITOR = 'false';
  env.GIT_SEQUENCE_EDITOR = 'false';
  return env;
}

/** The environment for a git command with the fixed overrides and `extra` as command-scope config. */
export function guardedEnv(extra: readonly Pair[] = [], safeDirectories: readonly string[] = []): NodeJS.ProcessEnv {
  const env = baseEnv();
  // GIT_CONFIG_COUNT rather than -c: a driver's name may hold '=' or '.', which -c would misread.
  const pairs: Pair[] = [...FIXED, ...safeDirectories.map(d => ['safe.directory', d] as const), ...extra];
  env.GIT_CONFIG_COUNT = String(pairs.length);
  pairs.forEach(([k, v], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = k;
    env[`GIT_CONFIG_VALUE_${i}`] = v;
  });
  return env;
}

/** What reading a repository's config found: the overrides its drivers need, and its own identity. */
export interface ConfigScan {
  overrides: Pair[];
  name?: string;
  email?: string;
}

/** Reads the config a repository's commands would see (local and per-worktree; includes refused) from `git config --list`. */
export function scanConfig(listing: string, where: string): ConfigScan {
  const scan: ConfigScan = { overrides: [] };
  const seen = new Set<string>();
  for (const entry of listing.split('\0')) {
    const nl = entry.indexOf('\n');
    const key = nl < 0 ? entry : entry.slice(0, nl);
    const value = nl < 0 ? '' : entry.slice(nl + 1);
    if (!key) continue;
    if (key === 'include.path' || /^includeif\..*\.path$/i.test(key)) {
      throw new UserError(
        `the git config of ${where} includes another file (${key} = ${value}); the engine runs git only with ` +
          `config it has read itself: remove it with \`git -C ${where} config --unset-all '${key}'\``,
      );
    }
    if (key === 'user.name') scan.name = value;
    else if (key === 'user.email') scan.email = value;
    const m = /^(filter|diff|merge)\.(.+)\.[^.]+$/i.exec(key);
    if (m) {
      const section = m[1].toLowerCase();
      const id = `${section}.${m[2]}`;
      if (seen.has(id)) continue;
      seen.add(id);
      for (const [k, v] of DRIVER_OFF[section]) scan.overrides.push([`${id}.${k}`, v]);
    }
  }
  return scan;
}

/**
 * The config files git reads for the work tree `dir` (the common dir's config and the per-worktree
 * config.worktree), and a key of their identity and times: it changes whenever one of them is
 * written, replaced or created. A few stats (and, in a linked worktree, two tiny reads).
 */
export function configKey(dir: string): string {
  const dotGit = path.join(dir, '.git');
  const st = fs.lstatSync(dotGit, { throwIfNoEntry: false });
  if (!st) return 'no .git';
  let gitDir = dotGit;
  if (!st.isDirectory()) {
    const m = st.isFile() ? /^gitdir:\s*(.+?)\s*$/m.exec(readSmall(dotGit)) : null;
    if (!m) return `odd .git ${st.ino}:${st.mtimeMs}`;
    gitDir = path.resolve(dir, m[1]);
  }
  const commonFile = path.join(gitDir, 'commondir');
  const common = fs.existsSync(commonFile) ? path.resolve(gitDir, readSmall(commonFile).trim()) : gitDir;
  const parts = [gitDir, common];
  for (const file of [path.join(common, 'config'), path.join(gitDir, 'config.worktree')]) {
    const s = fs.lstatSync(file, { bigint: true, throwIfNoEntry: false });
    if (s && !s.isFile()) {
      // A link's target could change unseen, and a FIFO would hang every git command.
      throw new UserError(`${file} is not a regular file; make it one (the engine does not follow links there)`);
    }
    parts.push(s ? `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}` : '-');
  }
  return parts.join('|');
}

/** A small file's text; a FIFO or a huge file in its place reads as nothing rather than blocking. */
function readSmall(file: string): string {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  } catch {
    return '';
  }
  try {
    const st = fs.fstatSync(fd);
    return st.isFile() && st.size < 65536 ? fs.readFileSync(fd, 'utf8') : '';
  } finally {
    fs.closeSync(fd);
  }
}
