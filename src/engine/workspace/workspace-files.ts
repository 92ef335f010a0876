/**
 * The engine never follows what a run planted. A training run can write the workspace (and,
 * without the sandbox, the engine's `.autoresearch/` too): a link at program.md or train.py, a
 * FIFO, or a link at a temp name the engine is about to write. Every workspace file is read here
 * without following links and without blocking (a FIFO opens and is refused at once), and every
 * file is written through a temp file created exclusively under an unpredictable name, then
 * renamed over the target: a rename replaces a link, it never writes through one.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { STATE_DIR } from '../../core/journal/layout';
import { UserError } from '../user-error';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = fs.constants;

/** A workspace file that is not a regular file of the workspace; the message names it and the fix. */
export class NotRegularFile extends UserError {}

/** What kind of thing a stat describes, in words, when it is not a regular file. */
function kindOf(stat: fs.Stats): string {
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isFIFO()) return 'a FIFO';
  if (stat.isSocket()) return 'a socket';
  if (stat.isDirectory()) return 'a folder';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

function refusal(file: string, what: string): NotRegularFile {
  return new NotRegularFile(
    `${file} is ${what}, not a regular file; the engine reads and writes only regular files of the workspace ` +
      `(a training run may have put it there): replace it with a regular file (git checkout -- ${path.basename(file)} restores a committed one)`,
  );
}

/** Why `rel` in `dir` is not a regular file of the workspace (a link, a FIFO, …, or in a folder leading out), or null; absent is null. */
export function notRegularProblem(dir: string, rel: string): string | null {
  try {
    check(dir, rel, fs.lstatSync(path.join(dir, rel)));
    return null;
  } catch (e) {
    if (e instanceof NotRegularFile) return e.message;
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw e;
  }
}

function check(dir: string, rel: string, stat: fs.Stats): void {
  const file = path.join(dir, rel);
  if (stat.isSymbolicLink()) {
    let to = '';
    try {
      to = ` (to ${fs.readlinkSync(file)})`;
    } catch {
      // gone meanwhile: still a refusal
    }
    throw refusal(file, `a symbolic link${to}`);
  }
  if (!stat.isFile()) throw refusal(file, kindOf(stat));
  // A file in a subfolder: the folder may be a link that leads out of the workspace.
  if (path.dirname(path.normalize(rel)) !== '.') {
    const top = fs.realpathSync(dir);
    const parent = fs.realpathSync(path.dirname(file));
    if (parent !== top && !parent.startsWith(top + path.sep)) {
      throw new NotRegularFile(
        `${file} lies in a folder that leads out of the workspace (to ${parent}); make ${path.dirname(rel)} a real folder of the workspace`,
      );
    }
  }
}

/**
 * Opens a regular file of the workspace for reading: never through a link, never blocking on a
 * FIFO; NotRegularFile for anything else. ENOENT passes through as it is.
 */
export function openRegular(dir: string, rel: string): number {
  // lstat first: a device or socket is refused before open() could touch it.
  check(dir, rel, fs.lstatSync(path.join(dir, rel)));
  return openNoFollow(path.join(dir, rel));
}

/** Opens `file` for reading if it is a regular file: not through a link, never blocking; NotRegularFile else. */
export function openNoFollow(file: string): number {
  let fd: number;
  try {
    fd = fs.openSync(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // A link (ELOOP), or a socket (ENXIO), perhaps swapped in since a check.
    if (code === 'ELOOP') throw refusal(file, 'a symbolic link');
    if (code === 'ENXIO') throw refusal(file, 'a socket');
    throw e;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) throw refusal(file, kindOf(stat));
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
  return fd;
}

/**
 * Opens a file of the engine's state folder (a run's log) as openNoFollow does, and refuses it
 * when any folder from `.autoresearch/` down is a link: a run that can write that folder (the
 * sandbox off) could swap one for a link to anywhere, and what is read may go to the Messages API.
 * The path is checked again once open, so a folder swapped in between is caught too.
 */
export function openStateFile(file: string): number {
  const parts = path.resolve(file).split(path.sep);
  const top = parts.lastIndexOf(STATE_DIR);
  const linked = () => {
    for (let i = Math.max(top, 1); i < parts.length - 1; i++) {
      if (fs.lstatSync(parts.slice(0, i + 1).join(path.sep)).isSymbolicLink()) return true;
    }
    return false;
  };
  if (top >= 0 && linked()) throw refusal(file, 'reached through a symbolic link');
  const fd = openNoFollow(file);
  try {
    const opened = fs.fstatSync(fd);
    const now = fs.lstatSync(file);
    if ((top >= 0 && linked()) || now.ino !== opened.ino || now.dev !== opened.dev)
      throw refusal(file, 'reached through a symbolic link');
  } catch (e) {
    fs.closeSync(fd);
    throw e;
  }
  return fd;
}

/** The bytes of `file` (an engine's own file, say), read as openNoFollow opens it. */
export function readNoFollow(file: string): Buffer {
  const fd = openNoFollow(file);
  try {
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The bytes of a regular file of the workspace (see openRegular). */
export function readRegular(dir: string, rel: string): Buffer {
  const fd = openRegular(dir, rel);
  try {
    return fs.readFileSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** The text of a regular file of the workspace (see openRegular). */
export function readRegularText(dir: string, rel: string): string {
  return readRegular(dir, rel).toString('utf8');
}

/** The bytes of a regular file of the workspace, or null when there is none. */
export function readRegularIfAny(dir: string, rel: string): Buffer | null {
  try {
    return readRegular(dir, rel);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw e;
  }
}

/** A fresh temp file in `folder` under an unpredictable name, created exclusively (never a planted link); its path and fd. */
function exclusiveTemp(folder: string, base: string, mode: number): { tmp: string; fd: number } {
  const tmp = path.join(folder, `.${base}.${randomBytes(8).toString('hex')}.tmp`);
  return { tmp, fd: fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode) };
}

function writeThrough(tmp: string, fd: number, data: string | Buffer, target: string): void {
  try {
    try {
      fs.writeFileSync(fd, data);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, target);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}

/**
 * Writes a file as a whole, atomically, without following what is at its name: a temp file made
 * exclusively beside it (unpredictable name), then renamed over it. For the engine's own files.
 */
export function replaceFile(file: string, data: string | Buffer, mode = 0o644): void {
  const { tmp, fd } = exclusiveTemp(path.dirname(file), path.basename(file), mode);
  writeThrough(tmp, fd, data, file);
}

/**
 * Writes a file of the workspace (program.md, an editable file, an export) as a whole: the temp
 * file is made in `.autoresearch/`, which a sandboxed run cannot write, then renamed over the
 * target, so a link or FIFO a run put there is replaced, never written through. The file keeps
 * its mode when it was a regular file. A folder in its path that leads out of the workspace is refused.
 */
export function writeWorkspaceFile(dir: string, rel: string, data: string | Buffer): void {
  const file = path.join(dir, rel);
  let mode = 0o644;
  try {
    const stat = fs.lstatSync(file);
    if (stat.isFile()) mode = stat.mode & 0o7777;
  } catch {
    // new file
  }
  if (path.dirname(path.normalize(rel)) !== '.') {
    const top = fs.realpathSync(dir);
    const parent = fs.realpathSync(path.dirname(file));
    if (parent !== top && !parent.startsWith(top + path.sep)) {
      throw new NotRegularFile(
        `cannot write ${file}: its folder leads out of the workspace (to ${parent}); make ${path.dirname(rel)} a real folder of the workspace`,
      );
    }
  }
  const state = path.join(dir, STATE_DIR);
  fs.mkdirSync(state, { recursive: true });
  const stateStat = fs.lstatSync(state);
  // A .autoresearch that is not a real folder (a link, without the sandbox): the temp goes beside the target.
  const { tmp, fd } = exclusiveTemp(
    stateStat.isDirectory() ? state : path.dirname(file),
    `write-${path.basename(file)}`,
    mode,
  );
  try {
    writeThrough(tmp, fd, data, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EXDEV') throw e;
    // .autoresearch on another file system (a mount): the temp goes beside the target instead.
    replaceFile(file, data, mode);
  }
}

/** Opens `file` to append (created if absent): never through a link, never waiting on a FIFO; NotRegularFile else. */
export function openAppend(file: string): number {
  let fd: number;
  try {
    fd = fs.openSync(file, O_WRONLY | fs.constants.O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o644);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw refusal(file, 'a symbolic link');
    // A FIFO with no reader (or a socket): refused, never waited on.
    if (code === 'ENXIO') throw refusal(file, 'a FIFO or socket');
    throw e;
  }
  const stat = fs.fstatSync(fd);
  if (!stat.isFile()) {
    fs.closeSync(fd);
    throw refusal(file, kindOf(stat));
  }
  return fd;
}
