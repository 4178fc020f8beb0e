import { defineConfig } from 'vitest/config';

/**
 * `npm run test:attacks`: the attack suite (docs/security.md). Each test drives Deputy from outside as an attacker
 * would — a plain Temporal client, a raw HTTP request, a crafted file — against a real dev server.
 */
export default defineConfig({
  test: {
    include: ['test/attacks/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Worker logs go to .deputy/test-logs/; a failing test prints its own, and console output of passing tests is not shown.
    setupFiles: ['test/support/show-logs.ts'],
    silent: 'passed-only',
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: '.deputy/attacks-results.json' }]],
  },
});
