/**
 * Limits arithmetic for one run: resolving what a caller asked for against the config's defaults, what is
 * left, which limit is exhausted, and when the synthesis reserve starts. Pure functions over plain data.
 */
import type { DefaultLimits } from '../contract/composition.js';
import type { LimitName, Limits, Remaining, ResolvedLimits, Usage } from '../contract/run.js';
import { usdToMicro } from './usage.js';

export type { DefaultLimits };

/** A run's requested limits within the config's: each no more than the config's, the deadline the earlier of the two. */
export function resolveLimits(requested: Limits | undefined, defaults: DefaultLimits, startMs: number): ResolvedLimits {
  const req = requested ?? {};
  const reserve = req.synthesisReserve ?? defaults.synthesisReserve ?? {};
  // The config's limits are the ceiling a caller may narrow: a request above one gets the config's.
  const within = (asked: number | undefined, ceiling: number | undefined) =>
    asked === undefined ? ceiling : ceiling === undefined ? asked : Math.min(asked, ceiling);
  const maxCostUsd = within(req.maxCostUsd, defaults.maxCostUsd);
  const deadlines = [
    req.deadline === undefined ? undefined : Date.parse(req.deadline),
    defaults.maxDurationSeconds === undefined ? undefined : startMs + defaults.maxDurationSeconds * 1000,
  ].filter((d): d is number => d !== undefined);
  return {
    maxTurns: within(req.maxTurns, defaults.maxTurns) ?? null,
    maxTokens: within(req.maxTokens, defaults.maxTokens) ?? null,
    maxCostMicroUsd: maxCostUsd === undefined ? null : usdToMicro(maxCostUsd),
    maxToolCalls: within(req.maxToolCalls, defaults.maxToolCalls) ?? null,
    deadlineMs: deadlines.length > 0 ? Math.min(...deadlines) : null,
    synthesis: reserve !== false,
    reserveTokens: reserve === false ? 0 : (reserve.tokens ?? 0),
    reserveCostMicroUsd: reserve === false ? 0 : usdToMicro(reserve.costUsd ?? 0),
  };
}

const left = (max: number | null, used: number): number | null => (max === null ? null : Math.max(0, max - used));

/** What is left of each limit after `usage`, at time `nowMs`. */
export function remaining(limits: ResolvedLimits, usage: Usage, nowMs: number): Remaining {
  return {
    turns: left(limits.maxTurns, usage.modelCalls),
    tokens: left(limits.maxTokens, usage.totalTokens),
    costMicroUsd: left(limits.maxCostMicroUsd, usage.costMicroUsd),
    toolCalls: left(limits.maxToolCalls, usage.toolCalls),
    deadlineMs: left(limits.deadlineMs, nowMs),
  };
}

/** The first limit with nothing left that forbids another model call, or `null`. */
export function exhaustedLimit(rem: Remaining): LimitName | null {
  if (rem.deadlineMs === 0) return 'deadline';
  if (rem.turns === 0) return 'maxTurns';
  if (rem.tokens === 0) return 'maxTokens';
  if (rem.costMicroUsd === 0) return 'maxCostUsd';
  return null;
}

/**
 * The limit that makes the next model call a synthesis call (no tools, final answer), or `null`.
 * Synthesis starts on the last allowed turn, once tool calls are used up, or once tokens or cost left are at or
 * below the reserve.
 */
export function synthesisTrigger(limits: ResolvedLimits, rem: Remaining): LimitName | null {
  if (!limits.synthesis) return null;
  if (rem.turns === 1) return 'maxTurns';
  if (rem.toolCalls === 0) return 'maxToolCalls';
  if (rem.tokens !== null && rem.tokens <= limits.reserveTokens) return 'maxTokens';
  if (rem.costMicroUsd !== null && rem.costMicroUsd <= limits.reserveCostMicroUsd) return 'maxCostUsd';
  return null;
}
