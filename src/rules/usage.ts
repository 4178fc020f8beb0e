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
  /** What the endpoints billed of it, when known (read with `billedOf`): otherwise what was debited. */
  billed?: unknown;
}

/** What an endpoint billed: tokens by kind and integer micro-USD. */
export interface Billed {
  inputTokens: number;
  outputTokens: number;
  costMicroUsd: number;
}

/**
 * Tokens of one model call. Of its input, a provider may have served some from its prompt cache
 * (`cachedInputTokens`) and written some to it (`cacheWriteTokens`), each billed at its own price; left out, none.
 * Reasoning tokens are output: OpenAI bills them as output, within its completion tokens.
 */
export interface CallTokens {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number | undefined;
  cacheWriteTokens?: number | undefined;
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

/** Integer micro-USD as people read it: `$0.001234`. */
export function usdText(micro: number): string {
  return `$${microToUsd(micro).toFixed(6)}`;
}

/** A price as the config writes it: USD per million tokens of each kind (a cache price only where it is set). */
export interface UsdPrice {
  inputPerMTokUsd: number;
  outputPerMTokUsd: number;
  cachedInputPerMTokUsd?: number | undefined;
  cacheWritePerMTokUsd?: number | undefined;
}

/** Converts a price in USD per million tokens to integer micro-USD per million tokens. */
export function modelPrice(price: UsdPrice): ModelPrice {
  const { cachedInputPerMTokUsd: cached, cacheWritePerMTokUsd: write } = price;
  return {
    inputMicroUsdPerMTok: usdToMicro(price.inputPerMTokUsd),
    outputMicroUsdPerMTok: usdToMicro(price.outputPerMTokUsd),
    ...(cached !== undefined && { cachedInputMicroUsdPerMTok: usdToMicro(cached) }),
    ...(write !== undefined && { cacheWriteMicroUsdPerMTok: usdToMicro(write) }),
  };
}

/**
 * Cost of one model call in integer micro-USD, priced as its provider bills it: input served from the cache and input
 * written to it at their prices, the rest of the input at the input price, and output (reasoning included) at the
 * output price; rounded up once, so a run never under-counts its spend. A count with no cached part is the worst
 * case: every input token at the full price.
 */
export function callCostMicroUsd(tokens: CallTokens, price: ModelPrice): number {
  const { cached, written, uncached } = inputParts(tokens);
  const scaled =
    uncached * price.inputMicroUsdPerMTok +
    cached * (price.cachedInputMicroUsdPerMTok ?? price.inputMicroUsdPerMTok) +
    written * (price.cacheWriteMicroUsdPerMTok ?? price.inputMicroUsdPerMTok) +
    tokens.outputTokens * price.outputMicroUsdPerMTok;
  return Math.ceil(scaled / MICRO);
}

/**
 * The most one input token may cost before the provider says how it served it: the input price, or the cache-write
 * price where a provider bills writes dearer (a call's worst case prices all its input so, never cached).
 */
export function worstInputPrice(price: ModelPrice): number {
  return Math.max(price.inputMicroUsdPerMTok, price.cacheWriteMicroUsdPerMTok ?? 0);
}

/**
 * A call's input by how it is billed. The cached and written parts are the provider's word: a part that is no count,
 * or that the input it is part of cannot hold (the cache read first, as providers bill it), is no part, and its
 * tokens are priced as uncached input, so no report can lower what a call is debited below what it could have cost.
 */
export function inputParts(tokens: CallTokens): { cached: number; written: number; uncached: number } {
  const within = (value: unknown, room: number) => {
    const count = tokenCount(value) ?? 0;
    return count <= room ? count : 0;
  };
  const cached = within(tokens.cachedInputTokens, tokens.inputTokens);
  const written = within(tokens.cacheWriteTokens, tokens.inputTokens - cached);
  return { cached, written, uncached: tokens.inputTokens - cached - written };
}

/** The cache parts of `tokens` that are counts, for carrying beside input and output (none when there are none). */
export function cacheParts(tokens: CallTokens): Pick<CallTokens, 'cachedInputTokens' | 'cacheWriteTokens'> {
  const { cached, written } = inputParts(tokens);
  return { ...(cached > 0 && { cachedInputTokens: cached }), ...(written > 0 && { cacheWriteTokens: written }) };
}

/** Usage of a run that has done nothing yet. */
export const ZERO_USAGE: Usage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  costMicroUsd: 0,
  modelCalls: 0,
  toolCalls: 0,
  billed: Object.freeze({ inputTokens: 0, outputTokens: 0, costMicroUsd: 0 }),
});

/**
 * What a model call's endpoint billed, as its result says (`billed`: its usage report, or Deputy's count where it
 * reported none): at most what was debited, each direction, since the debit is the larger of the two; what was
 * debited when the result says nothing readable.
 */
export function billedTokens(result: CallTokens & { billed?: unknown }): CallTokens {
  const said = callTokensOf(result.billed);
  if (!said) return { inputTokens: result.inputTokens, outputTokens: result.outputTokens, ...cacheParts(result) };
  const billed = {
    inputTokens: Math.min(said.inputTokens, result.inputTokens),
    outputTokens: Math.min(said.outputTokens, result.outputTokens),
  };
  return { ...billed, ...cacheParts({ ...said, inputTokens: billed.inputTokens }) };
}

/** What one model call spent, debited and billed, each priced at the run's model. */
export function callSpend(result: CallTokens & { billed?: unknown }, price: ModelPrice): Spend {
  const billed = billedTokens(result);
  return {
    inputTokens: result.inputTokens,
    outputTokens: result.outputTokens,
    costMicroUsd: callCostMicroUsd(result, price),
    billed: { ...billed, costMicroUsd: callCostMicroUsd(billed, price) },
  };
}

/**
 * The billed part of `spend` (a child's usage as it reported it may say anything): its `billed` figures when each is
 * a count no larger than what was debited, else what was debited.
 */
export function billedOf(spend: Spend): Billed {
  const cost = tokenCount((spend.billed as { costMicroUsd?: unknown } | undefined)?.costMicroUsd);
  if (!callTokensOf(spend.billed) || cost === null) {
    return { inputTokens: spend.inputTokens, outputTokens: spend.outputTokens, costMicroUsd: spend.costMicroUsd };
  }
  return { ...billedTokens(spend), costMicroUsd: Math.min(cost, spend.costMicroUsd) };
}

/** Adds one model call (what it spent, debited and billed: `callSpend`) to a usage record. */
export function addModelCall(usage: Usage, spend: Spend): Usage {
  const added = addSpend(usage, spend);
  return { ...added, modelCalls: usage.modelCalls + 1 };
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
  const billed = billedOf(spend);
  return {
    ...usage,
    inputTokens: usage.inputTokens + spend.inputTokens,
    outputTokens: usage.outputTokens + spend.outputTokens,
    totalTokens: usage.totalTokens + spend.inputTokens + spend.outputTokens,
    costMicroUsd: usage.costMicroUsd + spend.costMicroUsd,
    billed: {
      inputTokens: usage.billed.inputTokens + billed.inputTokens,
      outputTokens: usage.billed.outputTokens + billed.outputTokens,
      costMicroUsd: usage.billed.costMicroUsd + billed.costMicroUsd,
    },
  };
}

/** No tokens. */
export const NO_TOKENS: CallTokens = Object.freeze({ inputTokens: 0, outputTokens: 0 });

/** A token count as an endpoint or a record may carry it: a non-negative safe integer, else `null`. */
function tokenCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/**
 * Why a model call's result reports usage no call can have (a count that is negative, fractional or past a safe
 * integer), or `null`. Such a result is refused before it reaches the ledger or a metric: no endpoint's report gets
 * there (the activity counts what it read), so it was written by hand.
 */
export function impossibleUsage(result: unknown): string | null {
  const { inputTokens, outputTokens } = (typeof result === 'object' && result !== null ? result : {}) as Record<
    string,
    unknown
  >;
  const bad = Object.entries({ inputTokens, outputTokens }).filter(([, v]) => tokenCount(v) === null);
  return bad.length === 0 ? null : bad.map(([k, v]) => `${k} ${JSON.stringify(v) ?? 'missing'}`).join(', ');
}

/**
 * `value` as input and output tokens, when both are counts (see `tokenCount`), with the cache parts of its input that
 * are counts; anything else is `null`.
 */
export function callTokensOf(value: unknown): CallTokens | null {
  if (typeof value !== 'object' || value === null) return null;
  const { inputTokens, outputTokens, cachedInputTokens, cacheWriteTokens } = value as Record<string, unknown>;
  const input = tokenCount(inputTokens);
  const output = tokenCount(outputTokens);
  if (input === null || output === null) return null;
  const tokens = { inputTokens: input, outputTokens: output };
  return { ...tokens, ...cacheParts({ ...tokens, cachedInputTokens, cacheWriteTokens } as CallTokens) };
}

/** The sum of two token counts. */
export function addTokens(a: CallTokens, b: CallTokens): CallTokens {
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens };
}

/**
 * A run's figures as every view labels them: its own model calls (its turns) and tool calls (those its model called),
 * the tokens and cost of its tree (its own spend, summaries included, and what its children spent) as the budget
 * debited them, and as the endpoints billed them.
 */
export function labelledUsage(usage: Usage): { own: string; tree: string; billed: string } {
  const { billed } = usage;
  return {
    own: `own ${usage.modelCalls} model + ${usage.toolCalls} tool calls`,
    tree: `tree ${usage.totalTokens} tok ${usdText(usage.costMicroUsd)}`,
    billed: `billed ${billed.inputTokens + billed.outputTokens} tok ${usdText(billed.costMicroUsd)}`,
  };
}

/** The endpoints billed less than the budget debited (they reported less than Deputy counted). */
export function billedDiffers(usage: Usage): boolean {
  const { billed } = usage;
  return billed.inputTokens + billed.outputTokens !== usage.totalTokens || billed.costMicroUsd !== usage.costMicroUsd;
}
