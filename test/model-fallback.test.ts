/**
 * R8.3 model fallback against a scripted provider whose first model rate-limits and then goes down: the run's calls
 * move on to its fallback model after the failures the config allows of a kind, each priced at the model that
 * answered; the run stays on it; its session, the watch and `deputy tree` name the model and why; the fallback is
 * offered the same tools; and a call is fitted at the dearest model it may reach.
 */
import { describe, expect, it } from 'vitest';
import { loadTree } from '../src/client/inspect.js';
import { renderTree } from '../src/client/tree.js';
import { RunState } from '../src/contract/run.js';
import { forTask, toolResultCount, userSays, type RecordedRequest } from '../src/testing/script.js';
import { isSummaryCall } from './support/delegation.js';
import { testConfig, useHarness } from './support/harness.js';

const CONFIG = testConfig({
  prices: {
    'test-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 },
    'spare-model': { inputPerMTokUsd: 3, outputPerMTokUsd: 12 },
  },
  fallbackModels: ['spare-model'],
  modelFallback: { rateLimited: 2, serverError: 2 },
  modelRetry: { maxIntervalSeconds: 1 },
  delegation: { enabled: true, activation: 'unconditional' },
});
const h = useHarness({ config: CONFIG });

const on = (model: string, task: string) => (r: RecordedRequest) => forTask(task)(r) && r.body.model === model;

describe('R8.3 model fallback', () => {
  it('R8.3 a provider that rate-limits the run’s model and then goes down: the run completes on its fallback model, priced at its price, stays on it, and its session, the watch and the tree name the model and why', async () => {
    const task = 'fallback: add one and two';
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    h.model.add(
      {
        name: 'rate limited',
        when: on('test-model', task),
        reply: { status: 429, message: 'slow down', headers: { 'retry-after': '1' } },
      },
      { name: 'down', when: on('test-model', task), times: Infinity, reply: { status: 503, message: 'overloaded' } },
      {
        name: 'spare',
        when: on('spare-model', task),
        times: Infinity,
        reply: async (r) => {
          if (toolResultCount(r) === 0)
            return { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 1, b: 2 } }] };
          await released; // the run is held in its second turn while the tree is looked at
          return { text: 'three, from the spare' };
        },
      },
    );
    const workflowId = h.id('fallback');
    await h.deputy.startRun({ task, scopes: ['tools.calc'] }, { workflowId });

    // While the run waits on its second turn, the tree says which model answers it and why.
    let tree = '';
    for (let i = 0; i < 100 && !tree.includes('answered by'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      tree = renderTree(await loadTree(h.client, workflowId), { width: 400 });
    }
    expect(tree).toContain(' · answered by spare-model (test-model failed on the server 2 times)');
    release();
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'three, from the spare' });

    // A 429, then two 503s (the second server error is the last the config allows), then the spare, which the second
    // turn goes to straight away.
    const requests = h.model.requests.filter(forTask(task));
    expect(requests.map((r) => [r.body.model, r.rule])).toEqual([
      ['test-model', 'rate limited'],
      ['test-model', 'down'],
      ['test-model', 'down'],
      ['spare-model', 'spare'],
      ['spare-model', 'spare'],
    ]);
    // The fallback is offered exactly the tools the run's own model was: a fallback never widens them.
    const toolNames = (r: RecordedRequest) => (r.body.tools ?? []).map((t) => t.function.name).sort();
    expect(toolNames(requests[3]!)).toEqual(toolNames(requests[0]!));

    // Priced at the spare's $3 / $12 per million tokens, not the run's own $1 / $2: nothing was billed before it.
    const { usage } = result;
    expect(usage.modelCalls).toBe(2);
    expect(usage.costMicroUsd).toBeGreaterThan(0);
    expect(usage.costMicroUsd).toBeLessThanOrEqual(usage.inputTokens * 3 + usage.outputTokens * 12 + 2);
    expect(usage.costMicroUsd).toBeGreaterThanOrEqual(usage.inputTokens * 3 + usage.outputTokens * 12);

    // The session names the model of each answer from the spare, and why.
    const state = RunState.parse(await h.deputy.getState(workflowId));
    const answers = state.session.filter((e) => e.type === 'message/assistant');
    expect(answers).toHaveLength(2);
    for (const answer of answers) {
      expect(answer).toMatchObject({ model: 'spare-model', fallback: 'test-model failed on the server 2 times' });
    }

    // The watch: each attempt's model; those on the spare say why.
    const started: [string, string | undefined][] = [];
    for await (const event of h.deputy.watch(workflowId)) {
      if (event.type === 'model/started') started.push([event.model, event.fallback]);
    }
    expect(started).toEqual([
      ['test-model', undefined],
      ['test-model', undefined],
      ['test-model', undefined],
      ['spare-model', 'test-model failed on the server 2 times'],
      ['spare-model', 'test-model failed on the server 2 times'],
    ]);
  });

  it('R8.3 a turn its own model answers names no fallback, though a child’s summary beside it moved the run on meanwhile', async () => {
    const task = 'fallback: a turn beside a summary';
    let moved!: () => void;
    const chainMoved = new Promise<void>((resolve) => (moved = resolve));
    h.model.add(
      // The summary for a detached child fails on the run's own model twice: the run's calls move on to the spare.
      {
        name: 'summary down',
        when: (r) => isSummaryCall(r) && r.body.model === 'test-model',
        times: Infinity,
        reply: { status: 503, message: 'overloaded' },
      },
      {
        name: 'summary on the spare',
        when: (r) => isSummaryCall(r) && r.body.model === 'spare-model',
        reply: () => {
          moved();
          return { text: 'the parent is adding numbers' };
        },
      },
      {
        name: 'delegate',
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: { briefs: [{ task_name: 'side', message: 'side work', context: 'summary', wait: false }] },
            },
          ],
        },
      },
      // The parent's next turn went out on its own model before the summary moved the run on, and answers after.
      {
        name: 'turn on its own model',
        when: (r) => forTask(task, 1)(r) && r.body.model === 'test-model',
        reply: async () => {
          await chainMoved;
          return { text: 'done, on my own model' };
        },
      },
      { name: 'child', when: userSays('side work'), times: Infinity, reply: { text: 'side done' } },
      // The child's result may wake the parent once more: that turn goes to the spare, where the run's calls are now.
      { name: 'later turn', when: (r) => forTask(task)(r) && r.body.model === 'spare-model', reply: { text: 'noted' } },
    );
    const workflowId = h.id('fallback-beside');
    await h.deputy.startRun({ task, scopes: ['tools.calc', 'run.delegate'] }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result.status).toBe('completed');
    const rules = h.model.requests.filter((r) => r.rule !== 'child').map((r) => r.rule);
    expect(rules).toContain('summary on the spare');
    expect(rules).toContain('turn on its own model');

    const state = RunState.parse(await h.deputy.getState(workflowId));
    const answers = state.session.filter((e) => e.type === 'message/assistant');
    // Answered by the run's own model (the delegate call, then the turn beside the summary): neither names a model
    // or a fallback; a later answer from the spare names both.
    const own = answers.filter((e) => e.type === 'message/assistant' && e.model === undefined);
    expect(answers[0]).not.toHaveProperty('fallback');
    const beside = answers.find((e) => e.content === 'done, on my own model');
    expect(beside).toBeDefined();
    expect(beside).not.toHaveProperty('fallback');
    expect(beside).not.toHaveProperty('model');
    for (const later of answers.filter((e) => e.content === 'noted')) {
      expect(later).toMatchObject({ model: 'spare-model', fallback: 'test-model failed on the server 2 times' });
    }
    expect(own.length).toBeGreaterThanOrEqual(2);
  });

  it('R8.3 R2.13 a call is fitted at the dearest model it may reach: its answer cap leaves room for the fallback’s price, and the run stays within its cost', async () => {
    const task = 'fallback: a tight budget';
    h.model.add(
      { name: 'down', when: on('test-model', task), times: 2, reply: { status: 500, message: 'broken' } },
      { name: 'spare', when: on('spare-model', task), reply: { text: 'short answer', usage: 'worst' } },
    );
    const workflowId = h.id('dearest');
    // $0.01: at the run's own $2 per million answer tokens a call could ask for thousands; at the spare's $12, some
    // eight hundred once its input is paid for.
    await h.deputy.startRun({ task, limits: { maxCostUsd: 0.01 } }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'short answer' });
    const requests = h.model.requests.filter(forTask(task));
    expect(requests.map((r) => r.body.model)).toEqual(['test-model', 'test-model', 'spare-model']);
    for (const request of requests) {
      const cap = Number(request.body.max_completion_tokens);
      expect(cap).toBeGreaterThan(0);
      expect(cap).toBeLessThan(10_000 / 12);
    }
    // The spare answered with the most its cap allowed: still within the run's limit.
    expect(result.usage.costMicroUsd).toBeLessThanOrEqual(10_000);
  });
});
