/**
 * Workflow entry point for the worker's bundle: every workflow type Deputy registers.
 *
 * Workflow code here makes as few promises as it can: the SDK captures a stack trace for every promise a workflow
 * creates (to answer its stack-trace query), and in a replay profile that was the largest cost Deputy added to bare
 * workflows. So hot paths are `then` chains rather than `async` frames, and nothing is awaited where nothing waits;
 * comments elsewhere say "fewer promises" and point here.
 */
export { agentRun } from './agent-run.js';
export { tenantAdmission } from './tenant-admission.js';
