import { defineConfig } from 'vitest/config';

/** `npm run test:faults`: the fault-injection suite, one file at a time (they kill workers and restart servers). */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Worker logs go to .deputy/test-logs/; a failing test prints its own, and console output of passing tests is not shown.
    setupFiles: ['test/support/show-logs.ts'],
    silent: 'passed-only',
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: '.deputy/faults-results.json' }]],
  },
});
