/**
 * A run's budget: its limits resolved from what its caller asked and the config's ceilings, what is left of them and
 * which is exhausted, what a child may spend, and the reservations that keep a parent's tree inside its own limits.
 * Tokens and cost are shared down the tree (reserved, then debited); turns and tool calls are per run. Cost is in
 * integer micro-USD inside, converted from and to USD only where limits enter or leave a run. Pure functions over
 * integers.
 */
import type { BriefLimits, ChildSynthesisReserve } from '../contract/delegation.js';
import type { DefaultLimits } from '../contract/composition.js';
import type { LimitName, Limits, Remaining, ResolvedLimits, Usage } from '../contract/run.js';
import { microToUsd, usdText, usdToMicro, type Spend } from './usage.js';

/** Tokens and integer micro-USD. */
export interface Amount {
  tokens: number;
  costMicroUsd: number;
}

/** A run's shared budget: caps (`null` = unlimited), what it has spent, and what its live children hold. */
export interface Budget {
  maxTokens: number | null;
  maxCostMicroUsd: number | null;
  used: Amount;
  reserved: Amount;
}

/** Nothing. */
export const ZERO_AMOUNT: Amount = Object.freeze({ tokens: 0, costMicroUsd: 0 });

/** A run's budget from its limits, usage and reservations. */
export function budgetOf(limits: ResolvedLimits, usage: Usage, reserved: Amount): Budget {
  return {
    maxTokens: limits.maxTokens,
    maxCostMicroUsd: limits.maxCostMicroUsd,
    used: { tokens: usage.totalTokens, costMicroUsd: usage.costMicroUsd },
    reserved,
  };
}

/** What is free to reserve: max − used − reserved (never negative; `null` = unlimited). */
export function available(budget: Budget): { tokens: number | null; costMicroUsd: number | null } {
  const free = (max: number | null, used: number, held: number) =>
    max === null ? null : Math.max(0, max - used - held);
  return {
    tokens: free(budget.maxTokens, budget.used.tokens, budget.reserved.tokens),
    costMicroUsd: free(budget.maxCostMicroUsd, budget.used.costMicroUsd, budget.reserved.costMicroUsd),
  };
}

/** The budget invariant: used + reserved ≤ max, for tokens and for cost. */
export function withinBudget(budget: Budget): boolean {
  const ok = (max: number | null, used: number, held: number) => max === null || used + held <= max;
  return (
    ok(budget.maxTokens, budget.used.tokens, budget.reserved.tokens) &&
    ok(budget.maxCostMicroUsd, budget.used.costMicroUsd, budget.reserved.costMicroUsd)
  );
}

/** The least of the values given, or `null` when none is. */
export const minOf = (...values: (number | null | undefined)[]): number | null => {
  const defined = values.filter((v): v is number => v !== null && v !== undefined);
  return defined.length > 0 ? Math.min(...defined) : null;
};

/**
 * A child's limits as its parent plans them, cost in integer micro-USD like every amount of a budget; its input
 * carries them in USD (`asLimits`, the one conversion on the way out).
 */
export interface ChildLimits {
  maxTurns?: number;
  maxTokens?: number;
  maxCostMicroUsd?: number;
  maxToolCalls?: number;
  /** Absolute time (ISO 8601). */
  deadline?: string;
  /** Its own final-synthesis reserve, inside its limits; `false`: none. */
  synthesisReserve?: Amount | false;
}

/**
 * A child's limits. For each limit, child = min(the brief's request or the configured default, the parent's
 * remaining); the child's deadline never passes its parent's. Tokens and cost left are net of live reservations.
 */
export function deriveChildLimits(input: {
  parentLimits: ResolvedLimits;
  parentUsage: Usage;
  reserved: Amount;
  nowMs: number;
  requested: BriefLimits | undefined;
  defaults: BriefLimits;
  /** What the parent keeps for its own final answer (its synthesis reserve): never lent to a child. */
  keep?: Amount;
}): ChildLimits {
  const { parentLimits, parentUsage, reserved, nowMs, defaults } = input;
  const requested = input.requested ?? {};
  const rem = remaining(parentLimits, parentUsage, nowMs);
  const free = available(budgetOf(parentLimits, parentUsage, sum(reserved, input.keep ?? ZERO_AMOUNT)));
  const askedCost = requested.maxCostUsd ?? defaults.maxCostUsd;
  const cost = minOf(askedCost === undefined ? undefined : usdToMicro(askedCost), free.costMicroUsd);
  const askedDeadline = requested.deadline ?? defaults.deadline;
  const deadline = minOf(askedDeadline === undefined ? undefined : Date.parse(askedDeadline), parentLimits.deadlineMs);
  const limits: ChildLimits = {};
  const turns = minOf(requested.maxTurns ?? defaults.maxTurns, rem.turns);
  const tokens = minOf(requested.maxTokens ?? defaults.maxTokens, free.tokens);
  const toolCalls = minOf(requested.maxToolCalls ?? defaults.maxToolCalls, rem.toolCalls);
  if (turns !== null) limits.maxTurns = turns;
  if (tokens !== null) limits.maxTokens = tokens;
  if (cost !== null) limits.maxCostMicroUsd = cost;
  if (toolCalls !== null) limits.maxToolCalls = toolCalls;
  if (deadline !== null) limits.deadline = new Date(deadline).toISOString();
  return limits;
}

/** A child's limits as its input carries them (cost in USD). */
export function asLimits(limits: ChildLimits): Limits {
  const { maxTurns, maxTokens, maxCostMicroUsd, maxToolCalls, deadline, synthesisReserve: reserve } = limits;
  return {
    ...(maxTurns !== undefined && { maxTurns }),
    ...(maxTokens !== undefined && { maxTokens }),
    ...(maxCostMicroUsd !== undefined && { maxCostUsd: microToUsd(maxCostMicroUsd) }),
    ...(maxToolCalls !== undefined && { maxToolCalls }),
    ...(deadline !== undefined && { deadline }),
    ...(reserve !== undefined && {
      synthesisReserve: reserve && { tokens: reserve.tokens, costUsd: microToUsd(reserve.costMicroUsd) },
    }),
  };
}

/** A child's reserve when the config says nothing: a tenth of its limits, at least 500 tokens and $0.0005. */
export const DEFAULT_CHILD_SYNTHESIS_RESERVE = { fraction: 0.1, minTokens: 500, minCostUsd: 0.0005 } as const;

/**
 * A child's final-synthesis reserve, sized to its limits: the fraction of each, never below the floor. It is part of
 * the child's limits (what the parent reserves does not grow), so it fits the child, however small.
 */
export function childReserve(limits: ChildLimits, sizing: ChildSynthesisReserve): Amount | false {
  if (sizing === false) return false;
  const tokens = Math.max(sizing.minTokens, Math.ceil((limits.maxTokens ?? 0) * sizing.fraction));
  const cost = Math.max(usdToMicro(sizing.minCostUsd), Math.ceil((limits.maxCostMicroUsd ?? 0) * sizing.fraction));
  return { tokens, costMicroUsd: cost };
}

/**
 * Why a child with these limits would start in synthesis — its reserve covering all it has, so its first call would
 * offer no tool — or `undefined` when it would not.
 */
export function reserveUncovered(limits: ChildLimits, reserve: Amount | false): string | undefined {
  if (reserve === false) return undefined;
  const fix = 'give it more, or lower delegation.childSynthesisReserve in the config';
  const { tokens, costMicroUsd: cost } = reserve;
  if (limits.maxTokens !== undefined && limits.maxTokens <= tokens) {
    return `its limit of ${limits.maxTokens} tokens cannot cover its final-synthesis reserve of ${tokens} tokens, so it would start with no tools: ${fix}`;
  }
  if (limits.maxCostMicroUsd !== undefined && limits.maxCostMicroUsd <= cost) {
    return `its limit of ${usdText(limits.maxCostMicroUsd)} cannot cover its final-synthesis reserve of ${usdText(cost)}, so it would start with no tools: ${fix}`;
  }
  return undefined;
}

/** What reserving for a child with these limits holds back: its token and cost caps. */
export function reservationFor(limits: ChildLimits): Amount {
  return { tokens: limits.maxTokens ?? 0, costMicroUsd: limits.maxCostMicroUsd ?? 0 };
}

/** Adds amounts. */
export function sum(...amounts: Amount[]): Amount {
  return amounts.reduce(
    (a, b) => ({ tokens: a.tokens + b.tokens, costMicroUsd: a.costMicroUsd + b.costMicroUsd }),
    ZERO_AMOUNT,
  );
}

/**
 * Reserves `amounts` all or nothing. On failure the budget is unchanged and the error gives the numbers.
 */
export function reserve(
  budget: Budget,
  amounts: Amount[],
  keep: Amount = ZERO_AMOUNT,
): { ok: true; budget: Budget } | { ok: false; error: string } {
  const want = sum(...amounts);
  const free = available({ ...budget, reserved: sum(budget.reserved, keep) });
  const problems: string[] = [];
  if (free.costMicroUsd !== null && want.costMicroUsd > free.costMicroUsd) {
    const kept = keep.costMicroUsd > 0 ? `, kept for this run's final answer ${usdText(keep.costMicroUsd)}` : '';
    problems.push(
      `cost: the children need ${usdText(want.costMicroUsd)} but only ${usdText(free.costMicroUsd)} is left (max ${usdText(budget.maxCostMicroUsd!)}, used ${usdText(budget.used.costMicroUsd)}, reserved ${usdText(budget.reserved.costMicroUsd)}${kept})`,
    );
  }
  if (free.tokens !== null && want.tokens > free.tokens) {
    const kept = keep.tokens > 0 ? `, kept for this run's final answer ${keep.tokens}` : '';
    problems.push(
      `tokens: the children need ${want.tokens} but only ${free.tokens} are left (max ${budget.maxTokens}, used ${budget.used.tokens}, reserved ${budget.reserved.tokens}${kept})`,
    );
  }
  if (problems.length > 0) {
    return {
      ok: false,
      error: `the reservation does not fit: ${problems.join('; ')}; ask for smaller limits or fewer children`,
    };
  }
  return { ok: true, budget: { ...budget, reserved: sum(budget.reserved, want) } };
}

/** Releases a reservation (at a child's end, or when its start is abandoned). */
export function release(budget: Budget, amount: Amount): Budget {
  return {
    ...budget,
    reserved: {
      tokens: Math.max(0, budget.reserved.tokens - amount.tokens),
      costMicroUsd: Math.max(0, budget.reserved.costMicroUsd - amount.costMicroUsd),
    },
  };
}

/** Debits what a child actually spent. */
export function debit(budget: Budget, actual: Amount): Budget {
  return { ...budget, used: sum(budget.used, actual) };
}

/**
 * What to take back from reservations of children not yet started so that used + reserved ≤ max again after
 * a debit larger than its hold (an endpoint counted more than Deputy's estimate): per reservation, in order, as much
 * of the excess as it has (each keeps at least 1, so its child still starts, with limits it cannot spend past).
 * `left` is the excess nothing could absorb (the run then stops at its limit, and shows it).
 */
export function shrinkToFit(budget: Budget, reservations: readonly Amount[]): { cuts: Amount[]; left: Amount } {
  const excess = (max: number | null, used: number, held: number) =>
    max === null ? 0 : Math.max(0, used + held - max);
  const left = {
    tokens: excess(budget.maxTokens, budget.used.tokens, budget.reserved.tokens),
    costMicroUsd: excess(budget.maxCostMicroUsd, budget.used.costMicroUsd, budget.reserved.costMicroUsd),
  };
  const cuts = reservations.map((reservation) => {
    const cut = {
      tokens: Math.min(left.tokens, Math.max(0, reservation.tokens - 1)),
      costMicroUsd: Math.min(left.costMicroUsd, Math.max(0, reservation.costMicroUsd - 1)),
    };
    left.tokens -= cut.tokens;
    left.costMicroUsd -= cut.costMicroUsd;
    return cut;
  });
  return { cuts, left };
}

/**
 * Settles a child's reservation: released, and its spend charged in full — what it reported, even past
 * its reservation (then `overrun` says by how much), or the whole reservation when it ended without reporting (never
 * under-count).
 */
export function settleReservation(
  budget: Budget,
  reservation: Amount,
  spent: Spend | null,
): { reserved: Amount; charge: Spend; overrun: Amount | null } {
  const charge = spent ?? { inputTokens: reservation.tokens, outputTokens: 0, costMicroUsd: reservation.costMicroUsd };
  return { reserved: release(budget, reservation).reserved, charge, overrun: overrunOf(charge, reservation) };
}

/**
 * How far a run's usage passed its token and cost limits (a child's are its reservation): an endpoint that bills past
 * the cap Deputy enforced. `null` when it stayed inside.
 */
export function overLimits(
  usage: Pick<Usage, 'totalTokens' | 'costMicroUsd'>,
  limits: Pick<ResolvedLimits, 'maxTokens' | 'maxCostMicroUsd'>,
): Amount | null {
  const tokens = limits.maxTokens === null ? 0 : Math.max(0, usage.totalTokens - limits.maxTokens);
  const costMicroUsd = limits.maxCostMicroUsd === null ? 0 : Math.max(0, usage.costMicroUsd - limits.maxCostMicroUsd);
  return tokens > 0 || costMicroUsd > 0 ? { tokens, costMicroUsd } : null;
}

/**
 * How far a child's charge passed its reservation (per amount, never negative): an endpoint that counts more than
 * Deputy's estimate can bill past a cap Deputy enforced. Shown, never hidden; `null` when it stayed inside. A
 * reservation of 0 holds nothing back for that amount: the child had no cap on it, so it cannot pass one.
 */
export function overrunOf(charge: Spend, reservation: Amount): Amount | null {
  return overLimits(
    { totalTokens: charge.inputTokens + charge.outputTokens, costMicroUsd: charge.costMicroUsd },
    { maxTokens: reservation.tokens || null, maxCostMicroUsd: reservation.costMicroUsd || null },
  );
}

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
