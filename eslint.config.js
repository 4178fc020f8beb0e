// @ts-check
import js from '@eslint/js';
import { builtinModules } from 'node:module';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.deputy/', 'coverage/', 'dist/', 'test/fixtures/', 'scripts/package-check/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      // Tools and activities are async by contract even when their body is synchronous.
      '@typescript-eslint/require-await': 'off',
    },
    settings: { 'import-x/resolver': { node: { extensions: ['.ts', '.js'] } } },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node built-ins, no I/O.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'workflows/ must stay deterministic: no Node built-ins.' },
            { group: builtinModules, message: 'workflows/ must stay deterministic: no Node built-ins.' },
            {
              group: ['openai', '**/activities/*', '!**/activities/index.js'],
              message: 'workflows/ import activities as types only.',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  {
    // What workflow code imports: the wire contract, the pure rules and the config schema stay free of Node, the
    // worker package, the model client and the YAML parser.
    files: ['src/contract/**/*.ts', 'src/rules/**/*.ts', 'src/config/schema.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', ...builtinModules],
              message: 'contract/ and rules/ are workflow-safe: no Node built-ins.',
            },
            {
              group: ['@temporalio/worker', '@temporalio/client', 'openai', 'yaml', '**/activities/*', '**/worker/*'],
              message: 'contract/ and rules/ are workflow-safe: no worker, client, model client or file formats.',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
  {
    // A room a person can read in one sitting, a function on a screen or two.
    files: ['src/**/*.ts', 'workflows/**/*.ts', 'activities/**/*.ts'],
    ignores: ['src/contract/json-schemas.ts'],
    rules: {
      'max-lines': ['error', { max: 400 }],
      'max-lines-per-function': ['error', { max: 120 }],
    },
  },
  {
    // The benchmark and the scripts: each function a screen long.
    files: ['bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 60 }] },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs', globals: { module: 'writable' } } },
);
