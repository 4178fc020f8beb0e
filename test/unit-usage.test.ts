/**
 * R2.19 Usage twice, labelled: what the endpoints billed (their reports; Deputy's count where none) beside what the
 * budget debited (the larger of report and count), summed down the tree the same way, read defensively from a child.
 */
import { describe, expect, it } from 'vitest';
import {
  addModelCall,
  addSpend,
  billedDiffers,
  billedOf,
  billedTokens,
  callSpend,
  impossibleUsage,
  labelledUsage,
  ZERO_USAGE,
} from '../src/rules/usage.js';

const PRICE = { inputMicroUsdPerMTok: 1_000_000, outputMicroUsdPerMTok: 4_000_000 };

describe('R2.19 usage billed and usage debited', () => {
  it('an endpoint that reports 1,000 input tokens where Deputy counted 1,381: debited 1,381, billed 1,000', () => {
    const reply = { inputTokens: 1381, outputTokens: 50, billed: { inputTokens: 1000, outputTokens: 50 } };
    const usage = addModelCall(ZERO_USAGE, callSpend(reply, PRICE));
    expect(usage).toEqual({
      inputTokens: 1381,
      outputTokens: 50,
      totalTokens: 1431,
      costMicroUsd: 1581,
      modelCalls: 1,
      toolCalls: 0,
      billed: { inputTokens: 1000, outputTokens: 50, costMicroUsd: 1200 },
    });
    expect(billedDiffers(usage)).toBe(true);
    expect(labelledUsage(usage)).toEqual({
      own: 'own 1 model + 0 tool calls',
      tree: 'tree 1431 tok $0.001581',
      billed: 'billed 1050 tok $0.001200',
    });
  });

  it('a call whose result says nothing of billing, or says more than was debited, is billed what was debited', () => {
    expect(billedTokens({ inputTokens: 10, outputTokens: 5 })).toEqual({ inputTokens: 10, outputTokens: 5 });
    expect(billedTokens({ inputTokens: 10, outputTokens: 5, billed: null })).toEqual({
      inputTokens: 10,
      outputTokens: 5,
    });
    expect(billedTokens({ inputTokens: 10, outputTokens: 5, billed: { inputTokens: -1, outputTokens: 2 } })).toEqual({
      inputTokens: 10,
      outputTokens: 5,
    });
    // Billed is never more than debited: the debit is the larger of the two, each direction.
    expect(billedTokens({ inputTokens: 10, outputTokens: 5, billed: { inputTokens: 99, outputTokens: 2 } })).toEqual({
      inputTokens: 10,
      outputTokens: 2,
    });
    const usage = addModelCall(ZERO_USAGE, callSpend({ inputTokens: 10, outputTokens: 5 }, PRICE));
    expect(usage.billed).toEqual({ inputTokens: 10, outputTokens: 5, costMicroUsd: usage.costMicroUsd });
    expect(billedDiffers(usage)).toBe(false);
  });

  it("a child's billed figures add to its parent's; a child's report that is no count, or too large, reads as its debit", () => {
    const child = callSpend(
      { inputTokens: 400, outputTokens: 100, billed: { inputTokens: 300, outputTokens: 100 } },
      PRICE,
    );
    expect(child).toEqual({
      inputTokens: 400,
      outputTokens: 100,
      costMicroUsd: 800,
      billed: { inputTokens: 300, outputTokens: 100, costMicroUsd: 700 },
    });
    const parent = addSpend(addModelCall(ZERO_USAGE, callSpend({ inputTokens: 20, outputTokens: 0 }, PRICE)), child);
    expect(parent.billed).toEqual({ inputTokens: 320, outputTokens: 100, costMicroUsd: 720 });
    expect([parent.totalTokens, parent.costMicroUsd, parent.modelCalls]).toEqual([520, 820, 1]);

    const debited = { inputTokens: 400, outputTokens: 100, costMicroUsd: 800 };
    for (const billed of [
      undefined,
      'lots',
      { inputTokens: 1, outputTokens: 1 },
      { inputTokens: 1, outputTokens: 1, costMicroUsd: 1.5 },
      { inputTokens: '1', outputTokens: 1, costMicroUsd: 1 },
    ]) {
      expect(billedOf({ ...debited, billed })).toEqual(debited);
    }
    // A child that says it was billed more than it was charged is billed what it was charged.
    expect(billedOf({ ...debited, billed: { inputTokens: 9e9, outputTokens: 1, costMicroUsd: 9e9 } })).toEqual({
      inputTokens: 400,
      outputTokens: 1,
      costMicroUsd: 800,
    });
  });

  it('a result whose usage no call can have is named, each count with what it said; a possible one is not', () => {
    expect(impossibleUsage({ inputTokens: 0, outputTokens: 12 })).toBeNull();
    expect(impossibleUsage({ inputTokens: -1, outputTokens: 1.5 })).toBe('inputTokens -1, outputTokens 1.5');
    expect(impossibleUsage({ inputTokens: 2 ** 53, outputTokens: '3' })).toBe(
      'inputTokens 9007199254740992, outputTokens "3"',
    );
    expect(impossibleUsage({ outputTokens: 1 })).toBe('inputTokens missing');
    expect(impossibleUsage(null)).toBe('inputTokens missing, outputTokens missing');
  });

  it('billed differs from debited when the tokens differ, or the cost alone does', () => {
    const usage = addModelCall(ZERO_USAGE, callSpend({ inputTokens: 10, outputTokens: 5 }, PRICE));
    expect(billedDiffers(usage)).toBe(false);
    expect(billedDiffers({ ...usage, billed: { ...usage.billed, costMicroUsd: usage.costMicroUsd - 1 } })).toBe(true);
    expect(billedDiffers({ ...usage, billed: { ...usage.billed, inputTokens: 9 } })).toBe(true);
  });
});
