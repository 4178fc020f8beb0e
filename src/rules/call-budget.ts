/**
 * One model call's budget: what it may use of its run's, whether a call of a given input fits it and how long an
 * answer it may ask for, its worst case, and an upper bound of its input without a tokenizer (workflow code). Pure.
 */
import type { CallBudget } from '../contract/activities.js';
import { minOf, type Amount } from './budget.js';
import { utf8Bytes } from './payloads.js';
import { callCostMicroUsd, usdText, worstInputPrice, type CallTokens, type ModelPrice } from './usage.js';

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
 * tokens and, at the model's price (its input uncached, at `worstInputPrice`; cost rounded up once, as
 * `callCostMicroUsd` does), the free micro-USD.
 */
export function fitCall(inputTokens: number, budget: CallBudget): CallFit {
  const { price } = budget;
  const inputPrice = worstInputPrice(price);
  const byTokens = budget.tokens === null ? null : budget.tokens - inputTokens;
  let byCost: number | null = null;
  if (budget.costMicroUsd !== null) {
    const left = budget.costMicroUsd * 1_000_000 - inputTokens * inputPrice;
    byCost = price.outputMicroUsdPerMTok > 0 ? Math.floor(left / price.outputMicroUsdPerMTok) : left >= 0 ? null : -1;
  }
  const max = minOf(byTokens, byCost, budget.maxCompletionTokens);
  if (max === null || max >= MIN_COMPLETION_TOKENS) return { ok: true, maxCompletionTokens: max };
  const limit = byTokens !== null && (byCost === null || byTokens <= byCost) ? 'maxTokens' : 'maxCostUsd';
  const message =
    limit === 'maxTokens'
      ? `the call needs ${inputTokens} input tokens and at least ${MIN_COMPLETION_TOKENS} for its answer, but only ${budget.tokens} tokens are left`
      : `the call's input alone costs ${usdText(Math.ceil((inputTokens * inputPrice) / 1_000_000))} and only ${usdText(budget.costMicroUsd!)} is left for it and its answer`;
  return { ok: false, limit, message };
}

/**
 * The worst case of a call: its input, none of it served from a provider's cache (each token at `worstInputPrice`),
 * and the largest answer it may ask for, in tokens and micro-USD.
 */
export function worstCase(inputTokens: number, maxCompletionTokens: number, price: ModelPrice): Amount {
  const uncached = { ...price, inputMicroUsdPerMTok: worstInputPrice(price) };
  return {
    tokens: inputTokens + maxCompletionTokens,
    costMicroUsd: callCostMicroUsd({ inputTokens, outputTokens: maxCompletionTokens }, uncached),
  };
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
