// @ts-check
// Mutation testing of Deputy's pure code (`npm run test:mutation`): which changes to the rules the tests catch.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  mutate: [
    'src/rules/**/*.ts',
    'src/contract/**/*.ts',
    // Generated from the zod contract and compared with it by a test: its mutants would only measure the data.
    '!src/contract/json-schemas.ts',
    'src/config/{tenant-evidence,evidence,scenario}.ts',
    'src/eval/redact.ts',
    'src/client/watch-view.ts',
    'src/codec/aes-gcm.ts',
    'src/codec/compress.ts',
  ],
  // The state directory holds servers and virtualenvs: never copied into the sandbox.
  ignorePatterns: ['/.deputy', '/mutation'],
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  coverageAnalysis: 'perTest',
  // A module-level value (a schema, a table) is used by every test: its mutants would each rerun the whole suite.
  // Tests import what they test at the top: a module first loaded inside a test makes its module-level code look
  // covered by that test alone, so its static mutants would be run (and survive) instead of ignored.
  ignoreStatic: true,
  checkers: [],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  concurrency: 2,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: '.deputy/mutation/index.html' },
  jsonReporter: { fileName: '.deputy/mutation/report.json' },
  tempDirName: '.deputy/stryker-tmp',
  incremental: true,
  incrementalFile: 'mutation/stryker-incremental.json',
  thresholds: { high: 85, low: 80, break: null },
  timeoutMS: 10_000,
};
