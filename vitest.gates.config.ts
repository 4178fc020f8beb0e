import { defineConfig } from 'vitest/config';

/** `npm run gates`: the delegate gate area (R5.5), G1–G24 against a real dev server; scripts/gates.ts prints the table. */
export default defineConfig({
  test: {
    include: ['test/gates/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Worker logs go to .deputy/test-logs/; a failing test prints its own, and console output of passing tests is not shown.
    setupFiles: ['test/support/show-logs.ts'],
    silent: 'passed-only',
    pool: 'forks',
    testTimeout: 90_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: '.deputy/gates-results.json' }]],
  },
});
