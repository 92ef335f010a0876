import { defineConfig } from 'vitest/config';
import { isServicesCancellation } from './src/engine/executor/services-guard';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/build-engine.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Tests spawn real training processes; two cores are shared between them.
    maxWorkers: 2,
    // The one unhandled rejection @jupyterlab/services is known to leave (a kernel_info canceled
    // by a kernel's auto-restart; see services-guard.ts) is not a test failure; every other is.
    onUnhandledError: error => !isServicesCancellation(Object.assign(new Error(error.message), error)),
  },
});
