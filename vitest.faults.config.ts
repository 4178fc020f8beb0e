import { defineConfig } from 'vitest/config';

/** `npm run test:faults`: the fault-injection suite, one file at a time (they kill workers and restart servers). */
export default defineConfig({
  test: {
    include: ['test/faults/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: '.deputy/faults-results.json' }]],
  },
});
