/** Workflow entry point for the worker's bundle: every workflow type Deputy registers. */
export { agentRun } from './agent-run.js';
export { tenantAdmission } from './admission.js';
