/**
 * Schemas from outside (a model's return_shape, a preset's approval condition) are checked in bounded time: their
 * patterns by RE2, their costly keywords answered ahead, their size and depth capped. These tests hold the bounded
 * check to the plain validator on schemas the plain validator checks quickly, and time the ones it cannot.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkSchema } from '../src/contract/checks/json-schema.js';
import {
  answeredFor,
  checkOutsideSchema,
  OUTSIDE_SCHEMA_CAPS,
  outsideSchemaProblems,
} from '../src/contract/checks/outside-schema.js';
import { checkReturnShape, parseInvocation } from '../src/contract/checks/contract-checks.js';
import { argumentsWhole, argumentsWords, whyApproval } from '../src/rules/approvals.js';

const CATASTROPHIC = { type: 'object', properties: { v: { type: 'string', pattern: '^(a+)+$' } }, required: ['v'] };

const timed = <T>(f: () => T): { value: T; ms: number } => {
  const start = performance.now();
  const value = f();
  return { value, ms: performance.now() - start };
};

describe('R1.16 schemas from outside are checked in bounded time', () => {
  it('R1.16 a catastrophic pattern against a value that backtracks for seconds answers in milliseconds', () => {
    for (const n of [30, 1_000, 20_000]) {
      const output = JSON.stringify({ v: `${'a'.repeat(n)}!` });
      const { value, ms } = timed(() => checkReturnShape(output, CATASTROPHIC));
      expect(value).toEqual({ ok: false, error: 'the output does not match return_shape: v: does not match ^(a+)+$' });
      expect(ms).toBeLessThan(200);
    }
    expect(checkReturnShape(JSON.stringify({ v: 'aaaa' }), CATASTROPHIC)).toEqual({ ok: true, value: { v: 'aaaa' } });
  });

  it('R1.16 a pattern RE2 cannot read (lookaround, backreference) is refused naming the keyword; nothing is spawned', () => {
    for (const pattern of ['(a)\\1', '(?=a)b', 'x'.repeat(OUTSIDE_SCHEMA_CAPS.patternChars + 1)]) {
      const check = parseInvocation(
        JSON.stringify({ briefs: [{ task_name: 't', message: 'm' }], return_shape: { type: 'string', pattern } }),
      );
      expect(check.ok).toBe(false);
      expect((check as { error: string }).error).toMatch(
        /^return_shape cannot be checked in bounded time: #\/pattern: /,
      );
      expect((check as { error: string }).error).toMatch(/nothing was spawned$/);
    }
    expect(outsideSchemaProblems({ patternProperties: { '(?<=x)y': {} } })[0]).toMatch(/^#\/patternProperties: /);
  });

  it('R1.16 caps: size, depth, a $ref that loops at one value, fan-out through $ref and combinators', () => {
    expect(outsideSchemaProblems({ enum: ['x'.repeat(OUTSIDE_SCHEMA_CAPS.chars)] })[0]).toMatch(
      /characters of JSON, past/,
    );
    let deep: unknown = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { items: deep };
    expect(outsideSchemaProblems(deep)).toEqual([`the schema nests deeper than ${OUTSIDE_SCHEMA_CAPS.depth} levels`]);
    expect(outsideSchemaProblems({ $ref: '#' })[0]).toMatch(/loops back to a schema without going into the value/);
    expect(
      outsideSchemaProblems({ allOf: [{ $ref: '#/$defs/a' }], $defs: { a: { anyOf: [{ $ref: '#' }] } } })[0],
    ).toMatch(/loops back/);
    // A recursive shape that goes into the value each time is fine.
    const tree = {
      $defs: { node: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/node' } } } } },
      $ref: '#/$defs/node',
    };
    expect(outsideSchemaProblems(tree)).toEqual([]);
    expect(checkOutsideSchema(tree, { kids: [{ kids: [] }, { kids: 3 }] })).toEqual({
      ok: false,
      issues: ['kids.1.kids: expected array, received integer'],
    });
    // Each level applies both branches of the next: 2^20 subschemas on one value.
    const defs: Record<string, unknown> = { d20: { type: 'string' } };
    for (let i = 0; i < 20; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    expect(outsideSchemaProblems({ $defs: defs, $ref: '#/$defs/d0' })[0]).toMatch(
      /subschemas apply to one value there/,
    );
    expect(outsideSchemaProblems({ $ref: 'https://example.com/s.json' })[0]).toMatch(
      /only references inside the schema/,
    );
    expect(outsideSchemaProblems({ $ref: '#/%E0%A4%A' })[0]).toMatch(/points at no schema inside it/);
    // A value nested past what a recursive walk takes is refused, never thrown.
    const deepValue = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(checkOutsideSchema({ type: 'array', uniqueItems: true }, deepValue).ok).toBe(false);
    expect(() => checkOutsideSchema({ items: { pattern: '^a$' } }, deepValue)).not.toThrow();
  });

  it('R1.16 patternProperties and uniqueItems are answered as the plain validator answers them', () => {
    const schema = {
      type: 'object',
      patternProperties: { '^x-': { type: 'integer' }, '^(a|b)+$': { type: 'string' } },
      properties: { ab: { minLength: 2 } },
      additionalProperties: false,
      propertyNames: { pattern: '^[a-z-]+$' },
    };
    for (const value of [
      { 'x-a': 1, ab: 'zz' },
      { 'x-a': 'no' },
      { ab: 'z' },
      { other: 1 },
      { Upper: 1 },
      { 'x-1': 1 },
    ]) {
      expect(checkOutsideSchema(schema, value).ok, JSON.stringify(value)).toBe(
        checkSchema(schema, value, { unknownKeys: 'keep' }).ok,
      );
    }
    const unique = { type: 'array', uniqueItems: true };
    expect(
      checkOutsideSchema(unique, [
        { a: 1, b: 2 },
        { b: 2, a: 1 },
      ]),
    ).toEqual({ ok: false, issues: ['(root): has an item more than once'] });
    expect(checkOutsideSchema(unique, [1, '1', [1]]).ok).toBe(true);
    const big = Array.from({ length: 20_000 }, (_, i) => i);
    expect(timed(() => checkOutsideSchema(unique, big)).ms).toBeLessThan(200);
  });

  it('R1.16 on schemas and values the plain validator checks quickly, the bounded check agrees with it', () => {
    const patterns = fc.constantFrom('^a', 'b$', '^[0-9]+$', 'x|y', '^$', '\\d{2}', '[^a]', '^(ab)*$');
    const leaf = fc.oneof(
      fc.record({ type: fc.constantFrom('string', 'integer', 'object', 'array') }),
      fc.record({ pattern: patterns }),
      fc.record({ type: fc.constant('string'), pattern: patterns, minLength: fc.nat(3) }),
      fc.record({ uniqueItems: fc.boolean() }),
    );
    const schema = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        leaf,
        fc.record({ items: tie('node') }),
        fc.record({ properties: fc.dictionary(fc.constantFrom('a', 'b', 'ab'), tie('node'), { maxKeys: 2 }) }),
        fc.record({
          patternProperties: fc.dictionary(patterns, tie('node'), { maxKeys: 2 }),
          additionalProperties: fc.boolean(),
        }),
        fc.record({ anyOf: fc.array(tie('node'), { minLength: 1, maxLength: 2 }) }),
        fc.record({ not: tie('node') }),
      ),
    })).node;
    const value = fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
    const strings = fc.constantFrom('a', 'ab', 'b', '12', 'x', '', 'abab', 'ba');
    const valueWithStrings = fc.oneof(value, fc.array(strings), fc.dictionary(strings, fc.oneof(strings, fc.nat())));
    fc.assert(
      fc.property(schema, valueWithStrings, (s, v) => {
        const plain = checkSchema(s, v, { unknownKeys: 'keep' }).ok;
        expect(checkOutsideSchema(s, v).ok).toBe(plain);
      }),
      // Under mutation testing (which lowers the global default) each mutant reruns it: 200 cases there.
      { numRuns: fc.readConfigureGlobal().numRuns === undefined ? 2000 : 200, seed: 20261207 },
    );
  });

  it('R1.16 R7.1 an approval condition with a catastrophic pattern decides in bounded time, and one Deputy cannot check asks', () => {
    const policy = (when: Record<string, unknown>) => ({
      tools: { send: [when] },
      timeoutSeconds: 60,
      onTimeout: 'deny' as const,
    });
    const catastrophic = policy({ properties: { to: { pattern: '^(a+)+$' } } });
    const { value, ms } = timed(() =>
      whyApproval(catastrophic, 'send', JSON.stringify({ to: `${'a'.repeat(5000)}!` })),
    );
    expect(value).toBeUndefined();
    expect(ms).toBeLessThan(200);
    expect(whyApproval(catastrophic, 'send', JSON.stringify({ to: 'aaa' }))).toMatch(/when its arguments match/);
    expect(whyApproval(policy({ properties: { to: { pattern: '(?=x)' } } }), 'send', '{"to":"y"}')).toMatch(
      /^the config asks approval of send on a condition Deputy cannot check in bounded time \(#\/properties\/to\/pattern: /,
    );
  });
});

describe('R1.16 every subschema is walked, and each cap holds at its number', () => {
  const BAD = '(?=x)';
  const refused = (schema: unknown) => outsideSchemaProblems(schema).map((p) => p.slice(0, p.indexOf(': ')));

  it('R1.16 a pattern RE2 cannot read is found under every keyword that holds subschemas, at its pointer', () => {
    const bad = { pattern: BAD };
    const places: [unknown, string][] = [
      [{ not: bad }, '#/not/pattern'],
      [{ if: bad }, '#/if/pattern'],
      [{ then: bad }, '#/then/pattern'],
      [{ else: bad }, '#/else/pattern'],
      [{ allOf: [{}, bad] }, '#/allOf/1/pattern'],
      [{ anyOf: [bad] }, '#/anyOf/0/pattern'],
      [{ oneOf: [{}, {}, bad] }, '#/oneOf/2/pattern'],
      [{ dependentSchemas: { a: bad } }, '#/dependentSchemas/a/pattern'],
      [{ items: bad }, '#/items/pattern'],
      [{ items: [{}, bad] }, '#/items/1/pattern'],
      [{ prefixItems: [bad] }, '#/prefixItems/0/pattern'],
      [{ additionalItems: bad }, '#/additionalItems/pattern'],
      [{ additionalProperties: bad }, '#/additionalProperties/pattern'],
      [{ unevaluatedItems: bad }, '#/unevaluatedItems/pattern'],
      [{ unevaluatedProperties: bad }, '#/unevaluatedProperties/pattern'],
      [{ contains: bad }, '#/contains/pattern'],
      [{ propertyNames: bad }, '#/propertyNames/pattern'],
      [{ properties: { 'a/b~c': bad } }, '#/properties/a~1b~0c/pattern'],
      [{ patternProperties: { '^x': bad } }, '#/patternProperties/^x/pattern'],
      [{ $defs: { d: bad } }, '#/$defs/d/pattern'],
      [{ definitions: { d: bad } }, '#/definitions/d/pattern'],
    ];
    for (const [schema, at] of places) expect(refused(schema), at).toEqual([at]);
    // Values that are not schemas are not walked.
    expect(
      outsideSchemaProblems({ enum: [{ pattern: BAD }], const: { pattern: BAD }, default: { pattern: BAD } }),
    ).toEqual([]);
    expect(outsideSchemaProblems({ allOf: 'x', properties: [bad], dependentSchemas: [bad] })).toEqual([]);
  });

  it('R1.16 each cap holds at its number, and each refusal says what it met', () => {
    const ok = 'a'.repeat(OUTSIDE_SCHEMA_CAPS.patternChars);
    expect(outsideSchemaProblems({ pattern: ok })).toEqual([]);
    expect(outsideSchemaProblems({ pattern: `${ok}a` })).toEqual([`#/pattern: "${ok}a" is 1001 characters, past 1000`]);
    expect(outsideSchemaProblems({ pattern: '(a)\\1' })).toEqual([
      '#/pattern: "(a)\\\\1" is not a pattern Deputy can match in linear time (RE2 syntax: no lookaround, no backreferences): error parsing regexp: invalid escape sequence: `\\1`',
    ]);
    // Depth: 32 levels of JSON pass, 33 do not.
    const nested = (levels: number) => {
      let schema: unknown = {};
      for (let i = 1; i < levels; i++) schema = { not: schema };
      return schema;
    };
    expect(outsideSchemaProblems(nested(32))).toEqual([]);
    expect(outsideSchemaProblems(nested(33))).toEqual(['the schema nests deeper than 32 levels']);
    // Size: 32,768 characters of JSON pass, one more does not.
    const sized = (chars: number) => ({ description: 'x'.repeat(chars - '{"description":""}'.length) });
    expect(JSON.stringify(sized(32_768))).toHaveLength(32_768);
    expect(outsideSchemaProblems(sized(32_768))).toEqual([]);
    expect(outsideSchemaProblems(sized(32_769))).toEqual(['the schema is 32769 characters of JSON, past 32768']);
    // Subschemas on one value: the node and 999 beside it pass, 1,000 beside it do not.
    const beside = (n: number) => ({ allOf: Array.from({ length: n }, () => ({})) });
    expect(outsideSchemaProblems(beside(999))).toEqual([]);
    expect(outsideSchemaProblems(beside(1000))).toEqual([
      '#: 1001 subschemas apply to one value there ($ref and combinators followed), past 1000',
    ]);
    expect(outsideSchemaProblems({ $ref: '#/$defs/none' })).toEqual([
      '#: $ref "#/$defs/none" points at no schema inside it',
    ]);
    expect(outsideSchemaProblems({ $defs: { a: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' })).toEqual([
      '#: a $ref loops back to a schema without going into the value',
    ]);
    expect(outsideSchemaProblems({ $defs: { a: { type: 'string' } }, $ref: '#/$defs/a' })).toEqual([]);
  });

  it('R1.16 a value too large for its schema’s answers is refused naming both numbers; below the bound it is checked', () => {
    const schema = { type: 'array', items: { type: 'string', pattern: '^a$' } };
    // 2,001 places (the array and its strings), 2,000 strings failing: 4,002,000 comparisons, past 4,000,000.
    const failing = Array.from({ length: 2000 }, (_, i) => `b${i}`);
    expect(answeredFor(schema, failing)).toEqual({
      problem:
        "the value (2001 places) is too large to check against this schema's patterns in bounded time (2000 answers to compare with; at most 4000000 comparisons)",
    });
    expect(checkOutsideSchema(schema, failing.slice(0, 1990)).ok).toBe(false);
    expect(checkOutsideSchema(schema, failing.slice(0, 1990))).toEqual({
      ok: false,
      issues: expect.arrayContaining(['0: does not match ^a$']) as unknown,
    });
    expect(checkOutsideSchema(schema, ['a', 'a'])).toEqual({ ok: true, value: ['a', 'a'] });
    // A large array is walked without spreading it onto the stack.
    expect(
      checkOutsideSchema(
        { type: 'array', uniqueItems: true },
        Array.from({ length: 200_000 }, (_, i) => i),
      ).ok,
    ).toBe(true);
  });
});

describe('R7.2 how a view shows a request’s arguments', () => {
  it('R7.2 whole, or plainly cut with where to read them whole', () => {
    const request = { run: 'root/mailer-1', arguments: '{"to":"a@b.c"}', argumentsChars: 14 };
    expect(argumentsWhole(request)).toBe(true);
    expect(argumentsWords(request)).toBe('arguments (whole, 14 characters): {"to":"a@b.c"}');
    const cut = { ...request, arguments: '{"to"', argumentsChars: 14 };
    expect(argumentsWhole(cut)).toBe(false);
    expect(argumentsWords(cut)).toBe(
      'arguments CUT (the first 5 of 14 characters; read them whole with `npm run deputy -- approvals root/mailer-1` before deciding): {"to"…',
    );
  });
});
