import { defineConfig } from 'vitest/config';

/**
 * `npm run test:docs`: what the README and docs/ say holds — every shell command they show is run (or marked, with
 * the reason), and the README stays the front door (its size, its links).
 */
export default defineConfig({
  test: {
    include: ['test/docs/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // The commands share the documented task queue (`deputy`): one file at a time.
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 180_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: '.deputy/docs-results.json' }]],
  },
});
