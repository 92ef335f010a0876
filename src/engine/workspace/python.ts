/** The workspace's Python: found once, used for the syntax check and put first on the run's PATH. */
import { exec } from '../git/exec';
import * as path from 'node:path';

/** The interpreter to use: --python, $AUTORESEARCH_PYTHON, else python3/python on PATH. */
export function resolvePython(explicit?: string): string {
  return explicit ?? process.env.AUTORESEARCH_PYTHON ?? 'python3';
}

/**
 * The interpreter's real path. Resolved once because a launcher (pyenv's shim,
 * a wrapper script) costs a process start of its own each call, which the syntax check would pay
 * each experiment.
 */
export async function locatePython(python: string): Promise<string> {
  let r;
  try {
    r = await exec(python, ['-c', 'import sys; print(sys.executable)']);
  } catch (e) {
    const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
    throw new Error(
      missing
        ? `Python interpreter "${python}" not found; install Python 3 or pass --python /path/to/python`
        : `Python interpreter "${python}" does not run: ${(e as Error).message}`,
      { cause: e },
    );
  }
  if (r.code !== 0) {
    throw new Error(`Python interpreter "${python}" does not run: ${r.stderr.trim() || `exit code ${r.code}`}`);
  }
  return r.stdout.trim() || python;
}

/** PATH with the interpreter's folder first, so `python train.py` means that interpreter. */
export function pathWithPython(python: string): Record<string, string> {
  if (!python.includes('/')) {
    return {};
  }
  return { PATH: `${path.dirname(path.resolve(python))}${path.delimiter}${process.env.PATH ?? ''}` };
}

const CHECK = `import ast, sys
for f in sys.argv[1:]:
    try:
        ast.parse(open(f, encoding="utf-8").read(), f)
    except SyntaxError as e:
        print(f"{e.filename}:{e.lineno}: {e.msg}", file=sys.stderr)
        sys.exit(1)
`;

/** Null when the files parse, else the SyntaxError as one line. Non-Python files are skipped. */
export async function syntaxCheck(python: string, cwd: string, files: string[]): Promise<string | null> {
  const py = files.filter(f => f.endsWith('.py'));
  if (py.length === 0) {
    return null;
  }
  // -I -S: no user site, no site-packages scan; ast is all the check needs and start-up halves.
  let r;
  try {
    r = await exec(python, ['-I', '-S', '-c', CHECK, ...py], { cwd });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`Python interpreter "${python}" not found; install Python 3 or pass --python /path/to/python`, {
        cause: e,
      });
    }
    throw e;
  }
  return r.code === 0 ? null : r.stderr.trim().split('\n').pop() || 'syntax error';
}
