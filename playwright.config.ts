/**
 * Galata (Playwright) tests of the JupyterLab front end, in Debian's Chromium: Playwright's own
 * browser download is never used. `npx playwright test` starts a token-less JupyterLab from
 * the venv on 127.0.0.1 (ui-tests/jupyter_server_test_config.py), with this extension
 * installed by `make setup`.
 */
import * as path from 'node:path';
import { defineConfig } from '@playwright/test';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const galataConfig = require('@jupyterlab/galata/lib/playwright-config');

const PORT = Number(process.env.GALATA_PORT ?? 8898);
const venvBin = path.join(__dirname, '.venv', 'bin');
// ui-tests/missing-git.spec.ts's server.
const NO_GIT_PORT = PORT + 1;

export default defineConfig({
  ...galataConfig,
  testDir: 'ui-tests',
  outputDir: 'test-results/galata',
  globalSetup: './ui-tests/fixture.ts',
  reporter: [['list'], ['html', { open: 'never', outputFolder: 'test-results/galata-report' }]],
  retries: 0,
  workers: 1,
  timeout: 60_000,
  use: {
    ...galataConfig.use,
    baseURL: `http://127.0.0.1:${PORT}`,
    browserName: 'chromium',
    trace: 'retain-on-failure',
    video: 'off',
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
  webServer: [
    labServer(PORT, `${venvBin}:${process.env.PATH}`),
    // A second JupyterLab whose PATH has no git (Node is given by AUTORESEARCH_NODE), for
    // ui-tests/missing-git.spec.ts: what a user on a host without git sees.
    labServer(NO_GIT_PORT, venvBin, { AUTORESEARCH_NODE: process.execPath }),
  ],
});

function labServer(port: number, searchPath: string, env: Record<string, string> = {}) {
  return {
    command: `"${path.join(venvBin, 'jupyter')}" lab --config ui-tests/jupyter_server_test_config.py${process.getuid?.() === 0 ? ' --allow-root' : ''}`,
    url: `http://127.0.0.1:${port}/lab`,
    env: { GALATA_PORT: String(port), PATH: searchPath, ...env },
    timeout: 60_000,
    reuseExistingServer: false,
    stdout: 'ignore' as const,
    stderr: 'pipe' as const,
  };
}
