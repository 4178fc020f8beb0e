/**
 * The limits a caller outside the namespace (`deputy mcp`, the Nexus front door) may ask a run for: each no wider
 * than the config's, a duration turned into the run's deadline.
 */
import { z } from 'zod';
import type { DeputyConfig } from './schema.js';

/** The limits a caller may ask for; each is capped by the config's. */
export const CallerLimits = z.strictObject({
  maxTurns: z.number().int().positive().optional(),
  maxTokens: z.number().int().positive().optional(),
  maxCostUsd: z.number().positive().optional(),
  maxToolCalls: z.number().int().nonnegative().optional(),
  maxDurationSeconds: z.number().int().positive().optional(),
});
export type CallerLimits = z.infer<typeof CallerLimits>;

/** The caller's limits, each no wider than the config's: a caller only narrows. */
export function narrowLimits(config: DeputyConfig, asked: CallerLimits = {}) {
  const own = config.limits;
  const min = (a: number | undefined, b: number) => (a === undefined ? b : Math.min(a, b));
  const seconds = min(asked.maxDurationSeconds, own.maxDurationSeconds);
  return {
    maxTurns: min(asked.maxTurns, own.maxTurns),
    maxTokens: min(asked.maxTokens, own.maxTokens),
    maxCostUsd: min(asked.maxCostUsd, own.maxCostUsd),
    maxToolCalls: min(asked.maxToolCalls, own.maxToolCalls),
    deadline: new Date(Date.now() + seconds * 1000).toISOString(),
  };
}
