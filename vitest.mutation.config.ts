import { defineConfig } from 'vitest/config';

/**
 * The tests `npm run test:mutation` runs against each mutant: those of pure code, with no Temporal server. Code that
 * runs inside workflows is mutated in the source but executes from the worker's bundle, where no mutant is active, so
 * only direct tests can kill its mutants.
 */
export default defineConfig({
  test: {
    include: ['test/unit-*.test.ts', 'test/docs.test.ts'],
    // Compares generated source with the committed file: in the sandbox the source is instrumented, so it differs.
    testNamePattern: /^(?!.*is what `npm run schemas` generates)/,
    setupFiles: ['test/mutation-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
  },
});
