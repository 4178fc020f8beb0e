/**
 * `npm run schemas`: writes src/contract/json-schemas.ts, the JSON Schemas of the inputs workflow code checks on its
 * hot paths, generated from the zod contract (the one source of truth), then the compiled checks made from them
 * (scripts/compiled-checks.ts). test/unit-contract-checks.test.ts fails when either committed file is stale.
 */
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodePointer } from '@cfworker/json-schema';
import { format, resolveConfig } from 'prettier';
import { z } from 'zod';
import { EndConversationInput, RunInput, RunResult, SendMessageInput } from '../src/contract/run.js';
import { STEERING_TOOL_REGISTRY } from '../src/contract/delegation.js';
import { DecideApprovalInput } from '../src/contract/approvals.js';
import {
  SignedAdmissionAcquire,
  SignedAdmissionRelease,
  SignedAdmitted,
  SignedAnswer,
  SignedInterjection,
  SignedApprovals,
  SignedQuestion,
} from '../src/contract/signals.js';

export const GENERATED_PATH = fileURLToPath(new URL('../src/contract/json-schemas.ts', import.meta.url));

export const SCHEMAS = {
  RUN_INPUT: [RunInput, 'Input of `agentRun` (RunInput); the fork rule is `forkProblems` (src/contract/fork.ts).'],
  RUN_RESULT: [RunResult, 'Result of `agentRun` (RunResult).'],
  SEND_MESSAGE_INPUT: [SendMessageInput, 'Payload of the `sendMessage` update.'],
  END_CONVERSATION_INPUT: [EndConversationInput, 'Payload of the `endConversation` update.'],
  SIGNED_INTERJECTION: [SignedInterjection, 'Payload of the `deputy.interjection` signal.'],
  SIGNED_QUESTION: [SignedQuestion, 'Payload of the `deputy.question` signal.'],
  SIGNED_ANSWER: [SignedAnswer, 'Payload of the `deputy.answer` signal.'],
  SIGNED_ADMISSION_ACQUIRE: [SignedAdmissionAcquire, 'Payload of the `deputy.admission.acquire` signal.'],
  SIGNED_ADMISSION_RELEASE: [SignedAdmissionRelease, 'Payload of the `deputy.admission.release` signal.'],
  SIGNED_ADMITTED: [SignedAdmitted, 'Payload of the `deputy.admitted` signal.'],
  DECIDE_APPROVAL_INPUT: [DecideApprovalInput, 'Payload of the `decideApproval` update.'],
  SIGNED_APPROVALS: [SignedApprovals, 'Payload of the `deputy.approvals` signal.'],
} as const;

/** JSON Schema keywords of zod checks that can carry words of their own. */
const KEYWORD_OF_CHECK: Record<string, (type: unknown, inclusive: boolean) => string> = {
  min_length: (type) => (type === 'array' ? 'minItems' : 'minLength'),
  max_length: (type) => (type === 'array' ? 'maxItems' : 'maxLength'),
  string_format: () => 'pattern',
  greater_than: (_, inclusive) => (inclusive ? 'minimum' : 'exclusiveMinimum'),
  less_than: (_, inclusive) => (inclusive ? 'maximum' : 'exclusiveMaximum'),
};

type CheckDef = { check: string; inclusive?: boolean; error?: (issue: object) => unknown };

const MARK = 'x-deputy-messages';

/**
 * A zod schema as JSON Schema, and the contract's own words for its checks (`'give at least one brief'`) by the
 * location of the keyword that states each one, wherever the schema occurs: the workflow's checker reports them
 * instead of its own.
 */
export function jsonSchema(schema: z.ZodType): { json: Record<string, unknown>; messages: Record<string, string> } {
  const json = z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-2020-12',
    override: ({ zodSchema, jsonSchema: node }) => {
      const checks = (zodSchema as unknown as { _zod: { def: { checks?: { _zod: { def: CheckDef } }[] } } })._zod.def
        .checks;
      const words: Record<string, string> = {};
      for (const { _zod } of checks ?? []) {
        const { check, inclusive = false, error } = _zod.def;
        const text = error?.({});
        const keyword = KEYWORD_OF_CHECK[check]?.(node.type, inclusive);
        if (typeof text === 'string' && keyword) words[keyword] = text;
      }
      if (Object.keys(words).length > 0) node[MARK] = words;
    },
  });
  delete json.$schema;
  const messages: Record<string, string> = {};
  const marked = new Set<Record<string, unknown>>();
  const visit = (node: unknown, location: string) => {
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    const words = record[MARK] as Record<string, string> | undefined;
    if (words && !Array.isArray(node)) {
      marked.add(record);
      for (const [keyword, text] of Object.entries(words)) messages[`${location}/${keyword}`] = text;
    }
    for (const [key, inner] of Object.entries(record)) {
      if (key !== MARK) visit(inner, `${location}/${encodePointer(key)}`);
    }
  };
  visit(json, '#');
  for (const node of marked) delete node[MARK];
  return { json, messages };
}

/** The steering tools' names by who is offered them, and each one's arguments, from the registry. */
function steeringParts(): string[] {
  const entries = Object.entries(STEERING_TOOL_REGISTRY);
  const names = (who: string) => JSON.stringify(entries.filter(([, t]) => t.offeredTo === who).map(([n]) => n));
  const schemas = entries.map(
    ([name, tool]) => `${JSON.stringify(name)}: ${JSON.stringify(jsonSchema(tool.args).json)}`,
  );
  const messages = entries.map(
    ([name, tool]) => `${JSON.stringify(name)}: ${JSON.stringify(jsonSchema(tool.args).messages)}`,
  );
  const examples = entries.map(([name, tool]) => `${JSON.stringify(name)}: ${JSON.stringify(tool.example)}`);
  return [
    '/** Steering tools offered with the delegation scope, below max depth. */',
    `export const PARENT_STEERING_TOOLS: readonly SteeringToolName[] = ${names('parent')};\n`,
    '/** Steering tools offered to every child. */',
    `export const CHILD_STEERING_TOOLS: readonly SteeringToolName[] = ${names('child')};\n`,
    '/** Arguments of each steering tool (and of the updates that take the same arguments). */',
    `export const STEERING_ARGS_SCHEMAS: Readonly<Record<SteeringToolName, JsonSchema>> = {${schemas.join(',')}};\n`,
    "/** The contract's own words for each steering tool's checks, by keyword location. */",
    `export const STEERING_ARGS_MESSAGES: Readonly<Record<SteeringToolName, SchemaMessages>> = {${messages.join(',')}};\n`,
    "/** What the model is told to send when a steering tool's arguments are not JSON. */",
    `export const STEERING_EXAMPLES: Readonly<Record<SteeringToolName, string>> = {${examples.join(',')}};\n`,
  ];
}

/** The draft-07 meta-schema as ajv ships it, without its `$id` (a checker must not look it up). */
function metaSchema(): Record<string, unknown> {
  const require = createRequire(import.meta.url);
  const {
    $id: _id,
    $schema: _schema,
    ...meta
  } = require('ajv/dist/refs/json-schema-draft-07.json') as Record<string, unknown>;
  return meta;
}

/** The generated module's text, formatted as the project's Prettier config wants it. */
export async function generatedModule(): Promise<string> {
  const parts = Object.entries(SCHEMAS).map(([name, [schema, doc]]) => {
    const { json, messages } = jsonSchema(schema as z.ZodType);
    return [
      `/** ${doc} */\nexport const ${name}_SCHEMA: JsonSchema = ${JSON.stringify(json)};\n`,
      `/** The contract's own words for the checks of ${name}_SCHEMA, by keyword location. */`,
      `export const ${name}_MESSAGES: SchemaMessages = ${JSON.stringify(messages)};\n`,
    ].join('\n');
  });
  const text = [
    '/**',
    ' * GENERATED by `npm run schemas` from the zod contract; do not edit. JSON Schemas of the inputs workflow code',
    ' * checks without zod (see src/contract/checks/json-schema.ts), and the meta-schema a return shape is checked against.',
    ' */',
    "import type { SteeringToolName } from './delegation.js';",
    "import type { JsonSchema, SchemaMessages } from './tools.js';",
    '',
    ...parts,
    ...steeringParts(),
    '/** JSON Schema draft-07, the meta-schema: a return shape that does not pass it is not a usable schema. */',
    `export const JSON_SCHEMA_META: JsonSchema = ${JSON.stringify(metaSchema())};\n`,
  ].join('\n');
  const options = await resolveConfig(GENERATED_PATH);
  return format(text, { ...options, filepath: GENERATED_PATH });
}

if (process.argv[1] && join(process.argv[1]) === fileURLToPath(import.meta.url)) {
  writeFileSync(GENERATED_PATH, await generatedModule());
  console.log(`wrote ${GENERATED_PATH}`);
  // The compiled checks are made from the schemas just written.
  const { COMPILED_PATH, compiledModule } = await import('./compiled-checks.js');
  writeFileSync(COMPILED_PATH, compiledModule());
  console.log(`wrote ${COMPILED_PATH}`);
}
