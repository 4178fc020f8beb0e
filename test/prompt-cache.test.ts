/**
 * R2.20 against a scripted provider whose prompt cache serves and bills as OpenAI's: a run's prompts keep their
 * prefix from turn to turn, so the cache serves most of a long run's input, and the run is debited what the provider
 * bills for it — cached input at the cached price — to the micro-dollar; the call's worst case stays uncached.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { billedMicroUsd } from '../src/testing/script-usage.js';
import { forTask, toolResultCount, type RecordedRequest } from '../src/testing/script.js';
import { useHarness } from './support/harness.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { parseConfig } from '../src/config/schema.js';

const PRICE = { inputPerMTokUsd: 1, cachedInputPerMTokUsd: 0.25, outputPerMTokUsd: 2 };
const h = useHarness({
  config: parseConfig({ ...delegationConfig(), prices: { 'test-model': PRICE } }),
  tools: DELEGATION_TOOLS,
});

/** A task long enough (some 1,500 tokens) for the provider to cache its prompt, as OpenAI's caches past 1,024. */
function longTask(name: string): string {
  const lines = Array.from({ length: 150 }, (_, i) => `Row ${i + 1}: keep the ledger of ${name} in order.`);
  return `${name}: add the numbers one by one with the calculator, then say the sum.\n${lines.join('\n')}`;
}

/** The prefix-stability of a run's prompts: each request begins with the whole of the one before, tools alike. */
function expectPrefixStable(calls: RecordedRequest[]): void {
  for (const [i, call] of calls.entries()) {
    if (i === 0) continue;
    const before = calls[i - 1]!.body;
    expect(call.body.tools, `turn ${i + 1}: its tools`).toEqual(before.tools);
    expect(call.body.messages.slice(0, before.messages.length), `turn ${i + 1}: its prompt's prefix`).toEqual(
      before.messages,
    );
  }
}

/** A run of `turns` turns, each but the last one calculation. */
function scriptRun(task: string, turns: number) {
  h.model.add({
    name: task.slice(0, 20),
    when: forTask(task),
    times: Infinity,
    reply: (r: RecordedRequest) =>
      toolResultCount(r) < turns - 1
        ? { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: toolResultCount(r), b: 1 } }] }
        : { text: 'the sum is done' },
  });
}

afterEach(() => {
  h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed' };
});

describe('R2.20 cost is the provider bill, cached input at its price', () => {
  it('R2.20 a ten-turn run against a provider with a prompt cache: each turn’s request begins with the whole of the one before, the cache serves most of the input, and the run is debited the provider’s bill to the micro-dollar', async () => {
    h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'counted', promptCache: true };
    const task = longTask('cached ledger');
    scriptRun(task, 10);
    const workflowId = h.id('cached');
    await h.deputy.startRun({ task, scopes: ['tools.calc'] }, { workflowId });
    expect((await h.deputy.result(workflowId)).status).toBe('completed');

    const calls = h.model.requests.filter(forTask(task));
    expect(calls).toHaveLength(10);
    // Prefix-stable: nothing that changes per turn comes before the newest messages, so the provider's cache can
    // serve every earlier part of the prompt.
    expectPrefixStable(calls);
    const input = calls.reduce((sum, r) => sum + r.billed!.prompt_tokens, 0);
    const cached = calls.reduce((sum, r) => sum + (r.billed!.prompt_tokens_details?.cached_tokens ?? 0), 0);
    expect(calls[0]!.billed!.prompt_tokens_details).toBeUndefined();
    expect(cached / input).toBeGreaterThan(0.75);

    const bill = calls.reduce((sum, r) => sum + billedMicroUsd(r.billed!, PRICE), 0);
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.usage.costMicroUsd).toBe(bill);
    expect(state.usage.billed.costMicroUsd).toBe(bill);
    expect(state.usage.inputTokens).toBe(input);
    // The same tokens priced uncached cost more: the discount is real, not a rounding.
    const uncached = calls.reduce(
      (sum, r) => sum + billedMicroUsd({ ...r.billed!, prompt_tokens_details: undefined }, PRICE),
      0,
    );
    expect(state.usage.costMicroUsd).toBeLessThan(uncached * 0.5);
  }, 120_000);

  it('R2.20 R2.19 a provider that reports no cache (or a cache past its input) is debited every input token at the full price', async () => {
    h.model.behaviour = {
      reads: 'both',
      reportsUsage: true,
      usage: 'counted',
      // A provider that claims to have served more from its cache than the call's whole input.
      bill: (request, counted) =>
        request.index % 2 === 0
          ? counted
          : { ...counted, prompt_tokens_details: { cached_tokens: counted.prompt_tokens * 10 } },
    };
    const task = longTask('uncached ledger');
    scriptRun(task, 4);
    const workflowId = h.id('uncached');
    await h.deputy.startRun({ task, scopes: ['tools.calc'] }, { workflowId });
    expect((await h.deputy.result(workflowId)).status).toBe('completed');

    const calls = h.model.requests.filter(forTask(task));
    const claimed = calls.filter((r) => r.billed!.prompt_tokens_details);
    expect(claimed.length).toBeGreaterThan(0);
    const state = RunState.parse(await h.deputy.getState(workflowId));
    // A claim past the input is no claim: that call's input is priced in full, as is every call that claims nothing.
    const expected = calls.reduce(
      (sum, r) => sum + billedMicroUsd({ ...r.billed!, prompt_tokens_details: undefined }, PRICE),
      0,
    );
    expect(state.usage.costMicroUsd).toBe(expected);
    expect(state.usage.costMicroUsd).toBeGreaterThan(0);
  }, 120_000);

  it('R2.20 a delegating parent’s prompts stay prefix-stable across its children’s results: its next turn is served from the cache', async () => {
    h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'counted', promptCache: true };
    const task = longTask('delegated ledger');
    h.model.add(
      {
        name: 'cache parent',
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'leaf', message: 'cache leaf: say done' }] }),
      },
      { name: 'cache leaf', when: forTask('cache leaf: say done'), reply: { text: 'done' } },
      { name: 'cache parent 2', when: forTask(task, 1), reply: { text: 'all done' } },
    );
    const workflowId = h.id('cached-parent');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId });
    expect((await h.deputy.result(workflowId)).status).toBe('completed');
    const calls = h.model.requests.filter((r) => r.rule === 'cache parent' || r.rule === 'cache parent 2');
    expect(calls.map((r) => r.rule)).toEqual(['cache parent', 'cache parent 2']);
    expectPrefixStable(calls);
    expect(calls[1]!.billed!.prompt_tokens_details?.cached_tokens).toBeGreaterThan(1024);
  }, 120_000);
});
