import { defineConfig } from 'vitest/config';

/**
 * `npm run test:real-model`: Deputy against a real OpenAI-compatible server (llama-cpp-python serving
 * SmolLM2-135M-Instruct, installed by scripts/install-real-model.sh), one file at a time: the model takes both cores.
 */
export default defineConfig({
  test: {
    include: ['test/real-model/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Worker logs go to .deputy/test-logs/; a failing test prints its own, and console output of passing tests is not shown.
    setupFiles: ['test/support/show-logs.ts'],
    silent: 'passed-only',
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 300_000,
    reporters: ['default', ['json', { outputFile: '.deputy/real-model-results.json' }]],
  },
});
