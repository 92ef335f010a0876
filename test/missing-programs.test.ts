/** Without git on the PATH the CLI says what is missing and how to install it: exit 1, one line, no stack. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingModuleWords } from '../src/engine/experiment/measure';
import { cli, experiments, makeWorkspace } from './helpers/workspace';

/** A PATH with python3 but no git. */
function pathWithoutGit(): string {
  const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-nogit-'));
  const python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  fs.symlinkSync(python, path.join(bin, 'python3'));
  return bin;
}

describe('a machine without git', () => {
  it('init and run name git and how to install it', async () => {
    const env = { PATH: pathWithoutGit() };
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ar-nogit-ws-')), 'ws');
    const init = await cli(['init', dir], { env });
    expect(init.code).toBe(1);
    expect(init.stderr).toMatch(/^autoresearch: git is not installed or not on the PATH .*sudo apt-get install git/);
    expect(init.stderr.trim().split('\n')).toHaveLength(1);
    expect(init.stderr).not.toMatch(/internal error|ENOENT|\s{4}at /);
    const ws = makeWorkspace();
    const run = await cli(['run', ws, '--max-experiments', '1'], { env });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/git is not installed or not on the PATH/);
    expect(run.stderr).not.toMatch(/internal error|\s{4}at /);
  });
});

describe('a training run without a module it imports', () => {
  it('crashes with the module, the interpreter that ran it, and how to install it there', async () => {
    const ws = makeWorkspace({ train: 'import os\nimport no_such_module_xyz.sub\n' });
    const python = execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
    const r = await cli(['run', ws, '--tag', 'm1', '--max-experiments', '1', '--python', python]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the baseline crashed \(.*\); install it — the log is /);
    const [baseline] = experiments(ws, 'm1');
    expect(baseline.status).toBe('crash');
    expect(baseline.reason).toBe(
      `exited with code 1: the Python module no_such_module_xyz is not installed in ${python}; install it there (${python} -m pip install no_such_module_xyz; its package may have another name)`,
    );
  });

  it('names the kernel when a kernel ran it', () => {
    const tail = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n";
    const noRequirements = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-noreq-'));
    expect(missingModuleWords(tail, { python: '/usr/bin/python3', kernel: 'gpu-py311' }, noRequirements)).toBe(
      "the Python module torch is not installed in the gpu-py311 kernel's environment; install it there (%pip install torch --index-url https://download.pytorch.org/whl/cpu in a notebook on the gpu-py311 kernel; CPU build; for a CUDA build, the command for your CUDA version is at https://pytorch.org/get-started/locally/)",
    );
    expect(missingModuleWords('ValueError: x', { python: 'python3', kernel: null }, noRequirements)).toBeNull();
  });
});
