/**
 * The docs work a budget through by hand (docs/delegation.md, "Budgets: a worked example"); this computes the same
 * example with the code's own rules and holds the page's figures and refusal to them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import {
  asLimits,
  available,
  budgetOf,
  deriveChildLimits,
  reservationFor,
  reserve,
  resolveLimits,
  type Amount,
} from '../../src/rules/budget.js';
import { ZERO_USAGE } from '../../src/rules/usage.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

const page = readFileSync(join(PROJECT_ROOT, 'docs', 'delegation.md'), 'utf8');
const example = /## Budgets: a worked example([\s\S]*?)\nEach child keeps/.exec(page)![1]!.replace(/\s+/g, ' ');

describe('R2.5 R2.6 the worked budget example of the docs is what the code computes', () => {
  // The parent of the example, with the config's default final-synthesis reserve.
  const config = parseConfig({ model: 'm', prices: { m: { inputPerMTokUsd: 1, outputPerMTokUsd: 1 } } });
  const limits = resolveLimits({ maxCostUsd: 0.1, maxTokens: 100_000 }, config.limits, 0);
  const usage = { ...ZERO_USAGE, totalTokens: 8000, inputTokens: 8000, costMicroUsd: 10_000 };
  const keep: Amount = { tokens: limits.reserveTokens, costMicroUsd: limits.reserveCostMicroUsd };
  const none: Amount = { tokens: 0, costMicroUsd: 0 };
  const childDefaults = { maxCostUsd: 0.05, maxTokens: 40_000 };
  const child = (maxCostUsd?: number) =>
    deriveChildLimits({
      parentLimits: limits,
      parentUsage: usage,
      reserved: none,
      nowMs: 0,
      requested: maxCostUsd === undefined ? undefined : { maxCostUsd },
      defaults: childDefaults,
      keep,
    });

  it('R2.5 R2.6 what is free, each child’s limits, and the reservation that fits, as the table shows them', () => {
    expect(example).toContain('$0.01 and 2,000 tokens');
    expect([limits.reserveCostMicroUsd, limits.reserveTokens]).toEqual([10_000, 2000]);
    const free = available(budgetOf(limits, usage, keep));
    expect(free).toEqual({ costMicroUsd: 80_000, tokens: 90_000 });
    expect(example).toContain('| parent free (max − used − reserved − kept for its final answer) | $0.080 | 90,000 |');
    expect(asLimits(child(0.03))).toMatchObject({ maxCostUsd: 0.03, maxTokens: 40_000 });
    expect(asLimits(child())).toMatchObject({ maxCostUsd: 0.05, maxTokens: 40_000 });
    const booked = reserve(budgetOf(limits, usage, none), [child(0.03), child()].map(reservationFor), keep);
    expect(booked.ok).toBe(true);
    expect(example).toContain('| reserved, all or nothing | $0.080 ≤ $0.080 ✓ | 80,000 ≤ 90,000 ✓ |');
  });

  it('R2.6 a brief that does not fit is refused in the words the page quotes, and nothing is reserved', () => {
    const refused = reserve(budgetOf(limits, usage, none), [child(0.03), child(0.07)].map(reservationFor), keep);
    expect(refused.ok).toBe(false);
    const words = `${(refused as { error: string }).error}; nothing was spawned`;
    expect(words).toBe(
      "the reservation does not fit: cost: the children need $0.100000 but only $0.080000 is left (max $0.100000, used $0.010000, reserved $0.000000, kept for this run's final answer $0.010000); ask for smaller limits or fewer children; nothing was spawned",
    );
    expect(example).toContain(`\`${words}\``);
  });
});
