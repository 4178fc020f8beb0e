/**
 * All of delegation from one module, for callers outside workflow code: the contract (`src/contract/delegation.ts`),
 * the zod-free rules (`children.ts`), and checking an invocation and a child's output (`contract-checks.ts`, which
 * the workflow runs too).
 */
export * from './children.js';
export * from '../contract/delegation.js';
export {
  checkReturnShape,
  parseInvocation,
  type InvocationCheck,
  type ReturnShapeCheck,
} from '../contract/checks/contract-checks.js';
