import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RunResult } from '../src/contract/run.js';
import { childInput, endOfResult, settleReservation, type ChildPlan } from '../src/rules/child-run.js';
import { checkReturnShape } from '../src/rules/delegation.js';
import { ZERO_USAGE } from '../src/rules/usage.js';

const usage = { ...ZERO_USAGE, inputTokens: 100, outputTokens: 20, totalTokens: 120, costMicroUsd: 140, modelCalls: 1 };
const ended = (over: Partial<RunResult>): RunResult => ({
  status: 'completed',
  output: 'done',
  usage,
  sessionId: 'p/c-1',
  ...over,
});

const plan: ChildPlan = {
  brief: { task_name: 'tax', message: 'Find the tax rate.' },
  preset: 'researcher',
  composition: {
    definition: { id: 'researcher', persona: 'p', tools: [], skills: {}, contextRendering: 'block' },
    revision: 'r1',
    selected: true,
  },
  contextRendering: 'block',
  contextMode: 'all',
  grant: { tools: ['search_notes'], scopes: ['tools.notes'] },
  limits: { maxTurns: 3, maxTokens: 1000, maxCostUsd: 0.002 },
  reservation: { tokens: 1000, costMicroUsd: 2000 },
};
const parent = { sessionId: 'p', rootId: 'root', depth: 0, tenant: 'acme', model: 'gpt-4.1-mini' };

describe('R2.4 R2.7 a child’s input', () => {
  it('R2.4 R2.7 origin names the parent, the invocation, the grant and the composition; the model follows the role', () => {
    const input = childInput(plan, plan.brief, 2, undefined, parent, undefined);
    expect(input).toMatchObject({
      task: '## Your task\nFind the tax rate.',
      preset: 'researcher',
      limits: plan.limits,
      scopes: ['tools.notes'],
      tenant: 'acme',
      origin: {
        parentId: 'p',
        rootId: 'root',
        depth: 1,
        taskName: 'tax',
        invocation: 2,
        allowedTools: ['search_notes'],
        contextMode: 'all',
        preset: plan.composition,
      },
    });
    // No role: the parent's exact model. A role: its preset's, unless the brief names one.
    expect(input.model).toBe('gpt-4.1-mini');
    expect(
      childInput(plan, { ...plan.brief, role: 'researcher' }, 2, undefined, parent, undefined).model,
    ).toBeUndefined();
    const followup = childInput(
      { ...plan, restore: { from: 'p/tax-1', events: [] } },
      plan.brief,
      3,
      undefined,
      parent,
      undefined,
    );
    expect(followup.restore).toEqual({ kind: 'followup', events: [] });
  });
});

describe('R2.8 R2.9 how a child’s end reads to its parent', () => {
  it('R2.8 a completed child: its output, checked against return_shape when given', () => {
    expect(endOfResult(ended({}), undefined)).toEqual({
      status: 'completed',
      output: 'done',
      summary: 'done',
      spent: usage,
    });
    const shape = { type: 'object', properties: { rate: { type: 'number' } }, required: ['rate'] };
    const read = (output: string) => endOfResult(ended({ output }), checkReturnShape(output, shape));
    expect(read('{"rate": 8}')).toMatchObject({
      status: 'completed',
      output: { rate: 8 },
    });
    const mismatch = read('{"rate": "eight"}');
    expect(mismatch.status).toBe('failed');
    expect(mismatch.error).toMatch(/^the output does not match return_shape: rate: /);
  });

  it('R2.9 a limit-reached child is an error for its brief, keeping its best output and its spend', () => {
    expect(endOfResult(ended({ status: 'limit_reached', output: 'draft', limit: 'maxTurns' }), undefined)).toEqual({
      status: 'limit_reached',
      output: 'draft',
      summary: 'draft',
      error: 'the child ended limit_reached (maxTurns); its output is its best so far',
      spent: usage,
    });
  });
});

describe('R2.6 R2.13 settling a child’s reservation', () => {
  const budget = {
    maxTokens: 5000,
    maxCostMicroUsd: 10_000,
    used: { tokens: 500, costMicroUsd: 700 },
    reserved: { tokens: 3000, costMicroUsd: 5000 },
  };

  it('R2.6 releases the reservation and charges what the child reported', () => {
    expect(
      settleReservation(budget, plan.reservation, { inputTokens: 100, outputTokens: 20, costMicroUsd: 140 }),
    ).toEqual({
      reserved: { tokens: 2000, costMicroUsd: 3000 },
      charge: { inputTokens: 100, outputTokens: 20, costMicroUsd: 140 },
    });
  });

  it('R2.6 a child that ended without reporting is charged its whole reservation', () => {
    expect(settleReservation(budget, plan.reservation, null).charge).toEqual({
      inputTokens: 1000,
      outputTokens: 0,
      costMicroUsd: 2000,
    });
  });

  it('R2.13 property: the charge never exceeds the reservation, and used + reserved never grows', () => {
    fc.assert(
      fc.property(
        fc.option(fc.record({ inputTokens: fc.nat(1e6), outputTokens: fc.nat(1e6), costMicroUsd: fc.nat(1e7) }), {
          nil: null,
        }),
        (spent) => {
          const { reserved, charge } = settleReservation(budget, plan.reservation, spent);
          expect(charge.inputTokens + charge.outputTokens).toBeLessThanOrEqual(plan.reservation.tokens);
          expect(charge.costMicroUsd).toBeLessThanOrEqual(plan.reservation.costMicroUsd);
          expect(budget.used.tokens + charge.inputTokens + charge.outputTokens + reserved.tokens).toBeLessThanOrEqual(
            budget.used.tokens + budget.reserved.tokens,
          );
          expect(budget.used.costMicroUsd + charge.costMicroUsd + reserved.costMicroUsd).toBeLessThanOrEqual(
            budget.used.costMicroUsd + budget.reserved.costMicroUsd,
          );
        },
      ),
    );
  });
});
