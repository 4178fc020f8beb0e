/**
 * A property over hostile shapes, through real delegations: a parent's model names a generated `return_shape`
 * (catastrophic patterns, patterns RE2 cannot read, deep nesting, huge enums, `$ref` loops and fan-outs, repeated
 * items) and its child answers a generated value built to make a backtracking check slow. Every run ends, with the
 * child's output or a tool error naming the problem; no workflow task fails; the slowest workflow task the server
 * records stays under `WORKFLOW_TASK_BOUND_MS`; the check itself, timed in this process, stays under 200 ms.
 * docs/security.md describes the generator and the bounds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkReturnShape, parseInvocation } from '../src/contract/checks/contract-checks.js';
import { lastMessage, toolMessages, userSays } from '../src/testing/script.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { WORKFLOW_TASK_BOUND_MS, workflowTaskTimes } from './support/history.js';
import { useHarness } from './support/harness.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });

/** The check of one (schema, value) pair, in this process. */
const CHECK_BOUND_MS = 200;
const CASES = 40;

const catastrophic = fc.constantFrom(
  '^(a+)+$',
  '(a|aa)+$',
  '^(a|a?)+$',
  '^(\\w+\\s?)*$',
  '(x+x+)+y',
  '^([a-z]+)*[A-Z]$',
);
const unreadable = fc.constantFrom('(?<=a)b', '(a)\\1', '(?!x)a', 'a{1001}', 'x'.repeat(1_001));
const pattern = fc.oneof({ weight: 3, arbitrary: catastrophic }, { weight: 1, arbitrary: unreadable });

/** Schemas built to be slow, large or endless to check. */
const hostileSchema: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  pattern.map((p) => ({ type: 'object', properties: { v: { type: 'string', pattern: p } }, required: ['v'] })),
  pattern.map((p) => ({ type: 'array', items: { type: 'string', pattern: p } })),
  pattern.map((p) => ({ type: 'object', patternProperties: { [p]: { type: 'string' } }, additionalProperties: false })),
  pattern.map((p) => ({ type: 'object', propertyNames: { pattern: p } })),
  fc.integer({ min: 1, max: 60 }).map((depth) => {
    let schema: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < depth; i++) schema = { type: 'array', items: schema };
    return schema;
  }),
  fc.integer({ min: 10, max: 6_000 }).map((n) => ({ enum: Array.from({ length: n }, (_, i) => `value-${i}`) })),
  fc.constantFrom<Record<string, unknown>>(
    { $ref: '#' },
    { allOf: [{ $ref: '#/$defs/a' }], $defs: { a: { anyOf: [{ $ref: '#' }] } } },
    { $ref: '#/$defs/missing' },
    { $ref: 'https://example.com/schema.json' },
  ),
  fc.integer({ min: 5, max: 30 }).map((levels) => {
    const defs: Record<string, unknown> = { [`d${levels}`]: { type: 'string', pattern: '^(a+)+$' } };
    for (let i = 0; i < levels; i++) {
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    }
    return { $defs: defs, $ref: '#/$defs/d0' };
  }),
  fc.constant({ type: 'array', uniqueItems: true }),
);

/** Values built to make a backtracking check slow. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: 20, max: 5_000 }).map((n) => ({ v: `${'a'.repeat(n)}!` })),
  fc.integer({ min: 20, max: 2_000 }).map((n) => Array.from({ length: 20 }, (_, i) => `${'a'.repeat(n)}${i}!`)),
  fc.integer({ min: 20, max: 2_000 }).map((n) => ({ [`${'a'.repeat(n)}!`]: 'x', ['x'.repeat(n)]: 'y' })),
  fc.integer({ min: 1, max: 60 }).map((depth) => {
    let value: unknown = 'leaf';
    for (let i = 0; i < depth; i++) value = [value];
    return value;
  }),
  fc.integer({ min: 100, max: 4_000 }).map((n) => Array.from({ length: n }, (_, i) => i % 7)),
  fc.constant('value-5999'),
);

describe('R1.16 property: hostile schemas through real delegations', () => {
  it('R1.16 R1.7 R2.8 every run ends with a result or a tool error naming the problem; no workflow task fails or passes the bound', async () => {
    const cases = fc.sample(fc.tuple(hostileSchema, hostileValue), { numRuns: CASES, seed: 20261207 });
    // The check alone, in this process, for every pair.
    for (const [schema, value] of cases) {
      const start = performance.now();
      const invocation = parseInvocation(
        JSON.stringify({ briefs: [{ task_name: 'c', message: 'm' }], return_shape: schema }),
      );
      if (invocation.ok) checkReturnShape(JSON.stringify(value), schema);
      expect(performance.now() - start, JSON.stringify(schema).slice(0, 200)).toBeLessThan(CHECK_BOUND_MS);
    }
    // Through the workflows, four at a time.
    const outcomes = new Set<string>();
    let slowest = 0;
    for (let at = 0; at < cases.length; at += 4) {
      await Promise.all(
        cases.slice(at, at + 4).map(async ([schema, value], i) => {
          const task = `hostile shape [${at + i}]`;
          const child = `hostile shape child [${at + i}]`;
          h.model.add(
            {
              name: `${task}:delegate`,
              when: (r) => lastMessage(r) === task,
              reply: delegateReply({ briefs: [{ task_name: 'c', message: child }], return_shape: schema }),
            },
            { name: `${task}:child`, when: userSays(child), reply: { text: JSON.stringify(value) } },
            {
              name: `${task}:join`,
              when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
              reply: { text: 'ended' },
            },
          );
          const parent = h.id(`hostile-${at + i}`);
          await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parent });
          expect(await h.deputy.result(parent)).toMatchObject({ status: 'completed', output: 'ended' });
          const [join] = h.model.requests.filter((r) => r.rule === `${task}:join`);
          const said = toolMessages(join!).at(-1) ?? '';
          // A result, or an error that names what was wrong.
          const outcome =
            /"status": ?"completed"|return_shape cannot be checked in bounded time: |return_shape is not a usable JSON Schema: |the output does not match return_shape: |the output is not JSON/.exec(
              said,
            );
          expect(outcome, said.slice(0, 400)).not.toBeNull();
          outcomes.add(outcome![0].startsWith('"status"') ? 'a result' : outcome![0]);
          const times = await workflowTaskTimes(h.client, parent);
          expect(times.failures).toEqual([]);
          expect(times.slowestMs, `${task}: ${JSON.stringify(schema).slice(0, 200)}`).toBeLessThan(
            WORKFLOW_TASK_BOUND_MS,
          );
          slowest = Math.max(slowest, times.slowestMs);
        }),
      );
    }
    console.log(
      `hostile shapes: ${cases.length} runs, slowest workflow task ${slowest} ms; outcomes: ${[...outcomes].join(' | ')}`,
    );
    // The generator reached each way a hostile pair can end.
    expect(outcomes).toContain('return_shape cannot be checked in bounded time: ');
    expect(outcomes).toContain('the output does not match return_shape: ');
    expect(outcomes).toContain('a result');
  });
});
