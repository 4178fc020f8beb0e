/**
 * Usage and cost arithmetic. Cost is integer micro-USD: prices are stored as micro-USD per million
 * tokens, each call's cost is rounded up once, and sums are exact.
 */
import type { ModelPrice } from '../contract/composition.js';
import type { Usage } from '../contract/run.js';

export type { ModelPrice };

/** What a run spent (or a child is charged): tokens by kind and integer micro-USD. */
export interface Spend {
  inputTokens: number;
  outputTokens: number;
  costMicroUsd: number;
}

/** Tokens reported by one model call. */
export interface CallTokens {
  inputTokens: number;
  outputTokens: number;
}

const MICRO = 1_000_000;

/** Converts USD to integer micro-USD, rounding to the nearest micro-dollar. */
export function usdToMicro(usd: number): number {
  return Math.round(usd * MICRO);
}

/** Converts integer micro-USD to USD for display. */
export function microToUsd(micro: number): number {
  return micro / MICRO;
}

/** Converts a price in USD per million tokens to integer micro-USD per million tokens. */
export function priceFromUsdPerMTok(input: number, output: number): ModelPrice {
  return { inputMicroUsdPerMTok: usdToMicro(input), outputMicroUsdPerMTok: usdToMicro(output) };
}

/** Cost of one model call in integer micro-USD, rounded up so a run never under-counts its spend. */
export function callCostMicroUsd(tokens: CallTokens, price: ModelPrice): number {
  const scaled = tokens.inputTokens * price.inputMicroUsdPerMTok + tokens.outputTokens * price.outputMicroUsdPerMTok;
  return Math.ceil(scaled / MICRO);
}

/** Usage of a run that has done nothing yet. */
export const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  costMicroUsd: 0,
  modelCalls: 0,
  toolCalls: 0,
});

/** Adds one model call to a usage record. */
export function addModelCall(usage: Usage, tokens: CallTokens, price: ModelPrice): Usage {
  return {
    ...usage,
    inputTokens: usage.inputTokens + tokens.inputTokens,
    outputTokens: usage.outputTokens + tokens.outputTokens,
    totalTokens: usage.totalTokens + tokens.inputTokens + tokens.outputTokens,
    costMicroUsd: usage.costMicroUsd + callCostMicroUsd(tokens, price),
    modelCalls: usage.modelCalls + 1,
  };
}

/** Adds executed tool calls to a usage record. */
export function addToolCalls(usage: Usage, count: number): Usage {
  return { ...usage, toolCalls: usage.toolCalls + count };
}

/**
 * Adds what a child spent to its parent's usage: tokens and cost are shared down the tree, model and tool
 * calls stay per run. Spend known only as a total (a child that ended without a result) counts as input tokens.
 */
export function addSpend(usage: Usage, spend: Spend): Usage {
  return {
    ...usage,
    inputTokens: usage.inputTokens + spend.inputTokens,
    outputTokens: usage.outputTokens + spend.outputTokens,
    totalTokens: usage.totalTokens + spend.inputTokens + spend.outputTokens,
    costMicroUsd: usage.costMicroUsd + spend.costMicroUsd,
  };
}

/** No tokens. */
export const NO_TOKENS: CallTokens = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/** A token count as an endpoint or a record may carry it: a non-negative safe integer, else `null`. */
export function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** `value` as input and output tokens, when both are counts (see `tokenCount`); anything else is `null`. */
export function callTokensOf(value: unknown): CallTokens | null {
  if (typeof value !== 'object' || value === null) return null;
  const { inputTokens, outputTokens } = value as Record<string, unknown>;
  const input = tokenCount(inputTokens);
  const output = tokenCount(outputTokens);
  return input === null || output === null ? null : { inputTokens: input, outputTokens: output };
}

/** The sum of two token counts. */
export function addTokens(a: CallTokens, b: CallTokens): CallTokens {
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens };
}

/**
 * A run's figures as every view labels them: its own model calls (its turns) and tool calls (those its model called),
 * and the tokens and cost of its tree (its own spend, summaries included, and what its children spent).
 */
export function labelledUsage(usage: Usage): { own: string; tree: string } {
  return {
    own: `own ${usage.modelCalls} model + ${usage.toolCalls} tool calls`,
    tree: `tree ${usage.totalTokens} tok $${microToUsd(usage.costMicroUsd).toFixed(6)}`,
  };
}
