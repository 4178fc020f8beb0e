/**
 * What workflow code needs from zod: the full checks and their wording, for the inputs the JSON Schema fast path
 * (`src/rules/schema-check.ts`) does not vouch for. Evaluated only through `loadZodContract()`, so a run that never
 * needs zod never evaluates it (building zod's schemas cost ~9 ms of CPU at every workflow start).
 */
export { RunInput } from '../src/contract/run.js';
export { STEERING_TOOL_REGISTRY } from '../src/contract/delegation.js';
export { checkReturnShape, parseInvocation } from '../src/rules/delegation.js';
export { decideRestoration } from '../src/rules/sessions.js';
export { describeIssues } from '../src/rules/zod-issues.js';
