/**
 * R2.15: every billed attempt is debited, retried or not. A model call whose attempt was billed and gave no usable
 * answer (a stream dropped mid-answer, an empty summary) is retried by Temporal; what that attempt was billed — its
 * input once the endpoint accepted the request, and every token of the answer that arrived — is debited with the
 * retry's answer, or with the failure when no attempt succeeds. A usage report that is no token count is ignored,
 * never a credit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { forTask, userSays, type RecordedRequest } from '../src/testing/script.js';
import { countedInput, worstUsage } from '../src/testing/script-usage.js';
import {
  CHILD_USAGE,
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  isSummaryCall,
  PARENT_SCOPES,
  PARENT_USAGE,
} from './support/delegation.js';
import { useHarness } from './support/harness.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });

/** About `n` words of prose. */
const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i % 97} is here`).join(' ');

describe('R2.15 every billed attempt is debited', () => {
  it('R2.15 a stream dropped mid-answer is retried; the dropped attempt (its input and the answer that arrived) is debited with the retry', async () => {
    const task = 'billed: the connection drops mid-answer';
    h.model.add(
      { name: 'dropped', when: userSays(task), reply: { text: words(200), chunkDelayMs: 5, cutAfterChars: 400 } },
      {
        name: 'answered',
        when: userSays(task),
        reply: { text: 'the whole answer', usage: { prompt_tokens: 5000, completion_tokens: 20 } },
      },
    );
    const id = h.id('dropped');
    await h.deputy.startRun({ task }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'the whole answer' });
    const dropped = h.model.requests.find((r) => r.rule === 'dropped')!;
    expect(dropped.sentChars).toBe(400);
    expect(result.usage.modelCalls).toBe(1);
    // The dropped attempt's input as Deputy counted it (the endpoint never reported it), with the retry's 5,000.
    const billedInput = result.usage.inputTokens - 5000;

    expect(billedInput).toBeGreaterThan(0);
    expect(Math.ceil(billedInput * 1.25) + 16).toBe(worstUsage(dropped.body).prompt_tokens);
    // 400 characters of "wordN is here" arrived before the drop: far more than 40 tokens, with the retry's 20.
    expect(result.usage.outputTokens).toBeGreaterThan(20 + 40);
    expect(result.usage.costMicroUsd).toBe(result.usage.inputTokens + 2 * result.usage.outputTokens);
  }, 60_000);

  it('R2.15 a stream that reports its usage and then never ends is retried; the stalled attempt is debited what the endpoint reported, not Deputy’s smaller count', async () => {
    const task = 'billed: the whole answer and its usage, then silence';
    h.model.add(
      {
        name: 'stalls after usage',
        when: userSays(task),
        reply: {
          text: 'an answer that never ends',
          usage: { prompt_tokens: 7000, completion_tokens: 30 },
          stallAfterUsage: true,
        },
      },
      {
        name: 'answered',
        when: userSays(task),
        reply: { text: 'the whole answer', usage: { prompt_tokens: 5000, completion_tokens: 20 } },
      },
    );
    const id = h.id('stall-after-usage');
    await h.deputy.startRun({ task }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'the whole answer' });
    const stalled = h.model.requests.find((r) => r.rule === 'stalls after usage')!;
    expect(stalled).toMatchObject({ aborted: true, billed: { prompt_tokens: 7000, completion_tokens: 30 } });
    // Deputy counts this short input as far fewer than 7,000 tokens: only the report makes the sum.
    expect(worstUsage(stalled.body).prompt_tokens).toBeLessThan(1000);
    expect(result.usage).toMatchObject({ inputTokens: 12_000, outputTokens: 50, totalTokens: 12_050, modelCalls: 1 });
  }, 60_000);

  it('R2.15 a run cancelled while a billed attempt waits for its retry is still debited that attempt', async () => {
    const task = 'billed: usage and no answer, then cancelled before the retry';
    h.model.add({ name: 'the retry hangs', when: userSays(task), reply: { hang: true } });
    const first = (r: RecordedRequest) => userSays(task)(r) && r === h.model.requests.find(userSays(task));
    h.model.behaviour = { ...h.model.behaviour, billsWithoutAnswer: first };
    try {
      const id = h.id('cancel-in-backoff');
      await h.deputy.startRun({ task }, { workflowId: id });
      while (!h.model.requests.some((r) => first(r) && r.billed)) await sleep(10);
      // Temporal waits a second before the retry: the cancel lands while no attempt runs.
      await h.deputy.cancel(id);
      const result = await h.deputy.result(id);
      expect(result.status).toBe('cancelled');
      const billed = h.model.requests.filter((r) => userSays(task)(r) && r.billed);
      expect(billed).toHaveLength(1);
      expect(result.usage.inputTokens).toBe(billed[0]!.billed!.prompt_tokens);
      expect(result.usage.outputTokens).toBe(billed[0]!.billed!.completion_tokens);
    } finally {
      h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed' };
    }
  }, 60_000);

  it('R2.15 an empty background summary is paid for; the retry that writes one is debited with it', async () => {
    const task = 'billed: an empty summary first';
    // Billed as Deputy counts: the summary's hold pays for its retry too.
    h.model.add(
      {
        name: 'empty summary',
        when: (r) => isSummaryCall(r) && userSays(task)(r),
        reply: { text: '', usage: 'counted' },
      },
      {
        name: 'summary',
        when: (r) => isSummaryCall(r) && userSays(task)(r),
        reply: { text: 'Background: the order ships to Springfield.', usage: 'counted' },
      },
      {
        name: 'billed child',
        when: userSays('billed summary child'),
        reply: { text: 'child done', usage: CHILD_USAGE },
      },
      {
        when: (r) => forTask(task, 0)(r) && !isSummaryCall(r),
        reply: delegateReply(
          { briefs: [{ task_name: 'c', message: 'billed summary child', context: 'summary' }] },
          PARENT_USAGE,
        ),
      },
      {
        name: `${task}:join`,
        when: (r) => forTask(task, 1)(r) && !isSummaryCall(r),
        reply: { text: 'parent done', usage: PARENT_USAGE },
      },
    );
    const id = h.id('empty-summary');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'parent done' });
    const [first, second] = h.model.requests.filter((r) => r.rule === 'empty summary' || r.rule === 'summary');
    expect([first!.rule, second!.rule]).toEqual(['empty summary', 'summary']);
    // Two own calls, the child, and both summary attempts: the empty one's input included.
    const summaries = result.usage.totalTokens - 2 * 5100 - 520;
    const written = summaries - countedInput(first!) - countedInput(second!);
    expect(written, 'the summary text, as counted').toBeGreaterThanOrEqual(5);
    expect(written).toBeLessThanOrEqual(30);
    expect(RunState.parse(await h.deputy.getState(id)).reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
  });

  it('R2.15 a summary that stays empty on every attempt: the child never starts, the hold is released and every attempt is debited', async () => {
    const task = 'billed: the summary stays empty';
    h.model.add(
      {
        name: 'always empty',
        when: (r) => isSummaryCall(r) && userSays(task)(r),
        times: Infinity,
        reply: { text: '', usage: 'counted' },
      },
      {
        when: (r) => forTask(task, 0)(r) && !isSummaryCall(r),
        reply: delegateReply(
          { briefs: [{ task_name: 'c', message: 'never starts', context: 'summary' }] },
          PARENT_USAGE,
        ),
      },
      {
        name: `${task}:join`,
        when: (r) => forTask(task, 1)(r) && !isSummaryCall(r),
        reply: { text: 'went on without it', usage: PARENT_USAGE },
      },
    );
    const id = h.id('always-empty');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'went on without it' });
    // The attempts share the summary's hold: they go on until five were made or the next one no longer fits in what
    // the earlier ones left of it.
    const attempts = h.model.requests.filter((r) => r.rule === 'always empty');
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    expect(attempts.length).toBeLessThanOrEqual(5);
    const state = RunState.parse(await h.deputy.getState(id));
    expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    // The child never started; the summary is the parent's own spend, so the child's row shows none.
    expect(state.delegations.map((d) => [d.status, d.actual])).toEqual([['rejected', { tokens: 0, costMicroUsd: 0 }]]);
    expect(state.delegations[0]!.summary).toMatch(
      new RegExp(
        `^could not summarise this run's context for the child: the model call failed ${attempts.length} times over \\d+ s, and the run gave up: ` +
          'test-model returned an empty background summary; .+; the child was not started$',
      ),
    );
    const billed = attempts.reduce((sum, r) => sum + countedInput(r), 0);
    expect(result.usage.totalTokens).toBe(2 * 5100 + billed);
    expect(result.usage.costMicroUsd).toBe(2 * 5200 + billed);
  }, 60_000);

  it('R2.15 a usage report that is no token count (negative, not a number) is ignored: Deputy’s count is debited, never less, never NaN', async () => {
    const task = `billed: impossible usage for ${words(40)}`;
    h.model.add({
      name: 'impossible',
      when: userSays(task),
      // A string where a count belongs: JSON lets an endpoint send one.
      reply: { text: words(50), usage: { prompt_tokens: -90_000, completion_tokens: 'many' as unknown as number } },
    });
    const id = h.id('impossible');
    await h.deputy.startRun({ task }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result.status).toBe('completed');
    const request = h.model.requests.find((r) => r.rule === 'impossible')!;
    expect(result.usage.inputTokens).toBe(countedInput(request));
    expect(result.usage.outputTokens).toBeGreaterThan(100); // 50 × "wordN is here"
    expect(result.usage.costMicroUsd).toBe(result.usage.inputTokens + 2 * result.usage.outputTokens);
  });
});
