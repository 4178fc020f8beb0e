import { describe, expect, it } from 'vitest';
import { toolResultCount } from '../src/testing/script.js';
import { useHarness } from './support/harness.js';

const h = useHarness();

describe('agentRun', () => {
  it('R1.1 R1.3 completes a run with two tool calls; the model saw exactly the expected requests', async () => {
    const workflowId = h.id('two-tools');
    const mine = (r: { body: { messages: { content?: string | null }[] } }) =>
      r.body.messages.some((m) => m.content === 'What is 3 times 12.5, plus tax? Use the notes.');
    // Each call reports more input than Deputy counts (its system prompt, task and two tools' schemas come to a few
    // hundred), so the report is what is debited: 500 in and 20 out a call, at $1 and $2 per million.
    const usage = { prompt_tokens: 500, completion_tokens: 20 };
    h.model.add(
      {
        name: 'notes',
        when: (r) => mine(r) && toolResultCount(r) === 0,
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'sales tax' } }], usage },
      },
      {
        name: 'calc',
        when: (r) => mine(r) && toolResultCount(r) === 1,
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'multiply', a: 37.5, b: 1.08 } }], usage },
      },
      {
        name: 'answer',
        when: (r) => mine(r) && toolResultCount(r) === 2,
        reply: { text: 'The total is $40.50.', usage },
      },
    );
    await h.deputy.startRun({ task: 'What is 3 times 12.5, plus tax? Use the notes.' }, { workflowId });
    const result = await h.deputy.result(workflowId);

    expect(result).toEqual({
      status: 'completed',
      output: 'The total is $40.50.',
      sessionId: workflowId,
      usage: {
        inputTokens: 1500,
        outputTokens: 60,
        totalTokens: 1560,
        costMicroUsd: 1620,
        modelCalls: 3,
        toolCalls: 2,
        // The endpoint reported every call, at more than Deputy counted: billed is what was debited.
        billed: { inputTokens: 1500, outputTokens: 60, costMicroUsd: 1620 },
      },
    });
    const seen = h.model.requests.filter(mine);
    expect(seen.map((r) => r.rule)).toEqual(['notes', 'calc', 'answer']);
    expect(seen[0]!.body.model).toBe('test-model');
    expect(seen[0]!.body.tools!.map((t) => t.function.name)).toEqual(['calculate', 'search_notes']);
    const last = seen[2]!.body.messages;
    expect(last.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(last[3]!.content).toContain('8%');
    expect(last[5]!.content).toBe('40.5');
    // Tool calls are retried by Temporal with the backoff the workflow gives model calls: 1 s doubling to 1 min,
    // 10 attempts; each model call is one attempt, retried by the workflow.
    const events = (await h.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const policy = (name: string) =>
      events
        .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === name)
        .map((e) => {
          const retry = e.activityTaskScheduledEventAttributes!.retryPolicy!;
          return [
            Number(retry.initialInterval?.seconds ?? 0),
            retry.backoffCoefficient,
            Number(retry.maximumInterval?.seconds ?? 0),
            retry.maximumAttempts,
          ];
        });
    expect(policy('runTool')).toEqual([
      [1, 2, 60, 10],
      [1, 2, 60, 10],
    ]);
    expect(policy('callModel').map((p) => p[3])).toEqual([1, 1, 1]);
  });
});
