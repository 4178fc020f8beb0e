/**
 * Checking what comes into a run against the contract without zod (its JSON Schemas, checked by
 * src/contract/checks/contract-checks.ts): zod would cost every workflow start and replay its size. Deterministic code only.
 */
import type { SchemaChecker } from '../src/contract/checks/json-schema.js';

/** For synchronous checks (update validators): throws naming each field unless the value fits. */
export function assertFits(checker: SchemaChecker, value: unknown, what: string): void {
  const checked = checker.check(value);
  if (!checked.ok) throw new Error(`invalid ${what}: ${checked.issues.join('; ')}`);
}
