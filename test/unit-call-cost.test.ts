/**
 * R2.20 a call is priced as its provider bills it: cached input, cache writes and output each at its price, from
 * the usage report as an endpoint sends it; a report's cache parts never lower a debit past what the call could cost.
 */
import { describe, expect, it } from 'vitest';
import type OpenAI from 'openai';
import { reportedTokens } from '../activities/model-stream.js';
import { fitCall, worstCase } from '../src/rules/call-budget.js';
import { billedTokens, callCostMicroUsd, callSpend, callTokensOf, modelPrice } from '../src/rules/usage.js';

// 4 µUSD an input token, 1 a cached one, 5 a written one, 16 an output token.
const price = modelPrice({
  inputPerMTokUsd: 4,
  cachedInputPerMTokUsd: 1,
  cacheWritePerMTokUsd: 5,
  outputPerMTokUsd: 16,
});

const usage = (over: Record<string, unknown>) => over as unknown as OpenAI.CompletionUsage;

describe('R2.20 a call priced as its provider bills it', () => {
  it('R2.20 the config’s prices per million tokens in micro-USD, cache prices only where set', () => {
    expect(price).toStrictEqual({
      inputMicroUsdPerMTok: 4_000_000,
      outputMicroUsdPerMTok: 16_000_000,
      cachedInputMicroUsdPerMTok: 1_000_000,
      cacheWriteMicroUsdPerMTok: 5_000_000,
    });
    expect(modelPrice({ inputPerMTokUsd: 0.4, outputPerMTokUsd: 1.6 })).toStrictEqual({
      inputMicroUsdPerMTok: 400_000,
      outputMicroUsdPerMTok: 1_600_000,
    });
  });

  it('R2.20 cached, written and uncached input and output, each at its price, rounded up once', () => {
    expect(callCostMicroUsd({ inputTokens: 1000, outputTokens: 10 }, price)).toBe(4000 + 160);
    expect(callCostMicroUsd({ inputTokens: 1000, cachedInputTokens: 800, outputTokens: 10 }, price)).toBe(
      200 * 4 + 800 + 160,
    );
    expect(
      callCostMicroUsd({ inputTokens: 1000, cachedInputTokens: 600, cacheWriteTokens: 300, outputTokens: 10 }, price),
    ).toBe(100 * 4 + 600 + 300 * 5 + 160);
    // A cache price left out is the input price.
    const plain = modelPrice({ inputPerMTokUsd: 4, outputPerMTokUsd: 16 });
    expect(callCostMicroUsd({ inputTokens: 1000, cachedInputTokens: 800, outputTokens: 0 }, plain)).toBe(4000);
    // One cached token at 0.25 µUSD is still a quarter of a micro-dollar: rounded up once, per call.
    const quarter = modelPrice({ inputPerMTokUsd: 1, cachedInputPerMTokUsd: 0.25, outputPerMTokUsd: 2 });
    expect(callCostMicroUsd({ inputTokens: 1, cachedInputTokens: 1, outputTokens: 0 }, quarter)).toBe(1);
    expect(callCostMicroUsd({ inputTokens: 8, cachedInputTokens: 4, outputTokens: 0 }, quarter)).toBe(5);
  });

  it('R2.20 R2.19 a cache part that is no count, or that its input cannot hold, is no part: those tokens cost the full price', () => {
    const full = callCostMicroUsd({ inputTokens: 1000, outputTokens: 0 }, price);
    for (const cachedInputTokens of [1001, -5, 0.5, Number.NaN, '800', null]) {
      expect(
        callCostMicroUsd({ inputTokens: 1000, outputTokens: 0, cachedInputTokens } as never, price),
        String(cachedInputTokens),
      ).toBe(full);
    }
    // A write that with the cached part would pass the input is no write; the cached part stands.
    expect(
      callCostMicroUsd({ inputTokens: 1000, cachedInputTokens: 800, cacheWriteTokens: 300, outputTokens: 0 }, price),
    ).toBe(200 * 4 + 800);
    expect(callTokensOf({ inputTokens: 10, outputTokens: 1, cachedInputTokens: 11 })).toStrictEqual({
      inputTokens: 10,
      outputTokens: 1,
    });
  });

  it('R2.20 R2.19 what a call is debited and billed carries the reported cache: the debit at the larger count, the extra input uncached', () => {
    // The endpoint reported 900 input tokens (700 of them cached), Deputy counted 1000: debited 1000, 300 uncached.
    const result = {
      inputTokens: 1000,
      outputTokens: 10,
      cachedInputTokens: 700,
      billed: { inputTokens: 900, outputTokens: 10, cachedInputTokens: 700 },
    };
    const spend = callSpend(result, price);
    expect(spend.costMicroUsd).toBe(300 * 4 + 700 + 160);
    expect(spend.billed).toStrictEqual({
      inputTokens: 900,
      outputTokens: 10,
      cachedInputTokens: 700,
      costMicroUsd: 200 * 4 + 700 + 160,
    });
    // A billed report that says more than was debited is held to the debit, its cache to what that input holds.
    expect(
      billedTokens({
        inputTokens: 100,
        outputTokens: 1,
        billed: { inputTokens: 900, outputTokens: 1, cachedInputTokens: 700 },
      }),
    ).toStrictEqual({ inputTokens: 100, outputTokens: 1 });
  });
});

describe('R2.20 usage reports as endpoints send them', () => {
  it('R2.20 OpenAI’s cached tokens, DeepSeek’s cache hits, OpenRouter’s cache writes', () => {
    expect(
      reportedTokens(
        usage({
          prompt_tokens: 2000,
          completion_tokens: 30,
          total_tokens: 2030,
          prompt_tokens_details: { cached_tokens: 1920 },
        }),
      ),
    ).toStrictEqual({ inputTokens: 2000, outputTokens: 30, cachedInputTokens: 1920 });
    expect(
      reportedTokens(
        usage({ prompt_tokens: 2000, completion_tokens: 30, total_tokens: 2030, prompt_cache_hit_tokens: 1500 }),
      ),
    ).toStrictEqual({ inputTokens: 2000, outputTokens: 30, cachedInputTokens: 1500 });
    expect(
      reportedTokens(
        usage({
          prompt_tokens: 2000,
          completion_tokens: 30,
          total_tokens: 2030,
          prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 1800 },
        }),
      ),
    ).toStrictEqual({ inputTokens: 2000, outputTokens: 30, cacheWriteTokens: 1800 });
  });

  it('R2.20 reasoning is output: within completion tokens as OpenAI counts it, added when the total counts it beside them', () => {
    /** A report of 100 input tokens and 400 of reasoning, `completion` completion tokens, `total` in all. */
    const reasoned = (completion: number, total: number) =>
      reportedTokens(
        usage({
          prompt_tokens: 100,
          completion_tokens: completion,
          total_tokens: total,
          completion_tokens_details: { reasoning_tokens: 400 },
        }),
      );
    // OpenAI: 500 completion tokens, 400 of them reasoning.
    expect(reasoned(500, 600)).toStrictEqual({ inputTokens: 100, outputTokens: 500 });
    // A server that counts its 400 reasoning tokens beside 100 visible ones.
    expect(reasoned(100, 600)).toStrictEqual({ inputTokens: 100, outputTokens: 500 });
    // A total that says nothing either way (a server that sums nothing): the completion tokens as they are.
    expect(reasoned(100, 0)).toStrictEqual({ inputTokens: 100, outputTokens: 100 });
  });

  it('R2.20 a report with no counts is none; a cache part past its input is dropped', () => {
    expect(reportedTokens(usage({ prompt_tokens: -1, completion_tokens: 3 }))).toBeNull();
    expect(reportedTokens(usage({ completion_tokens: 3 }))).toBeNull();
    expect(
      reportedTokens(usage({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 99 } })),
    ).toStrictEqual({ inputTokens: 10, outputTokens: 3 });
    expect(
      reportedTokens(usage({ prompt_tokens: 10, completion_tokens: 3, prompt_tokens_details: null })),
    ).toStrictEqual({ inputTokens: 10, outputTokens: 3 });
  });
});

describe('R2.20 the worst case before a call prices its input uncached', () => {
  it('R2.20 R2.5 a cheap cached price lowers no cap; a dearer cache write raises the worst case to it', () => {
    const plain = modelPrice({ inputPerMTokUsd: 4, outputPerMTokUsd: 16 });
    const cheapCache = modelPrice({ inputPerMTokUsd: 4, cachedInputPerMTokUsd: 0.4, outputPerMTokUsd: 16 });
    const budget = (p: typeof plain) => ({ tokens: null, costMicroUsd: 10_000, price: p });
    expect(fitCall(1000, budget(cheapCache))).toStrictEqual(fitCall(1000, budget(plain)));
    expect(fitCall(1000, budget(plain))).toStrictEqual({ ok: true, maxCompletionTokens: 375 });
    expect(worstCase(1000, 375, cheapCache)).toStrictEqual({ tokens: 1375, costMicroUsd: 10_000 });
    // Writes billed at 1.25× the input price (as some providers bill them): the worst case is every input token written.
    const dearWrite = modelPrice({ inputPerMTokUsd: 4, cacheWritePerMTokUsd: 5, outputPerMTokUsd: 16 });
    expect(fitCall(1000, budget(dearWrite))).toStrictEqual({ ok: true, maxCompletionTokens: 312 });
    expect(worstCase(1000, 312, dearWrite)).toStrictEqual({ tokens: 1312, costMicroUsd: 5000 + 312 * 16 });
    expect(callCostMicroUsd({ inputTokens: 1000, cacheWriteTokens: 1000, outputTokens: 312 }, dearWrite)).toBe(
      worstCase(1000, 312, dearWrite).costMicroUsd,
    );
  });
});
