/** The baseline's workflow bundle, for its worker and for replaying its histories. */
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';
import { QUIET_BUNDLER_LOGGER } from '../../src/worker/bundle.js';

export async function bundleBaselineWorkflows() {
  return bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
    logger: QUIET_BUNDLER_LOGGER,
  });
}
