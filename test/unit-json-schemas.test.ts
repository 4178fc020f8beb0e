/**
 * R1.9 the JSON Schemas workflow code checks with are the zod contract's, word for word: every schema and the
 * contract's own words for its checks, compared as data (a change to the contract that `npm run schemas` was not run
 * for fails here, and so does any change to a limit, a pattern or a description of the contract).
 */
import type { z } from 'zod';
import { describe, expect, it } from 'vitest';
import * as generated from '../src/contract/json-schemas.js';
import { STEERING_TOOL_REGISTRY } from '../src/contract/delegation.js';
import { jsonSchema, SCHEMAS } from '../scripts/json-schemas.js';

const committed = generated as unknown as Record<string, unknown>;

describe('R1.9 the checked schemas are the contract’s', () => {
  it.each(Object.entries(SCHEMAS))('R1.9 %s: its schema and the words of its checks', (name, [schema]) => {
    const { json, messages } = jsonSchema(schema as z.ZodType);
    expect(json).toEqual(committed[`${name}_SCHEMA`]);
    expect(messages).toEqual(committed[`${name}_MESSAGES`]);
  });

  it.each(Object.entries(STEERING_TOOL_REGISTRY))('R1.9 the %s tool: its arguments and their words', (name, tool) => {
    const { json, messages } = jsonSchema(tool.args);
    expect(json).toEqual(generated.STEERING_ARGS_SCHEMAS[name as keyof typeof STEERING_TOOL_REGISTRY]);
    expect(messages).toEqual(generated.STEERING_ARGS_MESSAGES[name as keyof typeof STEERING_TOOL_REGISTRY]);
  });
});
