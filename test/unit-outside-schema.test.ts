/**
 * Schemas from outside (a model's return_shape, a preset's approval condition) are checked in bounded time: their
 * patterns by RE2, their costly keywords answered ahead, their size and depth capped. These tests hold the bounded
 * check to the plain validator on schemas the plain validator checks quickly, and time the ones it cannot.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkSchema } from '../src/contract/checks/json-schema.js';
import {
  checkOutsideSchema,
  OUTSIDE_SCHEMA_CAPS,
  outsideSchemaProblems,
} from '../src/contract/checks/outside-schema.js';
import { checkReturnShape, parseInvocation } from '../src/contract/checks/contract-checks.js';
import { whyApproval } from '../src/rules/approvals.js';

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
