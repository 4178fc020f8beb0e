/**
 * Checking what comes into a run without evaluating zod on the hot path: the JSON Schemas generated from
 * the zod contract answer first; zod itself, loaded on first use, decides what they do not vouch for and words the
 * errors. Deterministic code only.
 */
import type { SteeringArgs, SteeringToolName } from '../src/contract/delegation.js';
import { STEERING_ARGS_SCHEMAS } from '../src/contract/json-schemas.js';
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

/**
 * A steering tool's arguments (`raw`, JSON text; empty reads as `{}`), or a tool error naming what is wrong.
 * The generated JSON Schema vouches first; zod decides and words the rest.
 */
export async function parseToolArgs<N extends SteeringToolName>(
  tool: N,
  raw: string,
): Promise<{ ok: true; args: SteeringArgs<N> } | { ok: false; error: string }> {
  let value: unknown;
  try {
    value = JSON.parse(raw || '{}');
  } catch {
    const { STEERING_TOOL_REGISTRY } = await loadZodContract();
    return {
      ok: false,
      error: `arguments for "${tool}" are not valid JSON; send ${STEERING_TOOL_REGISTRY[tool].example}`,
    };
  }
  if (fitsSchema(STEERING_ARGS_SCHEMAS[tool], value)) return { ok: true, args: value as SteeringArgs<N> };
  const contract = await loadZodContract();
  const parsed = contract.STEERING_TOOL_REGISTRY[tool].args.safeParse(value);
  return parsed.success
    ? { ok: true, args: parsed.data as SteeringArgs<N> }
    : { ok: false, error: `invalid ${tool} arguments: ${contract.describeIssues(parsed.error).join('; ')}` };
}
