import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  asLimits,
  childReserve,
  reserveUncovered,
  available,
  debit,
  deriveChildLimits,
  release,
  reservationFor,
  reserve,
  resolveLimits,
  sum,
  withinBudget,
  ZERO_AMOUNT,
  type Amount,
  type Budget,
} from '../src/rules/budget.js';
import { checkCaps, narrowGrant } from '../src/rules/children.js';
import { parseInvocation } from '../src/contract/checks/contract-checks.js';
import { type DelegationSettings } from '../src/contract/delegation.js';
import { ZERO_USAGE } from '../src/rules/usage.js';

const SETTINGS: DelegationSettings = {
  enabled: true,
  maxDepth: 1,
  maxBriefsPerInvocation: 3,
  maxChildrenPerRun: 8,
  neverInherit: ['skill_manage'],
  childDefaults: {},
  childTaskQueue: 'bg',
};

describe('R2.5 deriveChildLimits', () => {
  it("R2.5 each limit is min(request or default, parent remaining); the deadline never passes the parent's", () => {
    const parentLimits = resolveLimits(
      { maxTurns: 10, maxTokens: 5000, maxCostUsd: 0.01, maxToolCalls: 4, deadline: '2026-01-01T01:00:00Z' },
      {},
      0,
    );
    const usage = {
      ...ZERO_USAGE,
      modelCalls: 3,
      totalTokens: 1000,
      inputTokens: 1000,
      costMicroUsd: 2000,
      toolCalls: 1,
    };
    const limits = deriveChildLimits({
      parentLimits,
      parentUsage: usage,
      reserved: { tokens: 500, costMicroUsd: 1000 },
      nowMs: 0,
      requested: { maxTurns: 20, maxTokens: 100, deadline: '2026-01-01T02:00:00Z' },
      defaults: { maxCostUsd: 0.5, maxToolCalls: 2 },
    });
    expect(asLimits(limits)).toEqual({
      maxTurns: 7, // min(20, 10 - 3)
      maxTokens: 100, // min(100, 5000 - 1000 - 500)
      maxCostUsd: 0.007, // min(0.5, 0.01 - 0.002 - 0.001)
      maxToolCalls: 2, // min(2, 4 - 1)
      deadline: '2026-01-01T01:00:00.000Z', // the parent's, not the later one asked for
    });
    expect(reservationFor(limits)).toEqual({ tokens: 100, costMicroUsd: 7000 });
  });

  it('R2.5 a parent without limits, asked for none, gives its child none: no limit is written as nothing', () => {
    const open = deriveChildLimits({
      parentLimits: resolveLimits({}, {}, 0),
      parentUsage: ZERO_USAGE,
      reserved: { tokens: 0, costMicroUsd: 0 },
      nowMs: 0,
      requested: undefined,
      defaults: {},
    });
    expect(open).toStrictEqual({});
    expect(reservationFor(open)).toEqual({ tokens: 0, costMicroUsd: 0 });
  });

  it('R2.5 a child’s limits go into its input in USD, and only the limits it has', () => {
    expect(asLimits({})).toStrictEqual({});
    expect(asLimits({ maxCostMicroUsd: 1500, synthesisReserve: false })).toStrictEqual({
      maxCostUsd: 0.0015,
      synthesisReserve: false,
    });
    const all = { maxTurns: 2, maxTokens: 900, maxToolCalls: 0, deadline: '2026-01-01T00:00:00.000Z' };
    expect(asLimits({ ...all, synthesisReserve: { tokens: 50, costMicroUsd: 7 } })).toStrictEqual({
      ...all,
      synthesisReserve: { tokens: 50, costUsd: 0.000007 },
    });
  });
});

describe('R2.17 a child’s synthesis reserve is sized to it', () => {
  const sizing = { fraction: 0.1, minTokens: 500, minCostUsd: 0.0005 };

  it('R2.17 a tenth of its limits, never below the floors; none when children get none', () => {
    const floor = { tokens: 500, costMicroUsd: 500 };
    expect(childReserve({ maxTokens: 40_000, maxCostMicroUsd: 50_000 }, sizing)).toEqual({
      tokens: 4000,
      costMicroUsd: 5000,
    });
    expect(childReserve({ maxTokens: 2000, maxCostMicroUsd: 3000 }, sizing)).toEqual(floor);
    expect(childReserve({}, sizing)).toEqual(floor);
    expect(childReserve({ maxTokens: 40_000 }, { ...sizing, fraction: 0 })).toEqual(floor);
    expect(childReserve({ maxTokens: 40_000 }, false)).toBe(false);
  });

  it('R2.17 a limit at or below its reserve is named, tokens first; one above it, or no reserve, is not', () => {
    const floor = { tokens: 500, costMicroUsd: 500 };
    expect(reserveUncovered({ maxTokens: 500 }, { tokens: 500, costMicroUsd: 0 })).toBe(
      'its limit of 500 tokens cannot cover its final-synthesis reserve of 500 tokens, so it would start with no tools: give it more, or lower delegation.childSynthesisReserve in the config',
    );
    expect(reserveUncovered({ maxTokens: 501, maxCostMicroUsd: 500 }, floor)).toMatch(
      /^its limit of \$0\.000500 cannot cover its final-synthesis reserve of \$0\.000500/,
    );
    expect(reserveUncovered({ maxTokens: 501, maxCostMicroUsd: 501 }, floor)).toBeUndefined();
    expect(reserveUncovered({ maxTokens: 1 }, false)).toBeUndefined();
    expect(reserveUncovered({}, floor)).toBeUndefined();
  });
});

describe('R2.6 reserve, release, debit', () => {
  const budget: Budget = {
    maxTokens: 1000,
    maxCostMicroUsd: 10_000,
    used: { tokens: 100, costMicroUsd: 1000 },
    reserved: ZERO_AMOUNT,
  };

  it('R2.6 all or nothing: a reservation that does not fit changes nothing', () => {
    const fits = reserve(budget, [
      { tokens: 400, costMicroUsd: 4000 },
      { tokens: 500, costMicroUsd: 5000 },
    ]);
    expect(fits).toEqual({ ok: true, budget: { ...budget, reserved: { tokens: 900, costMicroUsd: 9000 } } });
    const tooMuch = reserve(budget, [
      { tokens: 400, costMicroUsd: 4000 },
      { tokens: 501, costMicroUsd: 5000 },
    ]);
    expect(tooMuch.ok).toBe(false);
    expect(!tooMuch.ok && tooMuch.error).toContain('tokens: the children need 901 but only 900 are left');
  });

  it('R2.6 property: over random trees of budgets and outcomes, used + reserved ≤ max at every step and the tree never spends more than the root', () => {
    fc.assert(
      fc.property(
        fc.record({ maxTokens: fc.integer({ min: 1, max: 100_000 }), maxCost: fc.integer({ min: 1, max: 1_000_000 }) }),
        fc.array(fc.nat(1_000_000), { minLength: 200, maxLength: 200 }),
        ({ maxTokens, maxCost }, noise) => {
          let cursor = 0;
          const next = (bound: number) => (bound <= 0 ? 0 : noise[cursor++ % noise.length]! % (bound + 1));
          const steps: Budget[] = [];

          /** Simulates one run with these caps; returns what its whole subtree spent. */
          const simulate = (max: Amount, depth: number): Amount => {
            let b: Budget = {
              maxTokens: max.tokens,
              maxCostMicroUsd: max.costMicroUsd,
              used: ZERO_AMOUNT,
              reserved: ZERO_AMOUNT,
            };
            const check = () => {
              steps.push(b);
              expect(withinBudget(b), JSON.stringify(b)).toBe(true);
            };
            for (let turn = 0; turn < 4; turn++) {
              // Own spend: a model call that stays within what is available.
              const free = available(b);
              b = debit(b, {
                tokens: next(Math.min(free.tokens!, 500)),
                costMicroUsd: next(Math.min(free.costMicroUsd!, 5000)),
              });
              check();
              if (depth >= 2 || next(3) === 0) continue;
              // One or two invocations in the same turn (the model may call delegate twice): both reserve before
              // either settles, each for 1..3 children asking for random limits.
              const invocations: Amount[][] = [];
              for (let i = 0, n = 1 + next(1); i < n; i++) {
                const asks = Array.from({ length: 1 + next(2) }, () => ({
                  tokens: 1 + next(max.tokens),
                  costMicroUsd: 1 + next(max.costMicroUsd),
                }));
                const caps = asks.map((ask) => {
                  const left = available(b);
                  return {
                    tokens: Math.min(ask.tokens, left.tokens!),
                    costMicroUsd: Math.min(ask.costMicroUsd, left.costMicroUsd!),
                  };
                });
                const reserved = reserve(b, caps);
                if (!reserved.ok) {
                  expect(
                    sum(...caps).tokens > available(b).tokens! ||
                      sum(...caps).costMicroUsd > available(b).costMicroUsd!,
                  ).toBe(true);
                } else {
                  b = reserved.budget;
                  invocations.push(caps);
                }
                check();
              }
              for (const cap of invocations.flat()) {
                const spent = simulate(cap, depth + 1);
                expect(spent.tokens).toBeLessThanOrEqual(cap.tokens);
                expect(spent.costMicroUsd).toBeLessThanOrEqual(cap.costMicroUsd);
                b = debit(release(b, cap), spent);
                check();
              }
            }
            expect(b.reserved).toEqual(ZERO_AMOUNT);
            return b.used;
          };

          const total = simulate({ tokens: maxTokens, costMicroUsd: maxCost }, 0);
          expect(total.tokens).toBeLessThanOrEqual(maxTokens);
          expect(total.costMicroUsd).toBeLessThanOrEqual(maxCost);
          expect(steps.length).toBeGreaterThan(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('R2.2 R2.3 R2.7 invocation checks and narrowing', () => {
  it('R2.3 caps per invocation and per run', () => {
    const args = (n: number) => {
      const parsed = parseInvocation(
        JSON.stringify({ briefs: Array.from({ length: n }, (_, i) => ({ task_name: `t${i}`, message: 'm' })) }),
      );
      if (!parsed.ok) throw new Error(parsed.error);
      return parsed.args;
    };
    expect(checkCaps(args(3), SETTINGS, [], 0)).toBeNull();
    expect(checkCaps(args(2), { ...SETTINGS, maxBriefsPerInvocation: 1 }, [], 0)).toContain('at most 1 are allowed');
    expect(checkCaps(args(1), SETTINGS, [], 8)).toContain('8 of its 8 children');
    expect(checkCaps(args(1), SETTINGS, ['t0'], 1)).toContain('"t0" is already used');
    expect(
      parseInvocation('{"briefs": [{"task_name": "x", "message": "m"}], "return_shape": {"type": 12}}'),
    ).toMatchObject({ ok: false });
  });

  it('R2.7 property: a child never gets a tool or scope its parent lacks, nor delegate at max depth, nor a neverInherit tool', () => {
    const names = ['a', 'b', 'c', 'delegate', 'skill_manage'];
    fc.assert(
      fc.property(
        fc.subarray(names),
        fc.option(fc.subarray([...names, 'zzz']), { nil: undefined }),
        fc.subarray(names),
        fc.subarray(['s.a', 's.b', 's.c', 'run.delegate', 's.skill']),
        fc.integer({ min: 1, max: 3 }),
        (parentToolNames, allowed, presetTools, parentScopes, childDepth) => {
          const parentTools = parentToolNames.map((name) => ({
            name,
            description: '',
            parameters: {},
            scopes: [name === 'delegate' ? 'run.delegate' : name === 'skill_manage' ? 's.skill' : `s.${name}`],
          }));
          const settings = { ...SETTINGS, maxDepth: 2 };
          const result = narrowGrant({
            parentTools,
            parentScopes,
            allowedTools: allowed,
            presetTools,
            childDepth,
            settings,
          });
          if (allowed?.some((name) => !parentToolNames.includes(name))) {
            expect(result.ok).toBe(false);
            return;
          }
          expect(result.ok).toBe(true);
          if (!result.ok) return;
          for (const tool of result.toolGrant.tools) expect(parentToolNames).toContain(tool);
          for (const scope of result.toolGrant.scopes) expect(parentScopes).toContain(scope);
          expect(result.toolGrant.tools).not.toContain('skill_manage');
          if (childDepth >= settings.maxDepth) expect(result.toolGrant.tools).not.toContain('delegate');
        },
      ),
      { numRuns: 500 },
    );
  });
});
