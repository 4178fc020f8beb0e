import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countCallTokens, countText, encodingFor, loadEncoding } from '../activities/tokens.js';
import { overrunOf, shrinkToFit } from '../src/rules/budget.js';
import { fitCall, MIN_COMPLETION_TOKENS, upperBoundTokens, worstCase } from '../src/rules/call-budget.js';
import { cutText, formatBytes, jsonFits, utf8Bytes, wasCut } from '../src/rules/payloads.js';
import { callCostMicroUsd, modelPrice } from '../src/rules/usage.js';

const price = modelPrice({ inputPerMTokUsd: 1, outputPerMTokUsd: 2 });

describe('R1.8 bounded payloads: sizes and cuts', () => {
  it('R1.8 utf8Bytes agrees with Buffer on any text, surrogate pairs included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(utf8Bytes(text)).toBe(Buffer.byteLength(text, 'utf8'));
      }),
    );
  });

  it('R1.8 a cut text fits its budget, keeps its beginning and ends with a visible marker', () => {
    const big = 'é'.repeat(1_600_000); // 3.1 MB in UTF-8
    const cut = cutText(big, 256 * 1024);
    expect(Buffer.byteLength(cut)).toBeLessThanOrEqual(256 * 1024);
    expect(cut.endsWith('[truncated: 3.1 MB → 256 KB]')).toBe(true);
    expect(big.startsWith(cut.slice(0, 1000))).toBe(true);
    expect(wasCut(cut)).toBe(true);
    expect(cutText('short', 1024)).toBe('short');
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 3000 }), fc.integer({ min: 64, max: 4000 }), (text, max) => {
        const out = cutText(text, max);
        expect(Buffer.byteLength(out)).toBeLessThanOrEqual(Math.max(max, Buffer.byteLength(text) <= max ? 0 : max));
        if (Buffer.byteLength(text) <= max) expect(out).toBe(text);
        // Never a lone surrogate: the text stays valid UTF-16.
        expect(Buffer.from(out, 'utf8').toString('utf8')).toBe(out);
      }),
    );
    expect(formatBytes(812)).toBe('812 B');
  });
});

describe('R2.13 hard budgets: counting and fitting a call', () => {
  it('R2.13 a call gets the largest answer whose worst case fits the free tokens and micro-USD', () => {
    // 1000 tokens free: 300 of input leave 700 for the answer.
    expect(fitCall(300, { tokens: 1000, costMicroUsd: null, price })).toEqual({ ok: true, maxCompletionTokens: 700 });
    // $0.001 free at $1 in / $2 out per million: 300 input cost 300 micro-USD, 700 left buy 350 output tokens.
    expect(fitCall(300, { tokens: null, costMicroUsd: 1000, price })).toEqual({ ok: true, maxCompletionTokens: 350 });
    expect(fitCall(300, { tokens: 1000, costMicroUsd: 1000, price, maxCompletionTokens: 100 })).toEqual({
      ok: true,
      maxCompletionTokens: 100,
    });
    expect(fitCall(300, { tokens: null, costMicroUsd: null, price })).toEqual({ ok: true, maxCompletionTokens: null });
    const tight = fitCall(300, { tokens: 300 + MIN_COMPLETION_TOKENS - 1, costMicroUsd: null, price });
    expect(tight).toMatchObject({ ok: false, limit: 'maxTokens' });
    expect(fitCall(300, { tokens: null, costMicroUsd: 299, price })).toMatchObject({ ok: false, limit: 'maxCostUsd' });
  });

  it('R2.13 property: whatever fits, its worst case never passes the budget', () => {
    fc.assert(
      fc.property(
        fc.nat(50_000),
        fc.option(fc.nat(100_000), { nil: null }),
        fc.option(fc.nat(100_000), { nil: null }),
        fc.integer({ min: 0, max: 20_000_000 }),
        fc.integer({ min: 0, max: 80_000_000 }),
        (input, tokens, cost, inPrice, outPrice) => {
          const p = { inputMicroUsdPerMTok: inPrice, outputMicroUsdPerMTok: outPrice };
          const fit = fitCall(input, { tokens, costMicroUsd: cost, price: p });
          if (!fit.ok || fit.maxCompletionTokens === null) return;
          const worst = worstCase(input, fit.maxCompletionTokens, p);
          if (tokens !== null) expect(worst.tokens).toBeLessThanOrEqual(tokens);
          if (cost !== null) expect(worst.costMicroUsd).toBeLessThanOrEqual(cost);
        },
      ),
    );
  });

  it('R2.15 shrinkToFit takes the excess from pending reservations in order, each keeping 1; the rest is left', () => {
    const budget = {
      maxTokens: 10_000,
      maxCostMicroUsd: 5000,
      used: { tokens: 9000, costMicroUsd: 1000 },
      reserved: { tokens: 3000, costMicroUsd: 2000 },
    };
    expect(
      shrinkToFit(budget, [
        { tokens: 1500, costMicroUsd: 1000 },
        { tokens: 1500, costMicroUsd: 1000 },
      ]),
    ).toEqual({
      cuts: [
        { tokens: 1499, costMicroUsd: 0 },
        { tokens: 501, costMicroUsd: 0 },
      ],
      left: { tokens: 0, costMicroUsd: 0 },
    });
    const over = { ...budget, used: { tokens: 12_000, costMicroUsd: 4500 } };
    expect(
      shrinkToFit(over, [
        { tokens: 1500, costMicroUsd: 1000 },
        { tokens: 1500, costMicroUsd: 1000 },
      ]),
    ).toEqual({
      cuts: [
        { tokens: 1499, costMicroUsd: 999 },
        { tokens: 1499, costMicroUsd: 501 },
      ],
      left: { tokens: 2002, costMicroUsd: 0 },
    });
  });

  it("R2.15 a child's charge is its whole spend; what passed its reservation is the overrun, shown", () => {
    expect(
      overrunOf({ inputTokens: 900, outputTokens: 300, costMicroUsd: 5000 }, { tokens: 1000, costMicroUsd: 2000 }),
    ).toEqual({ tokens: 200, costMicroUsd: 3000 });
    expect(
      overrunOf({ inputTokens: 900, outputTokens: 100, costMicroUsd: 2000 }, { tokens: 1000, costMicroUsd: 2000 }),
    ).toBeNull();
    expect(
      overrunOf({ inputTokens: 100, outputTokens: 20, costMicroUsd: 2001 }, { tokens: 1000, costMicroUsd: 2000 }),
    ).toEqual({ tokens: 0, costMicroUsd: 1 });
    // A child with no token cap (its parent had none) held back no tokens: it cannot pass a cap it did not have.
    expect(
      overrunOf({ inputTokens: 900, outputTokens: 300, costMicroUsd: 2000 }, { tokens: 0, costMicroUsd: 2000 }),
    ).toBeNull();
  });

  it('R2.13 input is counted with the model’s encoding; unknown models get the wider margin', async () => {
    expect(encodingFor('gpt-4.1-mini')).toMatchObject({ known: true, factor: 1.05 });
    await loadEncoding('gpt-4');
    expect(encodingFor('gpt-4')).toMatchObject({ known: true });
    expect(encodingFor('llama-3-70b')).toMatchObject({ known: false, factor: 1.25 });
    const messages = [
      { role: 'system' as const, content: 'You are Deputy.' },
      { role: 'user' as const, content: 'What is 17 * 23?' },
    ];
    const known = countCallTokens('gpt-4.1-mini', messages, []);
    expect(known.counted).toBeGreaterThan(10);
    expect(known.counted).toBeLessThan(40);
    expect(countCallTokens('llama-3', messages, []).estimate).toBeGreaterThan(known.estimate);
  });

  it('R2.13 one long word is counted in linear time, never fewer tokens than its pieces say', () => {
    const word = Array.from({ length: 400_000 }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join('');
    const started = performance.now();
    const tokens = countText(word);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(tokens).toBeGreaterThan(400_000 / 8);
  });

  it('R2.13 the workflow-side bound is at least what the activity counts, margin included', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', maxLength: 400 }), { minLength: 1, maxLength: 6 }),
        (texts) => {
          const messages = texts.map((content) => ({ role: 'user' as const, content }));
          expect(upperBoundTokens(messages)).toBeGreaterThanOrEqual(
            countCallTokens('unknown-model', messages, []).estimate,
          );
        },
      ),
      { numRuns: 200 },
    );
    expect(callCostMicroUsd({ inputTokens: 1, outputTokens: 0 }, price)).toBe(1);
  });
});

describe('R1.8 the per-turn input check', () => {
  it('R1.8 jsonFits agrees with the exact size on either side of the budget', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'binary', maxLength: 200 }), { maxLength: 20 }),
        fc.integer({ min: 16, max: 6000 }),
        (texts, max) => {
          expect(jsonFits(texts, max)).toBe(Buffer.byteLength(JSON.stringify(texts)) <= max);
        },
      ),
    );
  });
});
