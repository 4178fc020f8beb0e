/**
 * Workflow entry point for the worker's bundle: every workflow type Deputy registers. Workflow code reads top to
 * bottom in plain `async`/`await`, with `try`/`finally` where it releases something; a lint rule keeps `then` chains
 * out of it.
 */
export { agentRun } from './agent-run.js';
export { tenantAdmission } from './tenant-admission.js';
