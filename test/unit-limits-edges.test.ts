/**
 * R1.4 R1.6 a run's limits at their edges: a request within the config's ceilings, the deadline the earlier of two,
 * a reserve switched off; which limit ends a run and which starts its synthesis, exactly at the boundary; the next
 * step after a final answer; and text sizes in UTF-8 where a surrogate pair or a 3-byte character meets the cut.
 */
import { describe, expect, it } from 'vitest';
import type { Usage } from '../src/contract/run.js';
import { nextStep } from '../src/rules/agent-loop.js';
import { exhaustedLimit, remaining, resolveLimits, synthesisTrigger } from '../src/rules/budget.js';
import { cutText, jsonFits, utf8Bytes, wasCut } from '../src/rules/payloads.js';
import { ZERO_USAGE } from '../src/rules/usage.js';
import { answer, result, user } from './support/events.js';

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const used = (over: Partial<Usage>): Usage => ({ ...ZERO_USAGE, ...over });

describe('R1.4 a run’s limits resolved', () => {
  it('R1.4 each limit the lower of request and config; one the config leaves open is the request’s, or none', () => {
    const limits = resolveLimits(
      { maxTurns: 50, maxTokens: 100, maxCostUsd: 0.5, maxToolCalls: 2 },
      { maxTurns: 10, maxCostUsd: 0.2 },
      T0,
    );
    expect(limits).toMatchObject({
      maxTurns: 10,
      maxTokens: 100,
      maxCostMicroUsd: 200_000,
      maxToolCalls: 2,
      deadlineMs: null,
    });
    expect(resolveLimits(undefined, {}, T0)).toMatchObject({
      maxTurns: null,
      maxTokens: null,
      maxCostMicroUsd: null,
      maxToolCalls: null,
      deadlineMs: null,
      synthesis: true,
      reserveTokens: 0,
      reserveCostMicroUsd: 0,
    });
  });

  it('R1.4 the deadline is the earlier of the requested one and the config’s duration from the start', () => {
    const soon = '2026-12-01T00:00:30.000Z';
    expect(resolveLimits({ deadline: soon }, { maxDurationSeconds: 60 }, T0).deadlineMs).toBe(T0 + 30_000);
    expect(resolveLimits({ deadline: '2026-12-02T00:00:00.000Z' }, { maxDurationSeconds: 60 }, T0).deadlineMs).toBe(
      T0 + 60_000,
    );
    expect(resolveLimits({ deadline: soon }, {}, T0).deadlineMs).toBe(T0 + 30_000);
  });

  it('R1.6 a reserve from the request, else the config; false switches synthesis off with nothing held', () => {
    const reserve = { tokens: 300, costUsd: 0.001 };
    expect(resolveLimits({ synthesisReserve: reserve }, {}, T0)).toMatchObject({
      synthesis: true,
      reserveTokens: 300,
      reserveCostMicroUsd: 1000,
    });
    expect(resolveLimits(undefined, { synthesisReserve: reserve }, T0)).toMatchObject({ reserveTokens: 300 });
    expect(resolveLimits({ synthesisReserve: false }, { synthesisReserve: reserve }, T0)).toMatchObject({
      synthesis: false,
      reserveTokens: 0,
      reserveCostMicroUsd: 0,
    });
  });
});

describe('R1.4 R1.6 which limit ends a run, and which starts its synthesis', () => {
  const limits = resolveLimits(
    {
      maxTurns: 5,
      maxTokens: 1000,
      maxCostUsd: 0.01,
      maxToolCalls: 3,
      synthesisReserve: { tokens: 100, costUsd: 0.001 },
    },
    { maxDurationSeconds: 60 },
    T0,
  );
  const at = (usage: Partial<Usage>, nowMs = T0) => remaining(limits, used(usage), nowMs);

  it('R1.4 each limit ends the run when nothing of it is left, and not a unit before', () => {
    expect(exhaustedLimit(at({}, T0 + 60_000))).toBe('deadline');
    expect(exhaustedLimit(at({}, T0 + 59_999))).toBeNull();
    expect(exhaustedLimit(at({ modelCalls: 5 }))).toBe('maxTurns');
    expect(exhaustedLimit(at({ totalTokens: 1000 }))).toBe('maxTokens');
    expect(exhaustedLimit(at({ costMicroUsd: 10_000 }))).toBe('maxCostUsd');
    expect(exhaustedLimit(at({ costMicroUsd: 9_999 }))).toBeNull();
    expect(exhaustedLimit(at({ toolCalls: 3 }))).toBeNull();
  });

  it('R1.6 synthesis starts on the last turn, with tool calls used up, or at the reserve, not before', () => {
    expect(synthesisTrigger(limits, at({}))).toBeNull();
    expect(synthesisTrigger(limits, at({ modelCalls: 4 }))).toBe('maxTurns');
    expect(synthesisTrigger(limits, at({ toolCalls: 3 }))).toBe('maxToolCalls');
    expect(synthesisTrigger(limits, at({ toolCalls: 2 }))).toBeNull();
    expect(synthesisTrigger(limits, at({ totalTokens: 900 }))).toBe('maxTokens');
    expect(synthesisTrigger(limits, at({ totalTokens: 899 }))).toBeNull();
    expect(synthesisTrigger(limits, at({ costMicroUsd: 9_000 }))).toBe('maxCostUsd');
    expect(synthesisTrigger(limits, at({ costMicroUsd: 8_999 }))).toBeNull();
    const off = { ...limits, synthesis: false };
    expect(synthesisTrigger(off, at({ modelCalls: 4 }))).toBeNull();
  });

  it('R1.4 after a final answer a task ends with it and a conversation waits; a spent limit ends the run first', () => {
    const done = [user('go'), answer('the answer')];
    const base = { events: done, limits, usage: used({}), nowMs: T0 };
    expect(nextStep({ ...base, mode: 'task' })).toEqual({ type: 'final', output: 'the answer' });
    expect(nextStep({ ...base, mode: 'conversation' })).toEqual({ type: 'wait_for_user' });
    const asked = [user('go')];
    expect(nextStep({ ...base, events: asked, mode: 'task', usage: used({ modelCalls: 5 }) })).toMatchObject({
      type: 'limit_reached',
      limit: 'maxTurns',
    });
    expect(nextStep({ ...base, events: asked, mode: 'task' })).toEqual({
      type: 'call_model',
      synthesisFor: null,
      offerTools: true,
    });
    expect(nextStep({ ...base, events: asked, mode: 'task', usage: used({ toolCalls: 3 }) })).toEqual({
      type: 'call_model',
      synthesisFor: 'maxToolCalls',
      offerTools: false,
    });
    const noReserve = { ...limits, synthesis: false };
    expect(
      nextStep({ ...base, limits: noReserve, events: asked, mode: 'task', usage: used({ toolCalls: 3 }) }),
    ).toEqual({ type: 'call_model', synthesisFor: null, offerTools: false });
  });

  it('R1.6 calls past the tool-call limit: refused for synthesis, or the run ends when it has none', () => {
    const calls = [
      user('go'),
      answer(null, [
        ['a', 'calculate'],
        ['b', 'calculate'],
      ]),
    ];
    const base = { events: calls, usage: used({ toolCalls: 2 }), nowMs: T0, mode: 'task' as const };
    expect(nextStep({ ...base, limits })).toMatchObject({
      type: 'run_tools',
      calls: [{ id: 'a' }],
      refused: [{ id: 'b' }],
    });
    expect(nextStep({ ...base, limits: { ...limits, synthesis: false } })).toMatchObject({
      type: 'limit_reached',
      limit: 'maxToolCalls',
    });
    const answered = [...calls, result('a', 'calculate', '1'), result('b', 'calculate', '2')];
    expect(nextStep({ ...base, events: answered, limits }).type).toBe('call_model');
  });
});

describe('R1.6 text sizes in UTF-8', () => {
  it('R1.6 one, two, three and four bytes a character; a lone surrogate counts three', () => {
    expect(utf8Bytes('a')).toBe(1);
    expect(utf8Bytes('é')).toBe(2);
    expect(utf8Bytes('€')).toBe(3);
    expect(utf8Bytes('😀')).toBe(4);
    expect(utf8Bytes('\ud83d')).toBe(3);
    expect(utf8Bytes('\ud83da')).toBe(4);
    expect(utf8Bytes('\ude00')).toBe(3);
    expect(utf8Bytes('a😀b')).toBe(6);
  });

  it('R1.6 a cut never splits a character pair and ends with its marker; what fits is left whole', () => {
    const emoji = '😀'.repeat(40);
    const cut = cutText(emoji, 100);
    expect(wasCut(cut)).toBe(true);
    expect(utf8Bytes(cut)).toBeLessThanOrEqual(100);
    const kept = cut.slice(0, cut.indexOf('\n'));
    expect(kept).toBe('😀'.repeat(kept.length / 2));
    expect(kept.length).toBeGreaterThan(0);
    expect(cutText('€'.repeat(33), 99)).toBe('€'.repeat(33));
    expect(wasCut(cutText('€'.repeat(34), 99))).toBe(true);
    expect(cutText('abc', 3)).toBe('abc');
    expect(wasCut('x [truncated: 3 KB → 1 KB]')).toBe(true);
    expect(wasCut('[truncated: 3 KB → 1 KB] later')).toBe(false);
  });

  it('R1.6 a value fits as JSON when its bytes do, counted where the characters cannot tell', () => {
    expect(jsonFits('€€', 8)).toBe(true);
    expect(jsonFits('€€€', 8)).toBe(false);
    expect(jsonFits('abcdef', 8)).toBe(true);
    expect(jsonFits('abcdefg', 8)).toBe(false);
    expect(jsonFits(undefined, 0)).toBe(true);
  });
});
