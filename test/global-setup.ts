/**
 * One dev server and one workflow bundle for the whole test run; each test file gets its own task queue.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer } from '../src/testing/dev-server.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { bundleDeputyWorkflows } from '../src/worker/bundle.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
  }
}

export default async function setup(project: TestProject) {
  const dir = join(PROJECT_ROOT, '.deputy', 'test');
  mkdirSync(dir, { recursive: true });
  const [server, bundle] = await Promise.all([startDevServer({ logLevel: 'error' }), bundleDeputyWorkflows()]);
  const workflowBundlePath = join(dir, 'workflow-bundle.js');
  writeFileSync(workflowBundlePath, bundle.code);
  project.provide('temporalAddress', server.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  return async () => {
    await server.env.teardown();
  };
}
