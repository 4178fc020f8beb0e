import { describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { userSays } from '../src/testing/script.js';
import { CHILD_USAGE, listChildren, PARENT_USAGE, isSummaryCall } from './support/delegation.js';
import { useContextParent, userMessages } from './support/context-parent.js';

const { h, hookCalls, webhookCalls, parentWithActiveTurn, delegateResult } = useContextParent();

describe('R3.4 R3.5 R3.6 summary preparation with hooks', () => {
  it('R3.4 R3.5 R3.6 a rewritten task reaches the summary prompt; the background sits before the task; the parent keeps no copy', async () => {
    const task = 'parent task: summary';
    const summary = 'The parent is pricing an order in Springfield; tax is 8%.';
    h.model.add(
      {
        name: 'summary call',
        when: (r) => isSummaryCall(r) && userSays(task)(r),
        reply: { text: summary, usage: { prompt_tokens: 2000, completion_tokens: 50 } },
      },
      {
        name: 'summary child',
        when: userSays('Rewritten: find the shipping cost.'),
        reply: { text: 'shipping is $4.99', usage: CHILD_USAGE },
      },
    );
    const parentId = await parentWithActiveTurn(
      task,
      [{ task_name: 'ship', message: 'REWRITE this: find shipping', context: 'summary' }],
      PARENT_USAGE,
    );
    const result = await h.deputy.result(parentId);
    expect(result.status).toBe('completed');

    const prompt = userMessages(h.model.requests.find((r) => r.rule === 'summary call')!)[0]!;
    expect(prompt.startsWith("## The sub-agent's task\nRewritten: find the shipping cost.\n")).toBe(true);
    expect(prompt).not.toContain('REWRITE this');

    const childId = `${parentId}/ship-1`;
    const child = RunState.parse(await h.deputy.getState(childId));
    expect(child.session.map((e) => e.type)).toEqual([
      'session/header',
      'subagent/descriptor',
      'context/background',
      'message/user',
      'message/assistant',
      'run/ended',
    ]);
    const background = child.session[2]!;
    expect(background).toMatchObject({
      type: 'context/background',
      source: 'summary',
      content: `## Background\n${summary}`,
    });
    expect(child.session[3]).toMatchObject({
      type: 'message/user',
      content: '## Your task\nRewritten: find the shipping cost.',
    });

    const parent = RunState.parse(await h.deputy.getState(parentId));
    expect(JSON.stringify(parent)).not.toContain(summary);
    expect(parent.delegations[0]!.preparation).toEqual({
      contextMode: 'summary',
      backgroundChars: `## Background\n${summary}`.length,
      hookOutcome: 'gate: rewrite; gate: accept; audit: accept',
    });
    // The summary call is the parent's: its 4 own calls, the summary call and the child's call, each as reported.
    expect(result.usage.totalTokens).toBe(4 * 5100 + 2050 + 520);
    expect(hookCalls.filter((c) => c.childWorkflowId === childId).map((c) => c.event)).toEqual([
      'task.submitted',
      'subagent.start',
      'subagent.end',
    ]);
    expect(webhookCalls.filter((c) => c.childWorkflowId === childId)).toMatchObject([
      {
        event: 'subagent.start',
        taskName: 'ship',
        task: 'Rewritten: find the shipping cost.',
        contextMode: 'summary',
        parentId,
      },
    ]);
  });

  const noChild = async (parentId: string, childName: string) => {
    const state = RunState.parse(await h.deputy.getState(parentId));
    expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    expect(await listChildren(h.client, parentId)).toEqual([]);
    await expect(h.client.workflow.getHandle(`${parentId}/${childName}-1`).describe()).rejects.toThrow(/not found/i);
    return state;
  };

  it('R3.4 a hook that rejects: no child, reservation back to zero, the model told why', async () => {
    const task = 'parent task: rejected';
    const parentId = await parentWithActiveTurn(task, [
      { task_name: 'nope', message: 'REJECT this one', context: 'summary' },
    ]);
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    expect(delegateResult(task)).toContain(
      '"error": "hook \\"gate\\" rejected it: not allowed here; the child was not started"',
    );
    const state = await noChild(parentId, 'nope');
    expect(state.delegations[0]).toMatchObject({ status: 'rejected', actual: { tokens: 0, costMicroUsd: 0 } });
    expect(h.model.requests.some((r) => isSummaryCall(r) && userSays(task)(r))).toBe(false);
  });

  it('R3.4 a webhook that keeps failing rejects the child (fail_closed by default)', async () => {
    const task = 'parent task: webhook down';
    const parentId = await parentWithActiveTurn(task, [{ task_name: 'audited', message: 'WEBHOOK-DOWN child' }]);
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    expect(delegateResult(task)).toContain(
      'hook \\"audit\\" failed (fail_closed): hook \\"audit\\" answered 500: audit service down',
    );
    await noChild(parentId, 'audited');
    expect(webhookCalls.filter((c) => c.taskName === 'audited')).toHaveLength(3); // Temporal retried it twice
  });

  it('R3.4 a summary that fails non-retryably: no child, reservation back to zero, the model told why', async () => {
    const task = 'parent task: summary fails';
    h.model.add({
      when: (r) => isSummaryCall(r) && userSays(task)(r),
      reply: { status: 400, message: 'context too long' },
    });
    const parentId = await parentWithActiveTurn(task, [
      { task_name: 'sum', message: 'needs a summary', context: 'summary' },
    ]);
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    expect(delegateResult(task)).toMatch(
      /could not summarise this run's context for the child: http:\/\/127\.0\.0\.1:\d+\/v1 answered 400/,
    );
    await noChild(parentId, 'sum');
  });

  it('R3.4 a parent cancelled during generation: the summary call is aborted and the child never starts', async () => {
    const task = 'parent task: cancelled while summarising';
    h.model.add({ name: 'hung summary', when: (r) => isSummaryCall(r) && userSays(task)(r), reply: { hang: true } });
    const parentId = await parentWithActiveTurn(task, [
      { task_name: 'late', message: 'never starts', context: 'summary' },
    ]);
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'hung summary'));
    await h.deputy.cancel(parentId);
    expect((await h.deputy.result(parentId)).status).toBe('cancelled');
    expect(h.model.requests.find((r) => r.rule === 'hung summary')!.aborted).toBe(true);
    const state = await noChild(parentId, 'late');
    expect(state.delegations[0]!.status).toBe('cancelled');
  });

  it('R3.4 hooks run exactly once per dispatch, even across a worker restart', async () => {
    const task = 'parent task: restart';
    h.model.add(
      { when: (r) => isSummaryCall(r) && userSays(task)(r), reply: { text: 'background for the restart child' } },
      { name: 'restart child hangs', when: userSays('survives a restart'), reply: { hang: true } },
    );
    const parentId = await parentWithActiveTurn(task, [
      { task_name: 'tough', message: 'survives a restart', context: 'summary' },
    ]);
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'restart child hangs'));
    await h.stopWorkers();
    h.model.add({ when: userSays('survives a restart'), reply: { text: 'made it' } });
    await h.startWorker(h.lastWorkerOptions());
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const childId = `${parentId}/tough-1`;
    expect(hookCalls.filter((c) => c.childWorkflowId === childId).map((c) => c.event)).toEqual([
      'task.submitted',
      'subagent.start',
      'subagent.end',
    ]);
    expect(webhookCalls.filter((c) => c.childWorkflowId === childId)).toHaveLength(1);
  });
});
