import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/build-engine.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Tests spawn real training processes; two cores are shared between them.
    maxWorkers: 2
  }
});
