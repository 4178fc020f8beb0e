import { describe, expect, it } from 'vitest';
import { forTask, offeredTools, type RecordedRequest } from '../src/testing/script.js';
import { worstUsage } from '../src/testing/script-usage.js';
import type { Limits } from '../src/contract/run.js';
import { SYNTHESIS_INSTRUCTION } from '../workflows/model-turn.js';
import { useHarness } from './support/harness.js';

const h = useHarness();

const calc = { name: 'calculate', arguments: { operation: 'add', a: 1, b: 2 } };

/**
 * What each call below reports: more input than Deputy counts for these small calls (a system prompt, the task, two
 * tools' schemas and a few short turns come to a few hundred), so each call is debited as reported: 420 tokens,
 * 440 micro-USD at $1 in / $2 out.
 */
const usage = { prompt_tokens: 400, completion_tokens: 20 };

/** Runs `task` with `limits`, the model always answering with a draft text and one tool call. */
async function runAlwaysCallingTools(task: string, limits: Limits) {
  let n = 0;
  h.model.add({
    name: task,
    when: forTask(task),
    times: Infinity,
    reply: () => ({ text: `draft ${++n}`, toolCalls: [calc], usage }),
  });
  const workflowId = h.id('limit');
  await h.deputy.startRun({ task, limits }, { workflowId });
  const result = await h.deputy.result(workflowId);
  const requests = h.model.requests.filter(forTask(task));
  return { result, requests };
}

describe('R1.4 limits end a run with limit_reached and the best output so far', () => {
  it('R1.4 maxTurns', async () => {
    const { result, requests } = await runAlwaysCallingTools('limit maxTurns', {
      maxTurns: 2,
      synthesisReserve: false,
    });
    expect(result).toMatchObject({ status: 'limit_reached', limit: 'maxTurns', output: 'draft 2' });
    expect(result.usage).toMatchObject({ modelCalls: 2, toolCalls: 2 });
    expect(requests).toHaveLength(2);
  });

  // R2.13: each call asks for no more answer than what is left pays for, and the call that could not fit is never
  // made.
  it.each([
    {
      limit: 'maxTokens',
      limits: { maxTokens: 1000 },
      left: (used: number, input: number) => 1000 - used * 420 - input,
    },
    {
      limit: 'maxCostUsd',
      limits: { maxCostUsd: 0.001 },
      left: (used: number, input: number) => Math.floor((1000 - used * 440 - input) / 2),
    },
  ] as const)(
    'R1.4 R2.13 $limit: every call fits what is left; the one that cannot is not made',
    async ({ limit, limits, left }) => {
      const { result, requests } = await runAlwaysCallingTools(`limit ${limit}`, {
        ...limits,
        synthesisReserve: false,
      });
      expect(result).toMatchObject({ status: 'limit_reached', limit, output: `draft ${requests.length}` });
      expect(requests.length).toBeGreaterThanOrEqual(2);
      requests.forEach((request, i) => {
        expect(request.body.max_completion_tokens).toBe(left(i, worstUsage(request.body).prompt_tokens));
      });
      // The call that did not fit was refused before any request: its activity failed, typed and non-retryable.
      const history = await h.client.workflow.getHandle(result.sessionId).fetchHistory();
      const refused = history.events!.flatMap((e) => e.activityTaskFailedEventAttributes?.failure ?? []);
      expect(refused).toHaveLength(1);
      expect(refused[0]!.applicationFailureInfo).toMatchObject({
        type: 'ModelCall.BudgetExceeded',
        nonRetryable: true,
      });
      expect(refused[0]!.message).toContain(`(${limit})`);
      expect(result.usage.modelCalls).toBe(requests.length);
      if (limit === 'maxTokens') expect(result.usage.totalTokens).toBeLessThanOrEqual(1000);
      else expect(result.usage.costMicroUsd).toBeLessThanOrEqual(1000);
    },
  );

  it('R1.4 maxToolCalls: once used up, tools are no longer offered and a further call ends the run', async () => {
    const { result, requests } = await runAlwaysCallingTools('limit tool calls', {
      maxToolCalls: 1,
      synthesisReserve: false,
    });
    expect(result).toMatchObject({ status: 'limit_reached', limit: 'maxToolCalls', output: 'draft 2' });
    expect(result.usage.toolCalls).toBe(1);
    expect(requests.map(offeredTools)).toEqual([['calculate', 'search_notes'], []]);
  });

  it('R1.4 deadline: the model call in flight is aborted and the run keeps its best output', async () => {
    const task = 'limit deadline';
    h.model.add(
      { when: forTask(task, 0), reply: { text: 'draft 1', toolCalls: [calc] } },
      { name: 'hang', when: forTask(task, 1), reply: { hang: true } },
    );
    const workflowId = h.id('deadline');
    const deadline = new Date(Date.now() + 4000).toISOString();
    await h.deputy.startRun({ task, limits: { deadline, synthesisReserve: false } }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'limit_reached', limit: 'deadline', output: 'draft 1' });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'hang' && r.aborted), 15_000);
  });
});

describe('R1.4 synthesis reserve', () => {
  const lastMessage = (r: RecordedRequest) => r.body.messages.at(-1);

  it('R1.4 the last allowed turn offers no tools and asks for the final answer', async () => {
    const task = 'synthesis on last turn';
    h.model.add(
      { when: forTask(task, 0), reply: { text: 'looking', toolCalls: [calc] } },
      { when: forTask(task, 1), reply: { text: 'still looking', toolCalls: [calc] } },
      { name: 'synthesis', when: forTask(task, 2), reply: { text: 'final: 3' } },
    );
    const workflowId = h.id('synthesis');
    await h.deputy.startRun({ task, limits: { maxTurns: 3, synthesisReserve: {} } }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'final: 3', limit: 'maxTurns' });
    const requests = h.model.requests.filter(forTask(task));
    expect(requests.map((r) => offeredTools(r).length)).toEqual([2, 2, 0]);
    expect(requests.map((r) => 'tools' in r.body)).toEqual([true, true, false]);
    expect(lastMessage(requests[2]!)).toEqual({ role: 'system', content: SYNTHESIS_INSTRUCTION });
  });

  it('R1.4 a token reserve starts synthesis early; a tool call after synthesis never runs', async () => {
    const task = 'synthesis on tokens';
    h.model.add(
      { when: forTask(task, 0), reply: { text: 'step 1', toolCalls: [calc], usage } },
      { when: forTask(task, 1), reply: { text: 'step 2', toolCalls: [calc], usage } },
      // A misbehaving model calls a tool although none was offered: the tool does not run.
      { name: 'synthesis', when: forTask(task, 2), reply: { text: 'step 3', toolCalls: [calc], usage } },
    );
    const workflowId = h.id('synthesis-tokens');
    // 420 tokens a call: 1,580 are left after the first (above the reserve), 1,160 after the second (below it).
    await h.deputy.startRun({ task, limits: { maxTokens: 2000, synthesisReserve: { tokens: 1500 } } }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'limit_reached', output: 'step 3', limit: 'maxTokens' });
    expect(result.usage).toMatchObject({ modelCalls: 3, toolCalls: 2, totalTokens: 3 * 420 });
    const requests = h.model.requests.filter(forTask(task));
    expect(requests.map((r) => offeredTools(r).length)).toEqual([2, 2, 0]);
    expect(lastMessage(requests[2]!)?.content).toBe(SYNTHESIS_INSTRUCTION);
  });
});
