#!/usr/bin/env node
// Bundles the engine CLI (src/engine/main.ts) and every npm dependency it uses into one
// CommonJS file, so the Python wheel can ship it and run it with any Node.js package.json accepts.
//
//   node scripts/build-engine.mjs [--entry FILE] [--outfile FILE] [--no-copy]
//
// The bundle is also copied into the Python package (engine/autoresearch.cjs) so an
// editable install and the wheel find it at the same place, beside engine/run-options.json:
// the run options the server accepts and the engine flags they become, which the server
// (validate.py, supervisor.py) reads since it cannot import src/core/config/run-options.ts; and
// engine/layout.json, the `.autoresearch/` file names and the tag rule of src/core/journal/layout.ts
// (workspaces.py reads them); and the JSON Schemas of a journal record and of state.json, from
// their zod schemas (src/core/journal/json-schemas.ts), which the server validates against;
// engine/rules.json, the secret names (src/core/config/secrets.ts), status words
// (src/core/api/status-words.ts) and environment variable names (src/core/study/transfer-journal.ts) the server follows; and engine/rest.schema.json, the REST
// responses' JSON Schemas (src/core/api/responses.ts), which the Python tests check the server's answers against.
import { build } from 'esbuild';
import { chmodSync, copyFileSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { coreModule } from './core-module.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: {
    entry: { type: 'string', default: resolve(root, 'src/engine/main.ts') },
    outfile: { type: 'string', default: resolve(root, 'lib/engine/autoresearch.cjs') },
    'no-copy': { type: 'boolean', default: false },
  },
});
const packageCopy = resolve(root, 'jupyter_server_ext/jupyterlab_autoresearch/engine/autoresearch.cjs');
const optionsFile = resolve(root, 'jupyter_server_ext/jupyterlab_autoresearch/engine/run-options.json');
const layoutFile = resolve(root, 'jupyter_server_ext/jupyterlab_autoresearch/engine/layout.json');
const rulesFile = resolve(root, 'jupyter_server_ext/jupyterlab_autoresearch/engine/rules.json');
const restFile = resolve(root, 'jupyter_server_ext/jupyterlab_autoresearch/engine/rest.schema.json');

/** Resolves `X?raw` to file X loaded as a string (Vite's convention, which vitest also follows). */
const rawPlugin = {
  name: 'raw',
  setup(b) {
    b.onResolve({ filter: /\?raw$/ }, args => ({
      path: resolve(args.resolveDir, args.path.slice(0, -'?raw'.length)),
      namespace: 'raw-text',
    }));
    b.onLoad({ filter: /.*/, namespace: 'raw-text' }, async args => ({
      contents: await import('node:fs/promises').then(fs => fs.readFile(args.path, 'utf8')),
      loader: 'text',
      watchFiles: [args.path],
    }));
  },
};

const result = await build({
  entryPoints: [opts.entry],
  outfile: opts.outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  banner: { js: '#!/usr/bin/env node' },
  // Only node: built-ins stay external; every npm dependency goes into the bundle.
  packages: 'bundle',
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  plugins: [rawPlugin],
});

if (result.errors.length === 0) {
  chmodSync(opts.outfile, 0o755);
  const kb = (statSync(opts.outfile).size / 1024).toFixed(0);
  console.log(`engine: ${opts.outfile} (${kb} KiB, ${Object.keys(result.metafile.inputs).length} inputs)`);
  if (!opts['no-copy'] && opts.outfile === resolve(root, 'lib/engine/autoresearch.cjs')) {
    mkdirSync(dirname(packageCopy), { recursive: true });
    copyFileSync(opts.outfile, packageCopy);
    chmodSync(packageCopy, 0o755);
    writeFileSync(
      optionsFile,
      JSON.stringify((await coreModule('src/core/config/run-options.ts')).serverOptions(), null, 2) + '\n',
    );
    // With the state of a run whose journal is still empty, so the server never spells state.json's keys out itself.
    const emptyState = (await coreModule('src/core/journal/run-state.ts')).deriveRunState([], 0, '');
    // And the fields of an experiment the event stream's light replay keeps (src/core/journal/light-record.ts).
    const lightRecord = await coreModule('src/core/journal/light-record.ts');
    const shared = {
      ...(await coreModule('src/core/journal/layout.ts')).layout(),
      empty_state: emptyState,
      light_experiment_fields: lightRecord.LIGHT_EXPERIMENT_FIELDS,
      light_meta_fields: lightRecord.LIGHT_META_FIELDS,
    };
    writeFileSync(layoutFile, JSON.stringify(shared, null, 2) + '\n');
    // The journal's and state.json's JSON Schemas, from their zod schemas: what the Python side validates against.
    for (const [name, schema] of Object.entries((await coreModule('src/core/journal/json-schemas.ts')).jsonSchemas())) {
      writeFileSync(resolve(dirname(layoutFile), name), JSON.stringify(schema, null, 1) + '\n');
    }
    const rules = {
      ...(await coreModule('src/core/config/secrets.ts')).secretRules(),
      status_words: (await coreModule('src/core/api/status-words.ts')).statusWords(),
      env_name_pattern: (await coreModule('src/core/study/transfer-journal.ts')).ENV_NAME_PATTERN,
    };
    writeFileSync(rulesFile, JSON.stringify(rules, null, 2) + '\n');
    writeFileSync(
      restFile,
      JSON.stringify((await coreModule('src/core/api/json-schemas.ts')).restSchemas(), null, 1) + '\n',
    );
  }
}
