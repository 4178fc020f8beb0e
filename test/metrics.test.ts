/**
 * Deputy's metrics, read from the worker runtime's Prometheus endpoint (this test file's process installs
 * the runtime with it, before any connection): refusals by reason, a synthesis ending and a limit ending, tokens and
 * cost by model, preset and tenant. The demo's run (delegations, reservations) is checked by test/ui.test.ts.
 */
import { testLogger } from './support/logs.js';
import { Runtime } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { runtimeTelemetry } from '../src/ops/metrics.js';
import { freePort } from '../src/testing/ports.js';
import { forTask, userSays, type RecordedRequest } from '../src/testing/script.js';
import { worstUsage } from '../src/testing/script-usage.js';
import type { Harness } from './support/harness.js';
import type * as Delegation from './support/delegation.js';

let h: Harness;
let metricsUrl: string;
let support: typeof Delegation;
beforeAll(async () => {
  const bindAddress = `127.0.0.1:${await freePort()}`;
  Runtime.install({
    logger: testLogger(),
    telemetryOptions: runtimeTelemetry({ DEPUTY_METRICS_ADDRESS: bindAddress }),
  });
  metricsUrl = `http://${bindAddress}/metrics`;
  // Imported after the runtime is installed: the harness installs one of its own when none is.
  const { createHarness } = await import('./support/harness.js');
  support = await import('./support/delegation.js');
  const { delegationConfig, DELEGATION_TOOLS } = support;
  h = await createHarness();
  // Searches for "needs approval" wait for a decision: the approvals test's.
  const approvals = { tools: { search_notes: { when: { properties: { query: { const: 'needs approval' } } } } } };
  const { parseConfig } = await import('../src/config/schema.js');
  await h.startWorker({ config: parseConfig({ ...delegationConfig(), approvals }), tools: DELEGATION_TOOLS });
  return () => h.close();
});

/** The sum of `name`'s series that carry every one of `tags` (`key="value"`), once it is at least `atLeast`. */
async function metric(name: string, tags: string[], atLeast = 1): Promise<number> {
  let value = 0;
  for (let i = 0; i < 50; i++) {
    const text = await (await fetch(metricsUrl)).text();
    value = text
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`) && tags.every((tag) => line.includes(tag)))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    if (value >= atLeast) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return value;
}

describe('R6.2 Deputy metrics', () => {
  it('refusals are counted by reason; a synthesis ending and a limit ending by status, limit and synthesis', async () => {
    const { delegateReply, PARENT_SCOPES } = support;
    const task = 'metrics: refused delegations';
    h.model.add(
      { when: forTask(task, 0), reply: delegateReply({ briefs: 'not a list' }) },
      { when: forTask(task, 1), reply: delegateReply({ briefs: [{ task_name: 'x', message: 'm', role: 'nobody' }] }) },
      { when: forTask(task, 2), reply: { text: 'gave up delegating' } },
    );
    const refusing = h.id('refusing');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: refusing });
    expect((await h.deputy.result(refusing)).status).toBe('completed');
    expect(await metric('deputy_delegations_refused_total', ['reason="invalid_arguments"'])).toBe(1);
    expect(await metric('deputy_delegations_refused_total', ['reason="unknown_preset"'])).toBe(1);
    expect(await metric('deputy_delegations_started_total', [], 0)).toBe(0);

    const calc = { name: 'calculate', arguments: { operation: 'add', a: 1, b: 2 } };
    const synthesis = 'metrics: synthesis on the last turn';
    h.model.add(
      { when: forTask(synthesis, 0), reply: { text: 'looking', toolCalls: [calc] } },
      { when: forTask(synthesis, 1), reply: { text: 'final: 3' } },
    );
    const synthesised = h.id('synthesised');
    await h.deputy.startRun(
      { task: synthesis, limits: { maxTurns: 2, synthesisReserve: {} } },
      { workflowId: synthesised },
    );
    expect(await h.deputy.result(synthesised)).toMatchObject({ status: 'completed', limit: 'maxTurns' });
    // The same ending, as a watcher reads it.
    const ended: unknown[] = [];
    for await (const event of h.deputy.watch(synthesised)) if (event.type === 'run/ended') ended.push(event);
    expect(ended).toEqual([expect.objectContaining({ status: 'completed', limit: 'maxTurns', synthesis: true })]);
    expect(
      await metric('deputy_runs_ended_total', ['status="completed"', 'limit="maxTurns"', 'synthesis="true"']),
    ).toBe(1);

    const limited = 'metrics: out of tool calls';
    h.model.add({ when: forTask(limited), times: Infinity, reply: { text: 'again', toolCalls: [calc] } });
    const stopped = h.id('stopped');
    await h.deputy.startRun({ task: limited, limits: { maxToolCalls: 1 } }, { workflowId: stopped });
    expect(await h.deputy.result(stopped)).toMatchObject({ status: 'limit_reached', limit: 'maxToolCalls' });
    expect(
      await metric('deputy_runs_ended_total', ['status="limit_reached"', 'limit="maxToolCalls"', 'synthesis="false"']),
    ).toBe(1);

    // Tokens and cost by model, preset and tenant: 3 + 2 + 2 calls at the scripted usage.
    const tags = ['model="test-model"', 'preset="assistant"', 'tenant="none"'];
    expect(await metric('deputy_model_calls_total', tags, 7)).toBe(7);
    // R2.19 Each figure apart: what the budget debited, and what the endpoint billed (never more).
    const debited = await metric('deputy_model_tokens_total', [...tags, 'direction="input"', 'figure="debited"']);
    const billed = await metric('deputy_model_tokens_total', [...tags, 'direction="input"', 'figure="billed"']);
    expect(billed).toBeGreaterThan(0);
    expect(debited).toBeGreaterThanOrEqual(billed);
    const cost = await metric('deputy_cost_microusd_total', [...tags, 'figure="debited"']);
    expect(cost).toBeGreaterThan(0);
    expect(await metric('deputy_cost_microusd_total', [...tags, 'figure="billed"'])).toBeGreaterThan(0);
    expect(await metric('deputy_cost_microusd_total', [...tags, 'figure="billed"'])).toBeLessThanOrEqual(cost);
  });

  it('R2.15 a child charged past its reservation is counted, with the cost past it', async () => {
    const { delegateReply, PARENT_SCOPES } = support;
    const task = 'metrics: an over-billing child';
    h.model.add(
      {
        when: userSays('metrics: bill a lot'),
        reply: { text: 'ok', usage: { prompt_tokens: 90_000, completion_tokens: 0 } },
      },
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'big', message: 'metrics: bill a lot' }] }),
      },
    );
    const id = h.id('overrun');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES, limits: { maxTokens: 10_000 } }, { workflowId: id });
    expect((await h.deputy.result(id)).status).toBe('limit_reached');
    const [entry] = (await h.deputy.getState(id)).delegations;
    expect(entry!.overrun!.costMicroUsd).toBeGreaterThan(80_000);
    expect(await metric('deputy_reservation_overruns_total', [])).toBe(1);
    expect(await metric('deputy_overrun_microusd_total', [], entry!.overrun!.costMicroUsd)).toBe(
      entry!.overrun!.costMicroUsd,
    );
  });

  it('R2.13 a reported usage far from what Deputy counted is counted, each direction once per call', async () => {
    const name = 'deputy_usage_disagreements_total';
    const input = ['model="test-model"', 'direction="input"'];
    const output = ['model="test-model"', 'direction="output"'];
    const before = { input: await metric(name, input, 0), output: await metric(name, output, 0) };
    const task = `metrics: an endpoint that reports 1 token each way for ${'a long prompt '.repeat(50)}`;
    h.model.add({
      when: forTask(task),
      reply: { text: 'a long answer '.repeat(100), usage: { prompt_tokens: 1, completion_tokens: 1 } },
    });
    const id = h.id('disagrees');
    await h.deputy.startRun({ task }, { workflowId: id });
    expect((await h.deputy.result(id)).status).toBe('completed');
    expect(await metric(name, input, before.input + 1)).toBe(before.input + 1);
    expect(await metric(name, output, before.output + 1)).toBe(before.output + 1);

    // A report within the margin of the count is not a disagreement.
    const agreeing = 'metrics: an endpoint whose report agrees';
    // Deputy's count with its margin (×1.25 + 16 for a model its tokenizer does not know): within 1.5× of the count.
    const agreeingUsage = (request: RecordedRequest) => ({
      prompt_tokens: worstUsage(request.body).prompt_tokens,
      completion_tokens: 1,
    });
    h.model.add({ when: forTask(agreeing), reply: (request) => ({ text: 'ok', usage: agreeingUsage(request) }) });
    const quiet = h.id('agrees');
    await h.deputy.startRun({ task: agreeing }, { workflowId: quiet });
    expect((await h.deputy.result(quiet)).status).toBe('completed');
    expect(await metric(name, input, 0)).toBe(before.input + 1);
    expect(await metric(name, output, 0)).toBe(before.output + 1);
  });

  it('R7.4 R7.6 approval requests closed are counted by decision, with the time they waited', async () => {
    const counted = (decision: string, atLeast: number) =>
      metric('deputy_approvals_total', [`decision="${decision}"`], atLeast);
    const before = { approve: await counted('approve', 0), deny: await counted('deny', 0) };
    const waitedBefore = await metric('deputy_approval_wait_ms_total', [], 0);
    for (const decision of ['approve', 'deny'] as const) {
      const task = `metrics: search what ${decision}s`;
      h.model.add(
        {
          when: forTask(task, 0),
          reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'needs approval' } }] },
        },
        { when: forTask(task, 1), reply: { text: 'searched' } },
      );
      const id = h.id(`approval-${decision}`);
      await h.deputy.startRun({ task }, { workflowId: id });
      for (let i = 0; i < 100 && (await h.deputy.approvals(id)).length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await new Promise((resolve) => setTimeout(resolve, 200)); // a wait to count
      await h.deputy.decideApproval(id, 'a1.1', decision);
      expect((await h.deputy.result(id)).status).toBe('completed');
    }
    expect(await counted('approve', before.approve + 1)).toBe(before.approve + 1);
    expect(await counted('deny', before.deny + 1)).toBe(before.deny + 1);
    expect(await metric('deputy_approval_wait_ms_total', [], waitedBefore + 400)).toBeGreaterThanOrEqual(
      waitedBefore + 400,
    );
  });
});
