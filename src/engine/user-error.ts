/** An error meant for the user: the CLI prints its message alone, without a stack. */
export class UserError extends Error {}

/** A program the engine runs (git) is not installed: a UserError that says how to install it. */
export class MissingProgram extends UserError {}

/** How to install each program the engine needs, in words. */
const INSTALL: Record<string, string> = {
  git: 'install git (Debian/Ubuntu: sudo apt-get install git; Fedora: sudo dnf install git; macOS: xcode-select --install; others: https://git-scm.com/downloads) and put it on the PATH',
};

/** The error for `file` not found on the PATH. */
export function missingProgram(file: string): MissingProgram {
  const how = INSTALL[file] ?? `install ${file} and put it on the PATH`;
  return new MissingProgram(`${file} is not installed or not on the PATH (PATH=${process.env.PATH ?? ''}); ${how}`);
}

/** What a file error means, by its code, and how the user mends it ({able}: readable or writable). */
const FILE_TROUBLE: Record<string, [why: string, fix: string]> = {
  EACCES: ['permission denied', "make it and its folder {able} by the engine's user"],
  EPERM: ['not permitted (is it immutable, chattr +i?)', "make it and its folder {able} by the engine's user"],
  EROFS: ['the file system is read-only', 'remount it read-write, or move the workspace to a writable disk'],
  ENOSPC: ['the disk is full', 'free some space'],
  EDQUOT: ['the disk quota is used up', 'free some space or raise the quota'],
  EFBIG: ['the file is larger than this process may write (ulimit -f)', 'raise the limit'],
  EISDIR: ['it is a folder', 'move the folder out of the way'],
  ENOTDIR: ['a folder on its path is not a folder', 'put the folder back'],
};

/**
 * A file the engine could not read or write, in one line: which file (`what` names it for the
 * reader), why, and how to mend it, then `then` (what to run next). Errors without a system
 * error code are not the file's: they are returned as they are.
 */
export function fileError(verb: 'read' | 'write', what: string, file: string, e: unknown, then: string): unknown {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== 'string' || e instanceof UserError) return e;
  const uid = process.getuid?.();
  const [why, fix] = FILE_TROUBLE[code] ?? [(e as Error).message, 'make it {able}'];
  const user = (code === 'EACCES' || code === 'EPERM') && uid !== undefined ? ` (uid ${uid})` : '';
  const mend = fix.replace('{able}', verb === 'read' ? 'readable' : 'writable') + user;
  return new UserError(`cannot ${verb} ${what} ${file}: ${why}; ${mend}, ${then}`);
}
