/**
 * Budget arithmetic for delegation: what a child may spend, and the reservations that keep a parent's
 * tree inside its own limits. Tokens and cost are shared down the tree (reserved, then debited); turns and tool calls
 * are per run. Pure functions over integers.
 */
import type { BriefLimits, ChildSynthesisReserve } from '../contract/delegation.js';
import type { SynthesisReserve } from '../contract/composition.js';
import { remaining } from './limits.js';
import type { Limits, ResolvedLimits, Usage } from '../contract/run.js';
import { utf8Bytes } from './payloads.js';
import { callCostMicroUsd, microToUsd, usdToMicro, type CallTokens, type ModelPrice, type Spend } from './usage.js';
import type { CallBudget } from '../contract/activities.js';

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

const minOf = (...values: (number | null | undefined)[]): number | null => {
  const defined = values.filter((v): v is number => v !== null && v !== undefined);
  return defined.length > 0 ? Math.min(...defined) : null;
};

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
}): Limits {
  const { parentLimits, parentUsage, reserved, nowMs, defaults } = input;
  const requested = input.requested ?? {};
  const rem = remaining(parentLimits, parentUsage, nowMs);
  const free = available(budgetOf(parentLimits, parentUsage, sum(reserved, input.keep ?? ZERO_AMOUNT)));
  const askedCost = requested.maxCostUsd ?? defaults.maxCostUsd;
  const cost = minOf(askedCost === undefined ? undefined : usdToMicro(askedCost), free.costMicroUsd);
  const askedDeadline = requested.deadline ?? defaults.deadline;
  const deadline = minOf(askedDeadline === undefined ? undefined : Date.parse(askedDeadline), parentLimits.deadlineMs);
  const limits: Limits = {};
  const turns = minOf(requested.maxTurns ?? defaults.maxTurns, rem.turns);
  const tokens = minOf(requested.maxTokens ?? defaults.maxTokens, free.tokens);
  const toolCalls = minOf(requested.maxToolCalls ?? defaults.maxToolCalls, rem.toolCalls);
  if (turns !== null) limits.maxTurns = turns;
  if (tokens !== null) limits.maxTokens = tokens;
  if (cost !== null) limits.maxCostUsd = microToUsd(cost);
  if (toolCalls !== null) limits.maxToolCalls = toolCalls;
  if (deadline !== null) limits.deadline = new Date(deadline).toISOString();
  return limits;
}

/** A child's reserve when the config says nothing: a tenth of its limits, at least 500 tokens and $0.0005. */
export const DEFAULT_CHILD_SYNTHESIS_RESERVE = { fraction: 0.1, minTokens: 500, minCostUsd: 0.0005 } as const;

/**
 * A child's final-synthesis reserve, sized to its limits: the fraction of each, never below the floor. It is part of
 * the child's limits (what the parent reserves does not grow), so it fits the child, however small.
 */
export function childReserve(limits: Limits, sizing: ChildSynthesisReserve): SynthesisReserve {
  if (sizing === false) return false;
  const tokens = Math.max(sizing.minTokens, Math.ceil((limits.maxTokens ?? 0) * sizing.fraction));
  const cost = Math.max(usdToMicro(sizing.minCostUsd), Math.ceil(usdToMicro(limits.maxCostUsd ?? 0) * sizing.fraction));
  return { tokens, costUsd: microToUsd(cost) };
}

/**
 * Why a child with these limits would start in synthesis — its reserve covering all it has, so its first call would
 * offer no tool — or `undefined` when it would not.
 */
export function reserveUncovered(limits: Limits, reserve: SynthesisReserve): string | undefined {
  if (reserve === false) return undefined;
  const fix = 'give it more, or lower delegation.childSynthesisReserve in the config';
  const tokens = reserve.tokens ?? 0;
  if (limits.maxTokens !== undefined && limits.maxTokens <= tokens) {
    return `its limit of ${limits.maxTokens} tokens cannot cover its final-synthesis reserve of ${tokens} tokens, so it would start with no tools: ${fix}`;
  }
  const cost = usdToMicro(reserve.costUsd ?? 0);
  if (limits.maxCostUsd !== undefined && usdToMicro(limits.maxCostUsd) <= cost) {
    return `its limit of ${usd(usdToMicro(limits.maxCostUsd))} cannot cover its final-synthesis reserve of ${usd(cost)}, so it would start with no tools: ${fix}`;
  }
  return undefined;
}

/** What reserving for a child with these limits holds back: its token and cost caps. */
export function reservationFor(limits: Limits): Amount {
  return {
    tokens: limits.maxTokens ?? 0,
    costMicroUsd: limits.maxCostUsd === undefined ? 0 : usdToMicro(limits.maxCostUsd),
  };
}

/** Adds amounts. */
export function sum(...amounts: Amount[]): Amount {
  return amounts.reduce(
    (a, b) => ({ tokens: a.tokens + b.tokens, costMicroUsd: a.costMicroUsd + b.costMicroUsd }),
    ZERO_AMOUNT,
  );
}

const usd = (micro: number) => `$${microToUsd(micro).toFixed(6)}`;

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
    const kept = keep.costMicroUsd > 0 ? `, kept for this run's final answer ${usd(keep.costMicroUsd)}` : '';
    problems.push(
      `cost: the children need ${usd(want.costMicroUsd)} but only ${usd(free.costMicroUsd)} is left (max ${usd(budget.maxCostMicroUsd!)}, used ${usd(budget.used.costMicroUsd)}, reserved ${usd(budget.reserved.costMicroUsd)}${kept})`,
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

export type { CallBudget };

/** A call's budget less what the attempts before it were billed (never below nothing). */
export function lessBilled(budget: CallBudget, billed: CallTokens): CallBudget {
  const less = (left: number | null, spent: number) => (left === null ? null : Math.max(0, left - spent));
  return {
    ...budget,
    tokens: less(budget.tokens, billed.inputTokens + billed.outputTokens),
    costMicroUsd: less(budget.costMicroUsd, callCostMicroUsd(billed, budget.price)),
  };
}

/** A call whose answer could be shorter than this is not made: it could not say anything useful. */
export const MIN_COMPLETION_TOKENS = 16;

/** Whether a call fits its budget, and the `max_completion_tokens` that keeps its worst case inside it. */
export type CallFit =
  { ok: true; maxCompletionTokens: number | null } | { ok: false; limit: 'maxTokens' | 'maxCostUsd'; message: string };

/**
 * The largest answer a call with `inputTokens` of input may ask for so that input + answer fit the free
 * tokens and, at the model's price (cost rounded up once, as `callCostMicroUsd` does), the free micro-USD.
 */
export function fitCall(inputTokens: number, budget: CallBudget): CallFit {
  const { price } = budget;
  const byTokens = budget.tokens === null ? null : budget.tokens - inputTokens;
  let byCost: number | null = null;
  if (budget.costMicroUsd !== null) {
    const left = budget.costMicroUsd * 1_000_000 - inputTokens * price.inputMicroUsdPerMTok;
    byCost = price.outputMicroUsdPerMTok > 0 ? Math.floor(left / price.outputMicroUsdPerMTok) : left >= 0 ? null : -1;
  }
  const max = minOf(byTokens, byCost, budget.maxCompletionTokens);
  if (max === null || max >= MIN_COMPLETION_TOKENS) return { ok: true, maxCompletionTokens: max };
  const limit = byTokens !== null && (byCost === null || byTokens <= byCost) ? 'maxTokens' : 'maxCostUsd';
  const message =
    limit === 'maxTokens'
      ? `the call needs ${inputTokens} input tokens and at least ${MIN_COMPLETION_TOKENS} for its answer, but only ${budget.tokens} tokens are left`
      : `the call's input alone costs ${usd(Math.ceil((inputTokens * price.inputMicroUsdPerMTok) / 1_000_000))} and only ${usd(budget.costMicroUsd!)} is left for it and its answer`;
  return { ok: false, limit, message };
}

/** The worst case of a call: its input and the largest answer it may ask for, in tokens and micro-USD. */
export function worstCase(inputTokens: number, maxCompletionTokens: number, price: ModelPrice): Amount {
  return {
    tokens: inputTokens + maxCompletionTokens,
    costMicroUsd: callCostMicroUsd({ inputTokens, outputTokens: maxCompletionTokens }, price),
  };
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

/**
 * How a call's input is counted (activities/tokens.ts) and bounded without a tokenizer (workflow code): Chat
 * Completions adds tokens per message and per request; the count gets a margin — a factor (1.05 for models whose
 * encoding is known, 1.25 for any other) and a fixed number of tokens for what the text cannot show.
 */
export const INPUT_COUNT = Object.freeze({
  perMessage: 4,
  perRequest: 3,
  knownFactor: 1.05,
  unknownFactor: 1.25,
  fixedMargin: 16,
});

/**
 * An upper bound of the tokens `callModel` will count for these messages, margin included, without a tokenizer: a
 * byte-level BPE token is at least one byte, and the widest margin is the unknown model's.
 */
export function upperBoundTokens(messages: readonly unknown[], tools: readonly unknown[] = []): number {
  let bytes = INPUT_COUNT.perRequest;
  for (const message of messages) bytes += INPUT_COUNT.perMessage + utf8Bytes(JSON.stringify(message));
  if (tools.length > 0) bytes += utf8Bytes(JSON.stringify(tools));
  return Math.ceil(bytes * INPUT_COUNT.unknownFactor) + INPUT_COUNT.fixedMargin;
}
