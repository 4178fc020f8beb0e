/**
 * One dev server and one workflow bundle for the whole test run; each test file gets its own task queue.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import type { TestProject } from 'vitest/node';
import { startDevServer } from '../src/dev-server.js';
import { PROJECT_ROOT } from '../src/temporal-cli.js';
import { WORKFLOWS_PATH } from '../src/worker-factory.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = join(PROJECT_ROOT, '.deputy', 'test');
  mkdirSync(dir, { recursive: true });
  const [server, bundle] = await Promise.all([
    startDevServer(),
    bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietLogger }),
  ]);
  const workflowBundlePath = join(dir, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, bundle.code);
  project.provide('temporalAddress', server.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  return async () => {
    await server.env.teardown();
  };
}

const noop = () => undefined;
const quietLogger = { trace: noop, debug: noop, info: noop, warn: console.warn, error: console.error, log: noop };
