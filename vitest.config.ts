import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The fault-injection, attack, journey, docs and real-model suites and the delegate gates have their own commands and configs.
    exclude: [
      'test/faults/**',
      'test/gates/**',
      'test/attacks/**',
      'test/real-model/**',
      'test/journeys/**',
      'test/docs/**',
      'node_modules/**',
    ],
    globalSetup: ['test/global-setup.ts'],
    // Worker logs go to .deputy/test-logs/; a failing test prints its own, and console output of passing tests is not shown.
    setupFiles: ['test/support/show-logs.ts'],
    silent: 'passed-only',
    // Two cores: two test files at a time, each with its own worker and task queue on the one shared dev server.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 90_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: '.deputy/test-results.json' }]],
  },
});
