/**
 * The JSON Schema fast path workflow code checks signals and updates with (R1.7), on hand-written schemas: each
 * keyword's verdict and the exact words of each problem, and where it says it cannot tell (zod then decides). The
 * property tests in unit-schema-check.test.ts hold its verdicts to zod's on the generated schemas.
 */
import { describe, expect, it } from 'vitest';
import { checkSchema, type JsonSchema } from '../src/rules/schema-check.js';

const problems = (schema: JsonSchema, value: unknown) => {
  const verdict = checkSchema(schema, value);
  return verdict.kind === 'invalid' ? verdict.issues : verdict.kind;
};

describe('R1.7 the fast path, keyword by keyword', () => {
  it('R1.7 types, consts and enums', () => {
    expect(problems(true, 1)).toBe('valid');
    expect(problems(false, 1)).toEqual(['(root): not allowed']);
    expect(problems({ type: 'string' }, 'x')).toBe('valid');
    expect(problems({ type: 'string' }, 1)).toEqual(['(root): expected string, received integer']);
    expect(problems({ type: ['string', 'null'] }, 1.5)).toEqual(['(root): expected string or null, received number']);
    expect(problems({ type: 'number' }, 3)).toBe('valid');
    expect(problems({ type: 'integer' }, 3.5)).toEqual(['(root): expected integer, received number']);
    expect(problems({ type: 'array' }, {})).toEqual(['(root): expected array, received object']);
    expect(problems({ type: 'null' }, null)).toBe('valid');
    expect(problems({ type: 'number' }, Infinity)).toEqual(['(root): expected number, received number']);
    expect(problems({ const: 'a' }, 'b')).toEqual(['(root): expected "a"']);
    expect(problems({ const: 'a' }, 'a')).toBe('valid');
    expect(problems({ enum: ['a', 2] }, 'c')).toEqual(['(root): expected one of "a", 2']);
    expect(problems({ enum: ['a', 2] }, 2)).toBe('valid');
  });

  it('R1.7 strings, numbers and arrays at their bounds', () => {
    const text = { type: 'string', minLength: 2, maxLength: 3, pattern: '^[a-z]+$' };
    expect(problems(text, 'ab')).toBe('valid');
    expect(problems(text, 'abc')).toBe('valid');
    expect(problems(text, 'a')).toEqual(['(root): too short (at least 2 characters)']);
    expect(problems(text, 'abcd')).toEqual(['(root): too long (at most 3 characters)']);
    expect(problems(text, 'A1')).toEqual(['(root): does not match ^[a-z]+$']);
    const number = { type: 'number', minimum: 1, maximum: 3 };
    expect([problems(number, 1), problems(number, 3)]).toEqual(['valid', 'valid']);
    expect(problems(number, 0)).toEqual(['(root): must be >= 1']);
    expect(problems(number, 4)).toEqual(['(root): must be <= 3']);
    const open = { type: 'number', exclusiveMinimum: 1, exclusiveMaximum: 3 };
    expect(problems(open, 2)).toBe('valid');
    expect(problems(open, 1)).toEqual(['(root): must be > 1']);
    expect(problems(open, 3)).toEqual(['(root): must be < 3']);
    const list = { type: 'array', minItems: 1, maxItems: 2, items: { type: 'string' } };
    expect([problems(list, ['a']), problems(list, ['a', 'b'])]).toEqual(['valid', 'valid']);
    expect(problems(list, [])).toEqual(['(root): too few items (at least 1)']);
    expect(problems(list, ['a', 'b', 'c'])).toEqual(['(root): too many items (at most 2)']);
    expect(problems(list, ['a', 3])).toEqual(['1: expected string, received integer']);
  });

  it('R1.7 objects: required fields in order, unknown keys named at the object, paths as zod writes them', () => {
    const object = {
      type: 'object',
      properties: {
        name: { type: 'string' },
        'odd key': { type: 'number' },
        nested: { type: 'object', properties: { n: { type: 'integer' } }, additionalProperties: false },
      },
      required: ['name', 'odd key'],
      additionalProperties: false,
    };
    expect(problems(object, { name: 'a', 'odd key': 1 })).toBe('valid');
    expect(problems(object, {})).toEqual(['name: required', '["odd key"]: required']);
    expect(problems(object, { name: 'a', 'odd key': 1, x: 1, y: 2 })).toEqual(['(root): unrecognized keys "x", "y"']);
    expect(problems(object, { name: 'a', 'odd key': 1, x: 1 })).toEqual(['(root): unrecognized key "x"']);
    expect(problems(object, { name: 'a', 'odd key': 1, nested: { n: 'x' } })).toEqual([
      'nested.n: expected integer, received string',
    ]);
    const record = { type: 'object', additionalProperties: { type: 'number' }, propertyNames: { pattern: '^[a-z]+$' } };
    expect(problems(record, { a: 1 })).toBe('valid');
    expect(problems(record, { a: 'x' })).toEqual(['a: expected number, received string']);
    expect(problems(record, { A: 1 })).toEqual(['A: does not match ^[a-z]+$']);
  });

  it('R1.7 unions, references and what it leaves to zod', () => {
    const union = { anyOf: [{ type: 'string' }, { type: 'number' }] };
    expect(problems(union, 'a')).toBe('valid');
    expect(problems(union, 2)).toBe('valid');
    expect(problems(union, true)).toEqual(['(root): matches none of the allowed forms']);
    expect(problems({ anyOf: [{ type: 'string', format: 'email' }, { type: 'number' }] }, true)).toBe('unsure');
    const defs = {
      $defs: { n: { type: 'number' } },
      type: 'object',
      properties: { a: { $ref: '#/$defs/n' }, self: { $ref: '#' } },
      additionalProperties: false,
    };
    expect(problems(defs, { a: 1, self: { a: 2 } })).toBe('valid');
    expect(problems(defs, { a: 'x' })).toEqual(['a: expected number, received string']);
    expect(problems({ $ref: '#/$defs/missing' }, 1)).toBe('unsure');
    expect(problems({ type: 'string', format: 'email' }, 'a@b.co')).toBe('unsure');
    expect(problems({ type: 'string', format: 'x', pattern: '^a' }, 'b')).toEqual(['(root): does not match ^a']);
    // zod would strip an unknown key, or fill a default in: the value it returns is not this one.
    expect(problems({ type: 'object', properties: {} }, { extra: 1 })).toBe('unsure');
    expect(problems({ type: 'object', properties: { a: { type: 'number', default: 1 } } }, {})).toBe('unsure');
    expect(problems({ type: 'object', properties: { a: { type: 'number' } } }, { a: undefined })).toBe('unsure');
  });
});
