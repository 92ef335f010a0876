// ESLint for the TypeScript sources, tests and scripts; formatting is Prettier's job, not ESLint's.
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'lib/',
      'node_modules/',
      '.venv/',
      '.venv-eg/',
      'test-results/',
      'bench/out/',
      'workspaces/',
      'jupyter_server_ext/jupyterlab_autoresearch/labextension/',
      'jupyter_server_ext/jupyterlab_autoresearch/engine/',
      'style/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    rules: {
      // `_`-prefixed names are deliberately unused (a callback's position, a destructured rest).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // Boundaries validate with zod; inside, `unknown` is preferred, but a few SDK shapes need `any`.
      '@typescript-eslint/no-explicit-any': 'warn',
    },
  },
  {
    // No import circles in the sources: a circle leaves one side's values undefined while the other
    // loads, and hides which module a rule lives in. Resolved as tsc resolves (extensionless paths).
    // `import type` is never followed (it is erased at run time), so types shared both ways live in
    // a module of their own instead (e.g. experiment-env.ts, chart-rows.ts, run-defaults.ts).
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })],
    },
    rules: { 'import-x/no-cycle': 'error' },
  },
  {
    // Tests match terminal output, escape codes and all; the Messages API stand-in reads any JSON.
    files: ['test/**', 'ui-tests/**'],
    rules: { 'no-control-regex': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // The CommonJS launcher and build scripts.
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
