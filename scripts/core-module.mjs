// A module of src/core, run from an in-memory esbuild bundle: Node cannot import .ts, and the
// scripts that turn src/core's declarations into files (build-engine.mjs, docs-cli.mjs) need
// the declarations themselves, not a copy of them.
import { build } from 'esbuild';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The module at `file` (relative to the repository's root), bundled in memory and imported. */
export async function coreModule(file) {
  const out = await build({
    entryPoints: [resolve(root, file)],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    logLevel: 'warning',
  });
  const code = Buffer.from(out.outputFiles[0].contents).toString('base64');
  return import(`data:text/javascript;base64,${code}`);
}
