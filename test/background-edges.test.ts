/**
 * Background delegation (R2.14) on the paths nobody walks: an id already taken, a child that
 * is waited for by two calls at once, and a worker that keeps no workflow cache.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { forTask, lastMessage, toolMessages } from '../src/testing/script.js';
import { delegateReply, DELEGATION_TOOLS, delegationConfig, PARENT_SCOPES, squatId } from './support/delegation.js';
import { createHarness, useHarness, type Harness } from './support/harness.js';
import { childTask, gate, heardFrom } from './support/requests.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });

const state = async (id: string) => RunState.parse(await h.deputy.getState(id));

describe('R2.14 background delegation on the paths nobody walks', () => {
  it('R2.14 R2.4 an id already taken: the background brief arrives as a failed subagent/result, charged nothing; the parent goes on and the squatter is untouched', async () => {
    const task = 'bg taken: the id is held';
    const id = h.id('bg-taken');
    const squatter = await squatId(h, `${id}/taken-1`);
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'taken', message: 'bg taken child', wait: false }] }),
      },
      { when: forTask(task, 1), reply: { text: 'Going on meanwhile.' } },
      { name: 'heard failure', when: heardFrom(task), reply: { text: 'The background child could not start.' } },
    );
    try {
      await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
      expect(await h.deputy.result(id)).toMatchObject({
        status: 'completed',
        output: 'The background child could not start.',
      });
      const heard = lastMessage(h.model.requests.find((r) => r.rule === 'heard failure')!);
      expect(heard.startsWith('[background child taken ended]\nEXTERNAL_UNTRUSTED: ')).toBe(true);
      expect(heard).toContain('"status": "failed"');
      expect(heard).toContain(`workflow id \\"${id}/taken-1\\" is already taken by a running agentRun run`);
      const final = await state(id);
      expect(final.delegations.map((d) => [d.status, d.actual])).toEqual([['failed', { tokens: 0, costMicroUsd: 0 }]]);
      expect(final.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
      expect((await squatter.describe()).status.name).toBe('RUNNING');
    } finally {
      await squatter.terminate('test cleanup').catch(() => undefined);
    }
  });

  it('R2.14 two wait calls at once for the same child: one carries its result, the other says it went to the other call; none is empty', async () => {
    const task = 'bg two waits: same child twice';
    const child = gate();
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'twice', message: 'bg twice child', wait: false }] }),
      },
      {
        when: forTask(task, 1),
        reply: () => (
          setTimeout(child.open, 300),
          {
            toolCalls: [
              { name: 'wait', arguments: { task_names: ['twice'] } },
              { name: 'wait', arguments: { task_names: ['twice'] } },
            ],
          }
        ),
      },
      { name: 'both waited', when: forTask(task, 3), reply: { text: 'Joined once.' } },
      { when: childTask('bg twice child'), reply: async () => (await child.opened, { text: 'twice says once' }) },
    );
    const id = h.id('bg-twice');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    expect(await h.deputy.result(id)).toMatchObject({ status: 'completed', output: 'Joined once.' });
    const results = toolMessages(h.model.requests.find((r) => r.rule === 'both waited')!).slice(1);
    const withResult = results.filter((r) => r.includes('twice says once'));
    expect(withResult).toHaveLength(1);
    expect(withResult[0]!.startsWith('EXTERNAL_UNTRUSTED: results of 1 child run(s).')).toBe(true);
    expect(results.filter((r) => !r.includes('twice says once'))).toEqual([
      'twice: ended; its result went to another wait call of this turn',
    ]);
    expect((await state(id)).session.filter((e) => e.type === 'subagent/result')).toEqual([]);
  });
});

describe('R2.14 background delegation on a worker that keeps no workflow cache', () => {
  const cold = {} as Harness;
  beforeAll(async () => {
    Object.assign(cold, await createHarness());
    await cold.startWorker({
      config: delegationConfig(),
      tools: DELEGATION_TOOLS,
      workerOptions: { maxCachedWorkflows: 0 },
    });
  });
  afterAll(async () => {
    await cold.close?.();
  });

  it('R2.14 every workflow task a cold replay (as after a crash between two steps): a conversation hears its background child once, after a message it answered meanwhile', async () => {
    const task = 'bg cold: replayed every task';
    const child = gate();
    cold.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'cold', message: 'bg cold child', wait: false }] }),
      },
      { when: forTask(task, 1), reply: { text: 'Dispatched.' } },
      { when: (r) => forTask(task)(r) && lastMessage(r) === 'ping', reply: { text: 'pong' } },
      { name: 'cold heard', when: heardFrom(task), reply: { text: 'Cold child reported.' } },
      {
        when: (r) => r.body.messages.some((m) => m.content?.endsWith('## Your task\nbg cold child')),
        reply: async () => (await child.opened, { text: 'cold result' }),
      },
    );
    const id = cold.id('bg-cold');
    await cold.deputy.startRun({ task, mode: 'conversation', scopes: PARENT_SCOPES }, { workflowId: id });
    const coldState = async () => RunState.parse(await cold.deputy.getState(id));
    await expect.poll(async () => (await coldState()).status).toBe('waiting_for_user');
    await cold.deputy.sendMessage(id, 'ping');
    await expect
      .poll(async () => (await coldState()).session.some((e) => e.type === 'message/assistant' && e.content === 'pong'))
      .toBe(true);
    child.open();
    await expect
      .poll(async () => (await coldState()).session.at(-1), { timeout: 15_000 })
      .toMatchObject({ type: 'message/assistant', content: 'Cold child reported.' });
    await cold.deputy.endConversation(id);
    expect((await cold.deputy.result(id)).status).toBe('completed');
    const final = await coldState();
    expect(final.session.map((e) => e.type).filter((t) => t !== 'tool/result' && t !== 'session/header')).toEqual([
      'message/user',
      'message/assistant',
      'message/assistant',
      'message/user',
      'message/assistant',
      'subagent/result',
      'message/assistant',
      'run/ended',
    ]);
    expect(cold.model.requests.filter((r) => r.rule === 'cold heard')).toHaveLength(1);
    expect(final.delegations.map((d) => [d.status, d.background])).toEqual([['completed', true]]);
    expect(final.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
  });
});
