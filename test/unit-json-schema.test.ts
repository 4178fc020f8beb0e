/**
 * The JSON Schema checker workflow code checks its inputs, signals and updates with (R1.7), on hand-written schemas:
 * each keyword's verdict and the exact words of each problem, and what it returns besides (defaults, unknown keys),
 * as zod would. The property tests in unit-contract-checks.test.ts hold it to zod on the generated schemas.
 */
import { describe, expect, it } from 'vitest';
import { checkSchema, SchemaChecker, type JsonSchema, type SchemaOptions } from '../src/contract/checks/json-schema.js';
import { formatPath } from '../src/contract/checks/schema-wording.js';

const problems = (schema: JsonSchema, value: unknown, options?: SchemaOptions) => {
  const checked = checkSchema(schema, value, options);
  return checked.ok ? 'valid' : checked.issues;
};
const returned = (schema: JsonSchema, value: unknown, options?: SchemaOptions) => {
  const checked = checkSchema(schema, value, options);
  return checked.ok ? checked.value : checked.issues;
};

describe('R1.7 the workflow checker, keyword by keyword', () => {
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

  it('R1.7 unions and references', () => {
    const union = { anyOf: [{ type: 'string' }, { type: 'number' }] };
    expect(problems(union, 'a')).toBe('valid');
    expect(problems(union, 2)).toBe('valid');
    expect(problems(union, true)).toEqual(['(root): matches none of the allowed forms']);
    // One alternative of the right shape that fails only a bound: its problem, as zod reports it.
    const reserve = {
      anyOf: [{ const: false }, { type: 'object', properties: { tokens: { type: 'integer', minimum: 0 } } }],
    };
    expect(problems(reserve, { tokens: -1 })).toEqual(['tokens: must be >= 0']);
    expect(problems(reserve, { tokens: 'x' })).toEqual(['(root): matches none of the allowed forms']);
    const defs = {
      $defs: { n: { type: 'number' } },
      type: 'object',
      properties: { a: { $ref: '#/$defs/n' }, self: { $ref: '#' } },
      additionalProperties: false,
    };
    expect(problems(defs, { a: 1, self: { a: 2 } })).toBe('valid');
    expect(problems(defs, { a: 'x' })).toEqual(['a: expected number, received string']);
    expect(problems({ type: 'string', format: 'x', pattern: '^a' }, 'b')).toEqual(['(root): does not match ^a']);
  });

  it('R1.7 a tagged union reports the problems of the alternative the value names, as zod does', () => {
    const events = {
      type: 'array',
      items: {
        oneOf: [
          { type: 'object', properties: { type: { const: 'a' }, n: { type: 'number' } }, required: ['type', 'n'] },
          { type: 'object', properties: { type: { const: 'b' }, s: { type: 'string' } }, required: ['type', 's'] },
        ],
      },
    };
    expect(
      problems(events, [
        { type: 'a', n: 1 },
        { type: 'b', s: 'x' },
      ]),
    ).toBe('valid');
    expect(
      problems(events, [
        { type: 'a', n: 1 },
        { type: 'b', s: 2 },
      ]),
    ).toEqual(['1.s: expected string, received integer']);
    expect(problems(events, [{ type: 'b' }])).toEqual(['0.s: required']);
    expect(problems(events, [{ type: 'c' }])).toEqual(['0.type: expected one of "a", "b"']);
    expect(problems(events, [3])).toEqual(['0: expected object, received integer']);
    // zod drops the unknown keys of the alternative that matched, not those of the others.
    expect(returned(events, [{ type: 'b', s: 'x', n: 3, extra: true }])).toEqual([{ type: 'b', s: 'x' }]);
  });

  it('R1.7 what it returns: defaults filled in and unknown keys dropped as zod does, or kept as JSON Schema reads them', () => {
    const object = {
      type: 'object',
      properties: {
        a: { type: 'number', default: 1 },
        tags: { type: 'array', items: { type: 'string' }, default: [] },
      },
    };
    expect(returned(object, {})).toEqual({ a: 1, tags: [] });
    expect(returned(object, { a: 2, extra: 'x' })).toEqual({ a: 2, tags: [] });
    expect(returned(object, { a: 2, extra: 'x' }, { unknownKeys: 'keep' })).toEqual({ a: 2, tags: [], extra: 'x' });
    const loose = { type: 'object', properties: { a: { type: 'number' } }, additionalProperties: {} };
    expect(returned(loose, { a: 2, extra: 'x' })).toEqual({ a: 2, extra: 'x' });
    // A copy: the default of one value is not shared with the next.
    const first = returned(object, {}) as { tags: string[] };
    first.tags.push('changed');
    expect(returned(object, {})).toEqual({ a: 1, tags: [] });
  });

  it('R1.11 a value the validator cannot take (a signal sent without its argument) is refused, never thrown', () => {
    const object = { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] };
    expect(problems(object, undefined)).toEqual(['(root): required, received nothing']);
    for (const odd of [{ a: undefined }, { a: 1n }, { a: () => 1 }]) {
      expect(problems(object, odd)).toEqual([expect.stringMatching(/^\(root\): could not be checked \(.+\)$/)]);
    }
  });

  it("R1.7 the contract's own words replace the checker's where it has them", () => {
    const briefs = { type: 'object', properties: { briefs: { type: 'array', minItems: 1 } } };
    const messages = { '#/properties/briefs/minItems': 'give at least one brief' };
    expect(problems(briefs, { briefs: [] }, { messages })).toEqual(['briefs: give at least one brief']);
    expect(problems(briefs, { briefs: [] })).toEqual(['briefs: too few items (at least 1)']);
  });

  it('R1.7 paths with any key, as zod writes them; a format with its pattern is said once', () => {
    const odd = { type: 'object', properties: { 'a/b': { type: 'number' }, 'c~d e': { type: 'number' } } };
    expect(problems(odd, { 'a/b': 'x', 'c~d e': 'y' })).toEqual([
      '["a/b"]: expected number, received string',
      '["c~d e"]: expected number, received string',
    ]);
    expect(formatPath([Symbol('s'), 0, 'k'])).toBe('["Symbol(s)"].0.k');
    const when = { type: 'string', format: 'date-time', pattern: '^2026-' };
    expect(problems(when, 'yesterday')).toEqual(['(root): does not match ^2026-']);
    const twoBounds = {
      anyOf: [
        { type: 'integer', minimum: 5 },
        { type: 'integer', maximum: 1 },
      ],
    };
    expect(problems(twoBounds, 3)).toEqual(['(root): matches none of the allowed forms']);
  });

  it('R1.7 what it returns through references, unions, open arrays and schemas that allow anything', () => {
    const defs = {
      $defs: { item: { type: 'object', properties: { n: { type: 'number', default: 0 } } } },
      type: 'object',
      properties: {
        one: { $ref: '#/$defs/item' },
        either: { anyOf: [{ type: 'string' }, { $ref: '#/$defs/item' }] },
        open: { type: 'array' },
        any: true,
      },
    };
    const value = { one: { x: 1 }, either: {}, open: [{ a: 1 }], any: { b: [2] } };
    expect(returned(defs, value)).toEqual({ one: { n: 0 }, either: { n: 0 }, open: [{ a: 1 }], any: { b: [2] } });
    expect(returned(defs, { either: 'text' })).toEqual({ either: 'text' });
  });
  it('R1.7 a compiled check answers first, with what it shaped of a copy; the schema words a value it refuses', () => {
    const given: unknown[] = [];
    // A stand-in for ajv's code: passes {a: 1} only, and marks what it was given, as a shaping check changes it.
    const compiled = (value: unknown) => {
      given.push(value);
      const object = value as Record<string, unknown>;
      object.shaped = true;
      return object.a === 1;
    };
    const schema = { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] };
    const checker = new SchemaChecker(schema, { compiled });
    const input = { a: 1 };
    expect(checker.check(input)).toEqual({ ok: true, value: { a: 1, shaped: true } });
    expect(input, 'the compiled check is given a copy').toEqual({ a: 1 });
    expect(checker.check({ a: 'x' })).toEqual({ ok: false, issues: ['a: expected number, received string'] });
    // Refused by the compiled check alone: the schema has the last word.
    expect(checker.check({ a: 2 })).toEqual({ ok: true, value: { a: 2 } });
    expect(given).toHaveLength(3);
  });
});
