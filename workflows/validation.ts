/**
 * Checking what comes into a run without evaluating zod on the hot path (issue 12): the JSON Schemas generated from
 * the zod contract answer first; zod itself, loaded on first use, decides what they do not vouch for and words the
 * errors. Deterministic code only.
 */
import type { JsonSchema } from '../src/rules/schema-check.js';
import { checkSchema } from '../src/rules/schema-check.js';

/**
 * The zod contract, evaluated on first use: webpack's eager mode keeps the module in the workflow bundle (no chunk to
 * load) but runs it only when this is called.
 */
export const loadZodContract = () => import(/* webpackMode: "eager" */ './zod-contract.js');

/** True when `value` is exactly what zod would accept and return (see `checkSchema`). */
export function fitsSchema(schema: JsonSchema, value: unknown): boolean {
  return checkSchema(schema, value).kind === 'valid';
}

/**
 * For synchronous checks (update validators): throws naming each field unless the value fits. Only for schemas
 * with no defaults and only strict objects, where the verdict is never `unsure`.
 */
export function assertFits(schema: JsonSchema, value: unknown, what: string): void {
  const verdict = checkSchema(schema, value);
  if (verdict.kind === 'valid') return;
  const issues = verdict.kind === 'invalid' ? verdict.issues : ['(root): could not be checked'];
  throw new Error(`invalid ${what}: ${issues.join('; ')}`);
}
