import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { nextStep } from '../src/rules/agent-loop.js';
import { applyEnv, readEnv } from '../src/config/load.js';
import { parseConfig } from '../src/config/schema.js';
import { ConfigError, TemporalUnreachableError } from '../src/contract/errors.js';
import { exhaustedLimit, remaining, resolveLimits, synthesisTrigger } from '../src/rules/budget.js';
import type { Usage } from '../src/contract/run.js';
import { type SessionEvent } from '../src/contract/session.js';
import { toChatMessages } from '../src/contract/dialogue.js';
import { addModelCall, callCostMicroUsd, callSpend, modelPrice, ZERO_USAGE } from '../src/rules/usage.js';

const at = '2026-01-01T00:00:00.000Z';
const price = modelPrice({ inputPerMTokUsd: 1, outputPerMTokUsd: 2 });

describe('R1.3 cost in integer micro-USD', () => {
  it('R1.3 one call costs tokens x price, rounded up once', () => {
    expect(callCostMicroUsd({ inputTokens: 100, outputTokens: 20 }, price)).toBe(140);
    expect(
      callCostMicroUsd(
        { inputTokens: 1, outputTokens: 0 },
        modelPrice({ inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 }),
      ),
    ).toBe(1);
    expect(callCostMicroUsd({ inputTokens: 0, outputTokens: 0 }, price)).toBe(0);
  });

  it('R1.3 sums never drift: the total is the exact sum of integer call costs', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ inputTokens: fc.nat(200_000), outputTokens: fc.nat(50_000) }), { maxLength: 200 }),
        (calls) => {
          const usage = calls.reduce<Usage>((u, c) => addModelCall(u, callSpend(c, price)), ZERO_USAGE);
          expect(Number.isInteger(usage.costMicroUsd)).toBe(true);
          expect(usage.costMicroUsd).toBe(calls.reduce((sum, c) => sum + callCostMicroUsd(c, price), 0));
          expect(usage.totalTokens).toBe(usage.inputTokens + usage.outputTokens);
        },
      ),
    );
  });
});

describe('R1.4 limits arithmetic', () => {
  const usage = (over: Partial<Usage>): Usage => ({ ...ZERO_USAGE, ...over });

  it('R1.4 a run limit overrides the default; the deadline is the earlier of the two', () => {
    const limits = resolveLimits(
      { maxTurns: 3, deadline: '2026-01-01T00:10:00Z' },
      { maxTurns: 20, maxTokens: 1000, maxCostUsd: 0.5, maxDurationSeconds: 60, synthesisReserve: { tokens: 100 } },
      Date.parse('2026-01-01T00:00:00Z'),
    );
    expect(limits).toEqual({
      maxTurns: 3,
      maxTokens: 1000,
      maxCostMicroUsd: 500_000,
      maxToolCalls: null,
      deadlineMs: Date.parse('2026-01-01T00:01:00Z'),
      synthesis: true,
      reserveTokens: 100,
      reserveCostMicroUsd: 0,
    });
  });

  it('R1.4 exhausted limits and synthesis triggers', () => {
    const limits = resolveLimits({ maxTurns: 5, maxTokens: 1000, synthesisReserve: { tokens: 200 } }, {}, 0);
    expect(exhaustedLimit(remaining(limits, usage({ modelCalls: 5 }), 0))).toBe('maxTurns');
    expect(exhaustedLimit(remaining(limits, usage({ totalTokens: 1200 }), 0))).toBe('maxTokens');
    expect(exhaustedLimit(remaining(limits, usage({ totalTokens: 999 }), 0))).toBeNull();
    expect(synthesisTrigger(limits, remaining(limits, usage({ modelCalls: 4 }), 0))).toBe('maxTurns');
    expect(synthesisTrigger(limits, remaining(limits, usage({ totalTokens: 800 }), 0))).toBe('maxTokens');
    expect(synthesisTrigger(limits, remaining(limits, usage({ totalTokens: 799 }), 0))).toBeNull();
    const off = resolveLimits({ maxTurns: 5, synthesisReserve: false }, {}, 0);
    expect(synthesisTrigger(off, remaining(off, usage({ modelCalls: 4 }), 0))).toBeNull();
  });

  it('R1.4 nextStep never offers tools on a synthesis call and never runs tools a synthesis call asked for', () => {
    const limits = resolveLimits({ maxTurns: 2, synthesisReserve: {} }, {}, 0);
    const header: SessionEvent[] = [{ type: 'message/user', at, content: 'go' }];
    expect(nextStep({ events: header, limits, usage: usage({ modelCalls: 1 }), nowMs: 0, mode: 'task' })).toEqual({
      type: 'call_model',
      synthesisFor: 'maxTurns',
      offerTools: false,
    });
    const afterSynthesis: SessionEvent[] = [
      ...header,
      {
        type: 'message/assistant',
        at,
        content: 'x',
        toolCalls: [{ id: 'a', name: 'calculate', arguments: '{}' }],
        synthesisFor: 'maxTurns',
      },
    ];
    expect(
      nextStep({ events: afterSynthesis, limits, usage: usage({ modelCalls: 2 }), nowMs: 0, mode: 'task' }),
    ).toEqual({
      type: 'limit_reached',
      limit: 'maxTurns',
      output: 'x',
    });
  });

  it('R1.4 tool calls beyond maxToolCalls are refused, or end the run when synthesis is off', () => {
    const calls = [1, 2, 3].map((i) => ({ id: `c${i}`, name: 'calculate', arguments: '{}' }));
    const events: SessionEvent[] = [
      { type: 'message/user', at, content: 'go' },
      { type: 'message/assistant', at, content: null, toolCalls: calls },
    ];
    const on = resolveLimits({ maxToolCalls: 2, synthesisReserve: {} }, {}, 0);
    expect(nextStep({ events, limits: on, usage: ZERO_USAGE, nowMs: 0, mode: 'task' })).toEqual({
      type: 'run_tools',
      calls: calls.slice(0, 2),
      refused: calls.slice(2),
    });
    const off = resolveLimits({ maxToolCalls: 2, synthesisReserve: false }, {}, 0);
    expect(nextStep({ events, limits: off, usage: ZERO_USAGE, nowMs: 0, mode: 'task' })).toMatchObject({
      type: 'limit_reached',
      limit: 'maxToolCalls',
    });
  });
});

describe('R1.5 session rendering', () => {
  it('R1.5 the effective dialogue becomes Chat Completions messages in order', () => {
    const events: SessionEvent[] = [
      { type: 'session/header', at, version: 1, sessionId: 's', parentId: null, depth: 0, preset: 'p', model: 'm' },
      { type: 'message/user', at, content: 'hi' },
      { type: 'message/assistant', at, content: null, toolCalls: [{ id: 't1', name: 'calculate', arguments: '{}' }] },
      { type: 'tool/result', at, toolCallId: 't1', name: 'calculate', content: '2', isError: false },
      { type: 'message/assistant', at, content: 'two', toolCalls: [] },
      { type: 'run/ended', at, status: 'completed', output: 'two' },
    ];
    expect(toChatMessages(events, 'be brief')).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 't1', type: 'function', function: { name: 'calculate', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 't1', content: '2' },
      { role: 'assistant', content: 'two' },
    ]);
  });
});

describe('§6 configuration', () => {
  it('§6 {} is a valid config with working defaults', () => {
    const config = parseConfig({});
    expect(config.model).toBe('gpt-4.1-mini');
    expect(config.presets.map((p) => p.id)).toEqual(['assistant']);
    expect(config.delegation).toMatchObject({ enabled: false, maxDepth: 1, maxChildrenPerRun: 8 });
  });

  it('§6 every problem is one line naming its field', () => {
    const err = (() => {
      try {
        parseConfig({ limits: { maxTurns: 'many' }, presets: [{ id: 'a' }, { id: 'a' }], defaultPreset: 'zzz' });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.problems).toEqual(['limits.maxTurns: Invalid input: expected number, received string']);
    expect(() => parseConfig({ presets: [{ id: 'a' }, { id: 'a' }], defaultPreset: 'zzz' })).toThrow(
      /presets\.1\.id: duplicate preset id "a"[\s\S]*defaultPreset: preset "zzz" is not defined/,
    );
  });

  it('§6 environment overrides are checked: a model without a price, a bad flag', () => {
    expect(() => applyEnv(parseConfig({}), { model: 'mystery', delegationEnabled: undefined })).toThrow(
      /model: no price for "mystery"; add it under prices/,
    );
    expect(() => readEnv({ AGENT_DELEGATION_ENABLED: 'yes' })).toThrow(
      /AGENT_DELEGATION_ENABLED: must be "true" or "false"/,
    );
    expect(readEnv({ AGENT_DELEGATION_ENABLED: 'true' }).delegationEnabled).toBe(true);
    expect(readEnv({})).toMatchObject({
      taskQueue: 'deputy',
      childTaskQueue: 'deputy-background',
      temporalAddress: 'localhost:7233',
    });
  });
});

describe('74.4 errors a person reads', () => {
  it('74.4 problems from the environment and a config file are one error naming both, in the order found', () => {
    expect(ConfigError.gathered([])).toBeUndefined();
    const one = new ConfigError(['A: wrong'], 'environment');
    expect(ConfigError.gathered([one])!.message).toBe('invalid configuration (environment):\n  - A: wrong');
    const all = ConfigError.gathered([
      new ConfigError(['cannot parse: x'], 'deputy.config.yaml'),
      one,
      new ConfigError(['B: missing', 'C: short'], 'environment'),
    ])!;
    expect(all.source).toBe('deputy.config.yaml and environment');
    expect(all.problems).toEqual(['cannot parse: x', 'A: wrong', 'B: missing', 'C: short']);
  });

  it('74.9 an unreachable Temporal names npm run ui only where the caller says there is one', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    const bare = new TemporalUnreachableError('db:7233', refused);
    expect(bare.message).toMatch(
      /^no Temporal server answers at db:7233 \(.+\): start one there, or set TEMPORAL_ADDRESS to one that runs$/,
    );
    const hinted = new TemporalUnreachableError('db:7233', refused, 'npm run ui keeps one up');
    expect(hinted.message).toMatch(/to one that runs \(npm run ui keeps one up\)$/);
  });
});
