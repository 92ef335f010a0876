/**
 * What a workspace says its Python needs, for the hint a run that lacks a module gets: the
 * workspace's own `requirements.txt` (the bundled templates ship one, and `autoresearch init`
 * copies it), so the hint quotes the pin the workspace was written for instead of an unpinned
 * `pip install torch`, which on Linux brings whatever CUDA build pip picks. The pin is written
 * once, in the template's file; the engine only knows where PyTorch keeps its builds.
 *
 * The file lies in the workspace, so a training run may have planted it: only a plain
 * `name` or `name==version` line is ever quoted, and only for the module that was missing.
 */
import * as fs from 'node:fs';
import { openRegular } from '../workspace/workspace-files';

export const REQUIREMENTS_FILE = 'requirements.txt';
/** PyTorch's indexes, one a build (cpu, cu128, rocm6.4, …), as https://pytorch.org/get-started/locally/ gives them. */
const TORCH_INDEXES = 'https://download.pytorch.org/whl';
export const TORCH_CPU_INDEX = `${TORCH_INDEXES}/cpu`;
/** Where PyTorch gives the install command for each CUDA (or ROCm) version. */
export const TORCH_SELECTOR = 'https://pytorch.org/get-started/locally/';
/** Packages built per accelerator, from PyTorch's own indexes. */
const TORCH_BUILT = new Set(['torch', 'torchvision', 'torchaudio']);

/** A requirements file larger than this is not one a person wrote; it is not read. */
const MAX_BYTES = 64 * 1024;
/** `name`, or `name==version`, with an optional comment: the lines quoted; any other form is skipped. */
const PLAIN_LINE = /^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:==\s*([0-9][0-9A-Za-z.+!]*))?\s*(?:#.*)?$/;

/** A distribution name as pip compares them (PEP 503): case and runs of `-_.` do not matter. */
function normalized(name: string): string {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

/** The workspace's requirements.txt, or '' where there is none or it cannot be read as a plain small file. */
function requirementsText(dir: string): string {
  let fd: number;
  try {
    fd = openRegular(dir, REQUIREMENTS_FILE);
  } catch {
    return '';
  }
  try {
    const buf = Buffer.alloc(MAX_BYTES + 1);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    return n > MAX_BYTES ? '' : buf.subarray(0, n).toString('utf8');
  } catch {
    return '';
  } finally {
    fs.closeSync(fd);
  }
}

/** How requirements.txt declares the package `name` (`torch==2.13.0`, or `numpy` unpinned), or null. */
export function declaredRequirement(dir: string, name: string): string | null {
  const want = normalized(name);
  for (const line of requirementsText(dir).split('\n')) {
    const m = PLAIN_LINE.exec(line.trim());
    if (m && normalized(m[1]) === want) return m[2] ? `${m[1]}==${m[2]}` : m[1];
  }
  return null;
}

/**
 * What to install for a missing module, and the words around it: the workspace's pin where it
 * declares one; for PyTorch's packages the CPU index (never a bare install that brings CUDA) and
 * where a CUDA build comes from.
 */
export function installAdvice(dir: string, name: string): { spec: string; note: string } {
  const declared = declaredRequirement(dir, name);
  const spec = declared ?? name;
  const pinned = declared?.includes('==') ?? false;
  if (TORCH_BUILT.has(name)) {
    // A pin with a build label (2.5.1+cu121) names its own index; the rest get the CPU build.
    // Digits and single dots only: a planted `+rocm..` must not turn the index URL into another path.
    const build = /\+(cpu|cu\d+|rocm\d+(?:\.\d+)*)$/.exec(spec)?.[1];
    if (build && build !== 'cpu') {
      return {
        spec: `${spec} --index-url ${TORCH_INDEXES}/${build}`,
        note: `the build ${REQUIREMENTS_FILE} pins; other builds: ${TORCH_SELECTOR}`,
      };
    }
    const whose = pinned ? `the version ${REQUIREMENTS_FILE} pins, ` : '';
    return {
      spec: `${spec} --index-url ${TORCH_CPU_INDEX}`,
      note: `${whose}CPU build; for a CUDA build, the command for your CUDA version is at ${TORCH_SELECTOR}`,
    };
  }
  if (declared) return { spec, note: `as ${REQUIREMENTS_FILE} lists it` };
  return { spec, note: 'its package may have another name' };
}
