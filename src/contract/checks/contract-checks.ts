/**
 * The contract's checks as code without zod runs them (workflow code): the JSON Schemas generated from the zod
 * contract, checked by `json-schema.ts`, plus what no schema states (the fork rule, a return shape being a usable
 * schema). One checker per schema, compiled on first use; what is checked at every start and every delegation is
 * also compiled ahead of time, by ajv from the same schemas. Pure and deterministic.
 */
import type { DelegateArgs, SteeringArgs, SteeringToolName } from '../delegation.js';
import { forkProblems } from '../fork.js';
import { delegateArgs, plainRunInput } from '../compiled-checks.js';
import * as GENERATED from '../json-schemas.js';
import type { ParsedRunInput, RunResult } from '../run.js';
import { SchemaChecker } from './json-schema.js';
import { checkOutsideSchema, outsideSchemaProblems } from './outside-schema.js';
import { formatPath } from './schema-wording.js';

/** The generated schemas (`RUN_INPUT` for `RUN_INPUT_SCHEMA` and its `RUN_INPUT_MESSAGES`). */
type SchemaName =
  | 'RUN_INPUT'
  | 'RUN_RESULT'
  | 'SEND_MESSAGE_INPUT'
  | 'END_CONVERSATION_INPUT'
  | 'SIGNED_INTERJECTION'
  | 'SIGNED_QUESTION'
  | 'SIGNED_ANSWER'
  | 'SIGNED_ADMISSION_ACQUIRE'
  | 'SIGNED_ADMISSION_RELEASE'
  | 'SIGNED_ADMITTED'
  | 'DECIDE_APPROVAL_INPUT'
  | 'SIGNED_APPROVALS';

const checker = (name: SchemaName) =>
  new SchemaChecker(GENERATED[`${name}_SCHEMA`], { messages: GENERATED[`${name}_MESSAGES`] });

/** One checker per payload the workflows receive. */
export const CONTRACT = {
  runInput: checker('RUN_INPUT'),
  runResult: checker('RUN_RESULT'),
  sendMessage: checker('SEND_MESSAGE_INPUT'),
  endConversation: checker('END_CONVERSATION_INPUT'),
  signedInterjection: checker('SIGNED_INTERJECTION'),
  signedQuestion: checker('SIGNED_QUESTION'),
  signedAnswer: checker('SIGNED_ANSWER'),
  signedAdmissionAcquire: checker('SIGNED_ADMISSION_ACQUIRE'),
  signedAdmissionRelease: checker('SIGNED_ADMISSION_RELEASE'),
  signedAdmitted: checker('SIGNED_ADMITTED'),
  decideApproval: checker('DECIDE_APPROVAL_INPUT'),
  signedApprovals: checker('SIGNED_APPROVALS'),
} as const;

/** The checks compiled ahead of time, for what is checked at every start and every delegation. */
const COMPILED: Partial<Record<SteeringToolName, (value: unknown) => boolean>> = { delegate: delegateArgs };

const STEERING = Object.fromEntries(
  Object.keys(GENERATED.STEERING_ARGS_SCHEMAS).map((name) => [
    name,
    new SchemaChecker(GENERATED.STEERING_ARGS_SCHEMAS[name as SteeringToolName], {
      messages: GENERATED.STEERING_ARGS_MESSAGES[name as SteeringToolName],
      compiled: COMPILED[name as SteeringToolName],
    }),
  ]),
) as Record<SteeringToolName, SchemaChecker>;

/** The meta-schema a brief's return shape must pass to be a usable schema. */
const RETURN_SHAPE_META = new SchemaChecker(GENERATED.JSON_SCHEMA_META, { draft: '7', unknownKeys: 'keep' });

/** A steering tool's arguments as the workflow's update validators take them. */
export const steeringChecker = (tool: SteeringToolName): SchemaChecker => STEERING[tool];

/**
 * A run input that carries neither `resume` nor `restore` (every input but a continued or restored run's) is checked
 * against the schema without them, which reads it exactly as the whole schema does: an absent optional field is
 * never checked. Three quarters of the schema are those two fields, and a checker compiles its schema in each new
 * workflow context, so a worker or replayer that meets no such input never compiles them.
 */
const RUN_INPUT_SCHEMA = GENERATED.RUN_INPUT_SCHEMA as Record<string, unknown>;
const {
  resume: _resume,
  restore: _restore,
  ...PLAIN_RUN_PROPERTIES
} = RUN_INPUT_SCHEMA.properties as Record<string, unknown>;
const PLAIN_RUN_INPUT = new SchemaChecker(
  { ...RUN_INPUT_SCHEMA, properties: PLAIN_RUN_PROPERTIES },
  { messages: GENERATED.RUN_INPUT_MESSAGES, compiled: plainRunInput },
);

/** The checker an agentRun input is checked by: the whole schema only for an input that carries what only it has. */
export const runInputChecker = (raw: unknown): SchemaChecker =>
  typeof raw === 'object' && raw !== null && (Object.hasOwn(raw, 'resume') || Object.hasOwn(raw, 'restore'))
    ? CONTRACT.runInput
    : PLAIN_RUN_INPUT;

/** An agentRun input, as zod would parse it (schema and fork rule), or one line per problem. */
export function checkRunInput(raw: unknown): { ok: true; input: ParsedRunInput } | { ok: false; issues: string[] } {
  const checked = runInputChecker(raw).check(raw);
  if (!checked.ok) return checked;
  const input = checked.value as ParsedRunInput;
  const fork = forkProblems(input).map(({ path, message }) => `${formatPath(path)}: ${message}`);
  return fork.length > 0 ? { ok: false, issues: fork } : { ok: true, input };
}

/** A child's `RunResult`, when `details` is one. */
export function asRunResult(details: unknown): RunResult | null {
  const checked = CONTRACT.runResult.check(details);
  return checked.ok ? (checked.value as RunResult) : null;
}

/** A steering tool's arguments (`raw`, JSON text; empty reads as `{}`), or a tool error naming what is wrong. */
export function parseSteeringArgs<N extends SteeringToolName>(
  tool: N,
  raw: string,
): { ok: true; args: SteeringArgs<N> } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = JSON.parse(raw || '{}');
  } catch {
    return {
      ok: false,
      error: `arguments for "${tool}" are not valid JSON; send ${GENERATED.STEERING_EXAMPLES[tool]}`,
    };
  }
  const checked = STEERING[tool].check(value);
  return checked.ok
    ? { ok: true, args: checked.value as SteeringArgs<N> }
    : { ok: false, error: `invalid ${tool} arguments: ${checked.issues.join('; ')}` };
}

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
  const checked = STEERING.delegate.check(raw);
  if (!checked.ok) {
    return { ok: false, error: `invalid delegate arguments: ${checked.issues.join('; ')}; nothing was spawned` };
  }
  const args = checked.value as DelegateArgs;
  if (args.return_shape) {
    const unbounded = outsideSchemaProblems(args.return_shape);
    if (unbounded.length > 0) {
      return {
        ok: false,
        error: `return_shape cannot be checked in bounded time: ${unbounded.join('; ')}; nothing was spawned`,
      };
    }
    const usable = RETURN_SHAPE_META.check(args.return_shape);
    if (!usable.ok) {
      return {
        ok: false,
        error: `return_shape is not a usable JSON Schema: ${usable.issues.join('; ')}; nothing was spawned`,
      };
    }
  }
  return { ok: true, args };
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
  const unbounded = outsideSchemaProblems(returnShape);
  if (unbounded.length > 0)
    return { ok: false, error: `return_shape cannot be checked in bounded time: ${unbounded.join('; ')}` };
  const checked = checkOutsideSchema(returnShape, value);
  return checked.ok
    ? { ok: true, value: checked.value }
    : { ok: false, error: `the output does not match return_shape: ${checked.issues.join('; ')}` };
}
