/**
 * R2.13 (caps Deputy enforces itself) and R6.6 (live output), against a scripted provider that behaves as servers no
 * one here wrote do: one that reads only `max_tokens`, one that reads no cap at all, one that sends no usage. Deputy
 * streams every call, counts the answer as it arrives and stops it at the cap, debits the larger of the server's
 * report and its own count, and heartbeats the answer's progress, which a watcher reads from Temporal's records.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { capParameters } from '../activities/model-request.js';
import type { WatchEvent } from '../src/client/watch-events.js';
import { userSays, type ProviderBehaviour } from '../src/testing/script.js';
import { worstUsage } from '../src/testing/script-usage.js';
import { testConfig, useHarness } from './support/harness.js';
import { loadTree } from '../src/client/inspect.js';
import { renderTree } from '../src/client/tree.js';

const h = useHarness({ config: testConfig() });

afterEach(() => {
  h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed' };
});

/** About `n` words of prose: far more than any cap below. */
const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i % 97} is here`).join(' ');

const PROVIDERS: [string, ProviderBehaviour][] = [
  ['reads no cap parameter, reports usage', { reads: 'none', reportsUsage: true }],
  ['reads no cap parameter, sends no usage', { reads: 'none', reportsUsage: false }],
  ['reads only max_tokens, sends no usage', { reads: 'max_tokens', reportsUsage: false }],
];

describe('R2.13 caps Deputy enforces itself', () => {
  for (const [label, behaviour] of PROVIDERS) {
    it(`R2.13 a provider that ${label}: every maxTokens from 100 to 2,000 holds while the model is asked for 5,000 words`, async () => {
      h.model.behaviour = { reads: 'both', reportsUsage: true, usage: 'fixed', ...behaviour };
      const figures: string[] = [];
      for (const maxTokens of [100, 300, 600, 1000, 2000]) {
        const task = `caps [${label}] ${maxTokens}: write 5,000 words`;
        // Written as a model writes, a piece at a time: a provider that reads no cap would go on for seconds.
        h.model.add({ name: task, when: userSays(task), reply: { text: words(5000), chunkDelayMs: 2 }, times: 20 });
        const id = h.id('caps');
        await h.deputy.startRun(
          { task, limits: { maxTokens, maxTurns: 3, synthesisReserve: false } },
          { workflowId: id },
        );
        const result = await h.deputy.result(id);
        expect(['completed', 'limit_reached']).toContain(result.status);
        expect(result.usage.totalTokens, `${label} maxTokens ${maxTokens}`).toBeLessThanOrEqual(maxTokens);
        const requests = h.model.requests.filter((r) => r.rule === task);
        if (maxTokens >= 300) {
          // The model was called, and each answer was stopped by Deputy: the provider would have written 5,000 words.
          expect(requests.length).toBeGreaterThan(0);
          expect(requests.every((r) => (r.sentChars ?? 0) < words(5000).length)).toBe(true);
          expect(result.output?.length ?? 0).toBeGreaterThan(0);
        }
        figures.push(`maxTokens ${maxTokens}: used ${result.usage.totalTokens} (${result.usage.outputTokens} out)`);
      }
      console.log(`R2.13 ${label}:\n  ${figures.join('\n  ')}`);
    }, 120_000);
  }

  it('R2.13 the cap goes in the parameter the endpoint reads: both to an endpoint Deputy does not know, max_completion_tokens to OpenAI', async () => {
    const task = 'caps: which parameter';
    h.model.add({ name: task, when: userSays(task), reply: { text: 'short' } });
    const id = h.id('cap-param');
    await h.deputy.startRun({ task, limits: { maxTokens: 5000, synthesisReserve: false } }, { workflowId: id });
    await h.deputy.result(id);
    const [request] = h.model.requests.filter((r) => r.rule === task);
    expect(request!.body.stream).toBe(true);
    expect(request!.body.stream_options).toEqual({ include_usage: true });
    expect(request!.body.max_tokens).toBe(request!.body.max_completion_tokens);
    expect(request!.body.max_completion_tokens).toBeGreaterThan(4000);
    expect(capParameters('auto', 'https://api.openai.com/v1', 50)).toEqual({ max_completion_tokens: 50 });
    expect(capParameters('auto', 'http://127.0.0.1:8000/v1', 50)).toEqual({
      max_completion_tokens: 50,
      max_tokens: 50,
    });
    expect(capParameters('max_tokens', 'https://api.openai.com/v1', 50)).toEqual({ max_tokens: 50 });
  });

  it('R2.13 usage debited is the larger of the report and the count: a provider that reports 1 token each way for a long prompt and answer is charged what Deputy counted', async () => {
    const task = `caps: an under-reporting provider; the task itself is long: ${words(100)}`;
    const text = words(200);
    h.model.add({
      name: 'under-report',
      when: userSays(task),
      reply: { text, usage: { prompt_tokens: 1, completion_tokens: 1 } },
    });
    const id = h.id('under-report');
    await h.deputy.startRun({ task, limits: { maxTokens: 50_000, synthesisReserve: false } }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result.output).toBe(text);
    // 100 × "wordN is here" in the task alone: hundreds of tokens however they are counted.
    expect(result.usage.inputTokens).toBeGreaterThan(300);
    expect(result.usage.outputTokens).toBeGreaterThan(600); // 200 × "wordN is here", counted with the tokenizer
    // Exactly Deputy's count: the estimate a call is fitted with is that count with the margin for a model the
    // tokenizer does not know (×1.25 + 16).
    const [request] = h.model.requests.filter((r) => r.rule === 'under-report');
    expect(Math.ceil(result.usage.inputTokens * 1.25) + 16).toBe(worstUsage(request!.body).prompt_tokens);
  });

  it('R2.13 usage debited is the larger of the report and the count: a provider whose tokenizer counts more input than Deputy is charged its own figure', async () => {
    const task = 'caps: an over-counting provider';
    h.model.add({
      name: task,
      when: userSays(task),
      reply: { text: 'short', usage: { prompt_tokens: 9000, completion_tokens: 700 } },
    });
    const id = h.id('over-report');
    await h.deputy.startRun({ task, limits: { maxTokens: 50_000, synthesisReserve: false } }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result.usage).toMatchObject({ inputTokens: 9000, outputTokens: 700, totalTokens: 9700 });
  });

  it('R2.15 R2.13 an answer the provider ends at the cap is read to its usage report: debited what the provider billed, its own input count included', async () => {
    const task = 'caps: a provider that keeps to the cap and counts a little more input';
    // Ten tokens more input than Deputy counts: within the margin its reservation keeps for an unknown tokenizer.
    h.model.behaviour = {
      reads: 'both',
      reportsUsage: true,
      usage: 'fixed',
      bill: (_request, counted) => ({ ...counted, prompt_tokens: counted.prompt_tokens + 10 }),
    };
    h.model.add({ name: task, when: userSays(task), reply: { text: words(5000) }, times: 3 });
    const id = h.id('cap-report');
    await h.deputy.startRun(
      { task, limits: { maxTokens: 2000, maxTurns: 1, synthesisReserve: false } },
      { workflowId: id },
    );
    const result = await h.deputy.result(id);
    const requests = h.model.requests.filter((r) => r.rule === task);
    expect(requests.length).toBeGreaterThan(0);
    // The provider stopped each answer at the cap it was sent, and billed it.
    for (const request of requests) {
      expect(request.billed?.completion_tokens).toBe(request.body.max_completion_tokens);
    }
    const sum = (key: 'prompt_tokens' | 'completion_tokens') =>
      requests.reduce((total, request) => total + (request.billed?.[key] ?? 0), 0);
    expect(result.usage).toMatchObject({ inputTokens: sum('prompt_tokens'), outputTokens: sum('completion_tokens') });
    expect(result.usage.totalTokens).toBeLessThanOrEqual(2000);
  });
});

describe('R6.6 a stream that stalls', () => {
  it('R6.6 R1.2 a stream that stops mid-answer is abandoned at the heartbeat timeout and the call retried', async () => {
    const task = 'stall: begin, then go quiet';
    h.model.add(
      { name: 'stalls', when: userSays(task), reply: { text: words(100), stallAfterChars: 64 } },
      { name: 'retried', when: userSays(task), reply: { text: 'the whole answer' } },
    );
    const id = h.id('stall');
    await h.deputy.startRun({ task }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'the whole answer' });
    const [stalled, retried] = h.model.requests.filter((r) => r.rule === 'stalls' || r.rule === 'retried');
    expect(stalled).toMatchObject({ rule: 'stalls', aborted: true, sentChars: 64 });
    expect(retried!.rule).toBe('retried');
    const history = await h.client.workflow.getHandle(id).fetchHistory();
    // The workflow retries a model call itself: the abandoned attempt is an activity of its own that failed.
    const failures = (history.events ?? []).flatMap(
      (e) => (e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes)?.failure?.message ?? [],
    );
    // Abandoned by the worker (the stream brought nothing for the heartbeat timeout) or, at the same moment, by the
    // server (no heartbeat came): either way the attempt failed and the call was retried.
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatch(/stopped sending its answer for 10 s for test-model|activity Heartbeat timeout/);
  }, 60_000);
});

describe('R6.6 live output', () => {
  it('R6.6 a streaming call heartbeats its progress, to the server at most once in 4 s; a watcher shows the answer as it is written, before the call ends', async () => {
    const task = 'live: write slowly';
    const text = words(100);
    // About 10 s of streaming: the worker sends its progress when it starts and then at most every 4 seconds.
    const chunkDelayMs = Math.round(10_000 / Math.ceil(text.length / 16));
    h.model.add({ name: task, when: userSays(task), reply: { text, chunkDelayMs } });
    const id = h.id('live');
    const started = Date.now();
    await h.deputy.startRun({ task }, { workflowId: id });
    const seen: WatchEvent[] = [];
    let firstLiveMs: number | undefined;
    for await (const event of h.deputy.watch(id)) {
      seen.push(event);
      if (event.type === 'model/progress') firstLiveMs ??= Date.now() - started;
    }
    const progress = seen.filter(
      (e): e is Extract<WatchEvent, { type: 'model/progress' }> => e.type === 'model/progress',
    );
    expect(progress.length).toBeGreaterThan(1);
    // Each progress event is a heartbeat the server recorded: 500 ms pieces of progress would make about 20.
    expect(progress.length).toBeLessThanOrEqual(4);
    const finished = seen.findIndex((e) => e.type === 'model/finished');
    expect(seen.indexOf(progress[0]!)).toBeLessThan(finished); // live output came before the call ended
    expect(text.startsWith(progress[0]!.partial)).toBe(true);
    expect(progress.at(-1)!.outputTokens).toBeGreaterThan(progress[0]!.outputTokens);
    expect((await h.deputy.result(id)).output).toBe(text);
    console.log(`R6.6 time to first live token at the watcher: ${firstLiveMs} ms; ${progress.length} progress events`);
  });
});

describe('R2.19 a provider that sends no usage', () => {
  it('R2.19 with no report, billed is Deputy’s count, the same as debited, in the result, the watch and the tree', async () => {
    h.model.behaviour = { reads: 'both', reportsUsage: false, usage: 'fixed' };
    const task = 'usage: a provider that says nothing of it';
    h.model.add(
      {
        name: `${task} 0`,
        when: userSays(task, 0),
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 2, b: 3 } }] },
      },
      { name: `${task} 1`, when: userSays(task, 1), reply: { text: words(40) } },
    );
    const id = h.id('no-usage');
    await h.deputy.startRun({ task }, { workflowId: id });
    const { usage } = await h.deputy.result(id);
    expect(usage.modelCalls).toBe(2);
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.billed).toEqual({
      inputTokens: usage.inputTokens,
      outputTokens: usage.outputTokens,
      costMicroUsd: usage.costMicroUsd,
    });
    const finished: WatchEvent[] = [];
    for await (const event of h.deputy.watch(id)) if (event.type === 'model/finished') finished.push(event);
    expect(finished).toHaveLength(2);
    for (const event of finished) {
      if (event.type !== 'model/finished') continue;
      expect(event.billed).toEqual({
        inputTokens: event.inputTokens,
        outputTokens: event.outputTokens,
        costUsd: event.costUsd,
      });
    }
    // Nothing to tell apart: no billed note.
    const tree = renderTree(await loadTree(h.client, id));
    expect(tree).toContain(`tree ${usage.totalTokens} tok`);
    expect(tree).not.toContain('billed');
  });
});
