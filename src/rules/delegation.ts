/**
 * Checking a `delegate` invocation and a child's output against its return shape, with zod. Pure: no Temporal, no
 * I/O. The zod-free rules of delegation are in `children.ts`, the contract in `src/contract/delegation.ts`; both are
 * re-exported here for callers that want all of delegation from one module.
 */
import { z } from 'zod';
import { DelegateArgs } from '../contract/delegation.js';
import { describeIssues } from './zod-issues.js';

export * from './children.js';
export * from '../contract/delegation.js';

/** Result of checking an invocation before anything is reserved or spawned. */
export type InvocationCheck = { ok: true; args: DelegateArgs } | { ok: false; error: string };

/** Parses the raw arguments of a `delegate` call; nothing is spawned on an error. */
export function parseInvocation(rawArguments: string): InvocationCheck {
  let raw: unknown;
  try {
    raw = JSON.parse(rawArguments);
  } catch (err) {
    return { ok: false, error: `arguments are not valid JSON (${(err as Error).message}); nothing was spawned` };
  }
  const parsed = DelegateArgs.safeParse(raw);
  if (!parsed.success) {
    return {
      ok: false,
      error: `invalid delegate arguments: ${describeIssues(parsed.error).join('; ')}; nothing was spawned`,
    };
  }
  if (parsed.data.return_shape) {
    try {
      z.fromJSONSchema(parsed.data.return_shape);
    } catch (err) {
      return {
        ok: false,
        error: `return_shape is not a usable JSON Schema: ${(err as Error).message}; nothing was spawned`,
      };
    }
  }
  return { ok: true, args: parsed.data };
}

/** A child's output checked against `return_shape`. */
export type ReturnShapeCheck = { ok: true; value: unknown } | { ok: false; error: string };

/** Checks a child's output against `return_shape`: the output must be JSON that the schema accepts. */
export function checkReturnShape(output: string | null, returnShape: Record<string, unknown>): ReturnShapeCheck {
  if (output === null) return { ok: false, error: 'the child gave no output to check against return_shape' };
  let value: unknown;
  try {
    value = JSON.parse(output.trim().replace(/^```(?:json)?\s*|\s*```$/g, ''));
  } catch {
    return { ok: false, error: 'the output is not JSON, but return_shape asks for JSON' };
  }
  const parsed = z.fromJSONSchema(returnShape).safeParse(value);
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, error: `the output does not match return_shape: ${describeIssues(parsed.error).join('; ')}` };
}
