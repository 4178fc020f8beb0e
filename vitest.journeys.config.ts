import { defineConfig } from 'vitest/config';

/**
 * `npm run test:journeys`: the paths a person walks, driven as a person would — the real npm commands as child
 * processes, interrupted with Ctrl-C, their output read line by line — with bounded time and literal output.
 */
export default defineConfig({
  test: {
    include: ['test/journeys/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Each journey starts its own processes (a demo starts a dev server): one file at a time on two cores.
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 180_000,
    hookTimeout: 120_000,
    reporters: ['default', ['json', { outputFile: '.deputy/journeys-results.json' }]],
  },
});
