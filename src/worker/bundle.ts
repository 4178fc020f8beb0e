/** The workflow bundle a Deputy worker runs: where its code is, and how it is bundled. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { DeputyTracing } from '../ops/tracing.js';

/**
 * Path of the workflows' entry module, for bundling: the TypeScript source when Deputy runs from its repository, the
 * compiled JavaScript when it runs from `dist/` (an installed package).
 */
export const WORKFLOWS_PATH = workflowsModule('index');

/** A module of `workflows/`: its TypeScript source in the repository, its compiled JavaScript in `dist/`. */
function workflowsModule(name: string): string {
  return [
    new URL(`../../workflows/${name}.ts`, import.meta.url),
    new URL(`../../workflows/${name}.js`, import.meta.url),
  ]
    .map((url) => fileURLToPath(url))
    .find((path) => existsSync(path))!;
}

/**
 * Every workflow in a worker shares one evaluation of the workflows' modules (Temporal's workflow API, the contract,
 * the rules) instead of evaluating them again at each workflow's start and replay. That is safe because a run's
 * state lives on its own objects, never at module level, and Temporal's API finds the running workflow at each call.
 * The worker freezes the objects it shares, and a test refuses module-level variables and collections in workflow
 * code, so no module can carry one run's values into another.
 */
export const SHARED_MODULES = [workflowsModule('stack-depth'), WORKFLOWS_PATH];

const noop = () => undefined;
/** The bundler reports every module at info level; keep only its warnings and errors. */
export const QUIET_BUNDLER_LOGGER = {
  log: noop,
  trace: noop,
  debug: noop,
  info: noop,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

/**
 * The bundle as cheap to start as it can be. The SDK evaluates a bundle's modules again for every workflow,
 * so its modules are concatenated into as few as webpack can (fewer module wrappers and export getters per start),
 * and TypeScript sources are compiled for Node 20 (native object spread, as `tsc` emits for the installed package),
 * not for ES2017.
 */
type WebpackConfiguration = Parameters<NonNullable<Parameters<typeof bundleWorkflowCode>[0]['webpackConfigHook']>>[0];

/** The contract's generated JSON Schemas (`npm run schemas`). */
const GENERATED_SCHEMAS = /src[\\/]contract[\\/]json-schemas\.ts$/;
/** Whitespace out, names and code as they are. */
const MINIFY_WHITESPACE = { compress: false, mangle: false };

export function leanBundle(stackTraceSources: boolean) {
  return (config: WebpackConfiguration): WebpackConfiguration => {
    const rules = config.module?.rules ?? [];
    for (const rule of [...rules]) {
      if (!rule || typeof rule !== 'object' || !('use' in rule)) continue;
      const { use } = rule;
      if (use && typeof use === 'object' && !Array.isArray(use) && 'options' in use) {
        const options = use.options as { jsc?: { target?: string } } | undefined;
        if (!options?.jsc) continue;
        options.jsc.target = 'es2022';
        // The generated JSON Schemas are data, printed one property a line by the compiler (twice their source's
        // size, a tenth of the bundle): they go in without the whitespace, and no stack frame is ever in them.
        rule.exclude = [/node_modules/, GENERATED_SCHEMAS];
        rules.push({
          test: GENERATED_SCHEMAS,
          use: { ...use, options: { ...options, minify: true, jsc: { ...options.jsc, minify: MINIFY_WHITESPACE } } },
        });
      }
    }
    config.optimization = { ...config.optimization, concatenateModules: true, usedExports: true };
    // Every worker and replayer decodes, parses and re-encodes the inline source map when it loads the bundle, and
    // the SDK maps a stack through it for each promise workflow code creates (the stack trace query's record). So
    // the map points at source lines, not columns, and carries the sources only for a worker that sends them with
    // its stack traces (`showStackTraceSources`); a debugger reads them from disk.
    config.devtool = stackTraceSources ? 'inline-cheap-module-source-map' : 'inline-nosources-cheap-module-source-map';
    return config;
  };
}

/** Options of `bundleDeputyWorkflows`. */
export interface DeputyBundleOptions {
  /** Temporal's OpenTelemetry workflow interceptors (they cost every workflow activation, so only when given). */
  tracing?: DeputyTracing | undefined;
  /** Carry the sources, for a worker that answers stack trace queries with them (`showStackTraceSources`). */
  stackTraceSources?: boolean | undefined;
  /** A workflows module of the host's own that re-exports Deputy's (`deputy/workflows`). @default Deputy's */
  workflowsPath?: string | undefined;
}

/** Bundles Deputy's workflows; the worker, the tests and the replayers share these options. */
export async function bundleDeputyWorkflows({
  tracing,
  stackTraceSources = false,
  workflowsPath = WORKFLOWS_PATH,
}: DeputyBundleOptions = {}) {
  return bundleWorkflowCode({
    workflowsPath,
    preloadModules: [...SHARED_MODULES, ...(workflowsPath === WORKFLOWS_PATH ? [] : [workflowsPath])],
    logger: QUIET_BUNDLER_LOGGER,
    webpackConfigHook: leanBundle(stackTraceSources),
    ...(tracing && { plugins: [tracing.plugin] }),
  });
}
