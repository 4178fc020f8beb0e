/**
 * The budget's arithmetic at its edges and the exact words of its refusals (R2.6, R2.13): what the parent's model
 * and the person read when a reservation or a call does not fit. Properties over random budgets are in
 * unit-budget.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  asLimits,
  available,
  deriveChildLimits,
  overLimits,
  reserve,
  withinBudget,
  type Budget,
} from '../src/rules/budget.js';
import { fitCall, MIN_COMPLETION_TOKENS, upperBoundTokens, worstCase } from '../src/rules/call-budget.js';
import { modelPrice, ZERO_USAGE } from '../src/rules/usage.js';

const budget = (over: Partial<Budget> = {}): Budget => ({
  maxTokens: 1000,
  maxCostMicroUsd: 5000,
  used: { tokens: 100, costMicroUsd: 1000 },
  reserved: { tokens: 200, costMicroUsd: 1000 },
  ...over,
});
const price = modelPrice({ inputPerMTokUsd: 1, outputPerMTokUsd: 2 }); // 1 µUSD an input token, 2 an output token

describe('R2.6 reservations', () => {
  it('R2.6 what is free, and the invariant, exactly at the edge', () => {
    expect(available(budget())).toEqual({ tokens: 700, costMicroUsd: 3000 });
    expect(available(budget({ maxTokens: null, maxCostMicroUsd: null }))).toEqual({ tokens: null, costMicroUsd: null });
    expect(available(budget({ maxTokens: 250 }))).toEqual({ tokens: 0, costMicroUsd: 3000 });
    expect(withinBudget(budget({ maxTokens: 300, maxCostMicroUsd: 2000 }))).toBe(true);
    expect(withinBudget(budget({ maxTokens: 299 }))).toBe(false);
    expect(withinBudget(budget({ maxCostMicroUsd: 1999 }))).toBe(false);
    expect(withinBudget(budget({ maxTokens: null, maxCostMicroUsd: null }))).toBe(true);
  });

  it('R2.6 a reservation that fits exactly is taken; one past it is refused with every number', () => {
    const exact = reserve(budget(), [
      { tokens: 300, costMicroUsd: 1000 },
      { tokens: 400, costMicroUsd: 2000 },
    ]);
    expect(exact).toEqual({ ok: true, budget: budget({ reserved: { tokens: 900, costMicroUsd: 4000 } }) });
    expect(reserve(budget(), [{ tokens: 701, costMicroUsd: 3001 }])).toEqual({
      ok: false,
      error:
        'the reservation does not fit: cost: the children need $0.003001 but only $0.003000 is left (max $0.005000, used $0.001000, reserved $0.001000); tokens: the children need 701 but only 700 are left (max 1000, used 100, reserved 200); ask for smaller limits or fewer children',
    });
    expect(reserve(budget(), [{ tokens: 600, costMicroUsd: 2500 }], { tokens: 200, costMicroUsd: 600 })).toEqual({
      ok: false,
      error:
        "the reservation does not fit: cost: the children need $0.002500 but only $0.002400 is left (max $0.005000, used $0.001000, reserved $0.001000, kept for this run's final answer $0.000600); tokens: the children need 600 but only 500 are left (max 1000, used 100, reserved 200, kept for this run's final answer 200); ask for smaller limits or fewer children",
    });
    expect(reserve(budget({ maxTokens: null, maxCostMicroUsd: null }), [{ tokens: 1e9, costMicroUsd: 1e9 }]).ok).toBe(
      true,
    );
  });

  it("R2.6 a child's limits: what it asks, else the defaults, capped by what the parent has left", () => {
    const parentLimits = {
      maxTurns: 10,
      maxTokens: 1000,
      maxCostMicroUsd: 5000,
      maxToolCalls: 8,
      deadlineMs: Date.parse('2026-12-01T12:00:00.000Z'),
      synthesis: false,
      reserveTokens: 0,
      reserveCostMicroUsd: 0,
    };
    const parentUsage = { ...ZERO_USAGE, totalTokens: 100, costMicroUsd: 1000, turns: 2, toolCalls: 3 };
    const derive = (requested: Record<string, unknown> | undefined, defaults = {}) =>
      asLimits(
        deriveChildLimits({
          parentLimits,
          parentUsage,
          reserved: { tokens: 200, costMicroUsd: 1000 },
          nowMs: Date.parse('2026-12-01T11:00:00.000Z'),
          requested,
          defaults,
        }),
      );
    expect(
      derive({ maxTokens: 50, maxCostUsd: 0.001, maxTurns: 2, maxToolCalls: 1, deadline: '2026-12-01T11:30:00.000Z' }),
    ).toEqual({
      maxTokens: 50,
      maxCostUsd: 0.001,
      maxTurns: 2,
      maxToolCalls: 1,
      deadline: '2026-12-01T11:30:00.000Z',
    });
    expect(derive({ maxTokens: 5000, maxCostUsd: 1, deadline: '2027-01-01T00:00:00.000Z' })).toMatchObject({
      maxTokens: 700,
      maxCostUsd: 0.003,
      deadline: '2026-12-01T12:00:00.000Z',
    });
    expect(derive(undefined, { maxTokens: 40, maxCostUsd: 0.0002 })).toMatchObject({
      maxTokens: 40,
      maxCostUsd: 0.0002,
    });
    const kept = deriveChildLimits({
      parentLimits,
      parentUsage,
      reserved: { tokens: 200, costMicroUsd: 1000 },
      nowMs: 0,
      requested: { maxTokens: 5000, maxCostUsd: 1 },
      defaults: {},
      keep: { tokens: 300, costMicroUsd: 500 },
    });
    expect(asLimits(kept)).toMatchObject({ maxTokens: 400, maxCostUsd: 0.0025 });
  });
});

describe('R2.13 a call fits, or is not made', () => {
  it('R2.13 the largest answer that keeps input + answer within tokens and cost; below 16 tokens, not made', () => {
    expect(fitCall(100, { tokens: 500, costMicroUsd: null, price })).toEqual({ ok: true, maxCompletionTokens: 400 });
    expect(fitCall(100, { tokens: null, costMicroUsd: 900, price })).toEqual({ ok: true, maxCompletionTokens: 400 });
    expect(fitCall(100, { tokens: 500, costMicroUsd: 900, price, maxCompletionTokens: 64 })).toEqual({
      ok: true,
      maxCompletionTokens: 64,
    });
    expect(fitCall(100, { tokens: null, costMicroUsd: null, price })).toEqual({ ok: true, maxCompletionTokens: null });
    expect(fitCall(100, { tokens: 100 + MIN_COMPLETION_TOKENS, costMicroUsd: null, price })).toEqual({
      ok: true,
      maxCompletionTokens: 16,
    });
    expect(fitCall(100, { tokens: 115, costMicroUsd: null, price })).toEqual({
      ok: false,
      limit: 'maxTokens',
      message: 'the call needs 100 input tokens and at least 16 for its answer, but only 115 tokens are left',
    });
    expect(fitCall(100, { tokens: 1000, costMicroUsd: 131, price })).toEqual({
      ok: false,
      limit: 'maxCostUsd',
      message: "the call's input alone costs $0.000100 and only $0.000131 is left for it and its answer",
    });
    // With free output the cost caps nothing while the input fits, and refuses once it does not.
    const freeOutput = modelPrice({ inputPerMTokUsd: 1, outputPerMTokUsd: 0 });
    expect(fitCall(100, { tokens: null, costMicroUsd: 100, price: freeOutput })).toEqual({
      ok: true,
      maxCompletionTokens: null,
    });
    expect(fitCall(100, { tokens: null, costMicroUsd: 99, price: freeOutput })).toMatchObject({
      ok: false,
      limit: 'maxCostUsd',
    });
    expect(worstCase(100, 50, price)).toEqual({ tokens: 150, costMicroUsd: 200 });
  });

  it('R2.13 how far usage passed its limits, per amount; none inside them or without them', () => {
    const limits = { maxTokens: 100, maxCostMicroUsd: 50 };
    expect(overLimits({ totalTokens: 100, costMicroUsd: 50 }, limits)).toBeNull();
    expect(overLimits({ totalTokens: 101, costMicroUsd: 50 }, limits)).toEqual({ tokens: 1, costMicroUsd: 0 });
    expect(overLimits({ totalTokens: 90, costMicroUsd: 52 }, limits)).toEqual({ tokens: 0, costMicroUsd: 2 });
    expect(overLimits({ totalTokens: 1e6, costMicroUsd: 1e6 }, { maxTokens: null, maxCostMicroUsd: null })).toBeNull();
  });

  it('R2.13 the upper bound of an input without a tokenizer: bytes, with the widest margin, tools counted', () => {
    const message = { role: 'user', content: 'hello' };
    const bytes = 3 + 4 + Buffer.byteLength(JSON.stringify(message));
    expect(upperBoundTokens([message])).toBe(Math.ceil(bytes * 1.25) + 16);
    const tools = [{ name: 't', parameters: {} }];
    expect(upperBoundTokens([message], tools)).toBe(
      Math.ceil((bytes + Buffer.byteLength(JSON.stringify(tools))) * 1.25) + 16,
    );
    expect(upperBoundTokens([message], [])).toBe(upperBoundTokens([message]));
  });
});
