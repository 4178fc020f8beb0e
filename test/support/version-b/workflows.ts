/**
 * "Version B" of Deputy for the deploy tests: its runs make one command more at their start (a 1 ms timer), so a
 * history recorded by version A does not replay on it, as a real release whose workflow code changed would not.
 */
import { sleep } from '@temporalio/workflow';
import { agentRun as deputyAgentRun } from '../../../workflows/agent-run.js';
import type { RunInput, RunResult } from '../../../src/contract/run.js';

export { tenantAdmission } from '../../../workflows/tenant-admission.js';

export async function agentRun(input: RunInput): Promise<RunResult> {
  await sleep(1);
  return deputyAgentRun(input);
}
