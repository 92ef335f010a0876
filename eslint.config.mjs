// ESLint for the TypeScript sources, tests and scripts; formatting is Prettier's job, not ESLint's.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'lib/',
      'node_modules/',
      '.venv/',
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
