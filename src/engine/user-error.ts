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
