/**
 * Background delegation (R2.14) and interjections from the parent's model (R3.7): a parent goes on while children
 * it dispatched with `wait: false` work, hears of each end as an untrusted `subagent/result`, joins them with `wait`,
 * does not end a task while they are live, and cancels them when it ends.
 */
import { describe, expect, it } from 'vitest';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { RunState } from '../src/contract/run.js';
import { loadTree } from '../src/client/inspect.js';
import { renderTree } from '../src/client/tree.js';
import { forTask, lastMessage, type ScriptReply } from '../src/testing/script.js';
import { delegateReply, DELEGATION_TOOLS, delegationConfig, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';
import { afterTools, childTask, gate, heardFrom, said } from './support/requests.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });

const state = async (id: string) => RunState.parse(await h.deputy.getState(id));

describe('R2.14 background delegation', () => {
  it('R2.14 R3.7 a conversation parent keeps talking while background children work, interjects a change (continued block to a context child, only the message to a none child), and reports their results when they arrive', async () => {
    const task = 'bg conversation: plan the report';
    const children = gate();
    const hold = (reply: ScriptReply) => async () => (await children.opened, reply);
    h.model.add(
      {
        name: 'dispatch',
        when: forTask(task, 0),
        reply: {
          text: 'Starting two background tasks.',
          ...delegateReply({
            briefs: [
              { task_name: 'ctx', message: 'bg ctx child work', context: 'all', wait: false },
              { task_name: 'plain', message: 'bg plain child work', wait: false },
            ],
          }),
        },
      },
      {
        name: 'dispatched',
        when: (r) => afterTools(task)(r) && forTask(task, 1)(r),
        reply: { text: 'They are on it.' },
      },
      { name: 'chat 1', when: said(task, 'How is it going?'), reply: { text: 'Still working on it.' } },
      {
        name: 'change',
        when: said(task, 'Change of plan: use the 8% rate.'),
        reply: {
          toolCalls: [
            { name: 'interject', arguments: { task_name: 'ctx', message: 'Use the 8% rate.' } },
            { name: 'interject', arguments: { task_name: 'plain', message: 'Use the 8% rate.' } },
          ],
        },
      },
      { name: 'told', when: (r) => afterTools(task)(r) && forTask(task, 3)(r), reply: { text: 'Told them both.' } },
      { name: 'report', when: heardFrom(task), reply: { text: 'Report: the children are done.' }, times: 2 },
      {
        name: 'ctx first',
        when: childTask('bg ctx child work', 0),
        reply: hold({ toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] }),
      },
      { name: 'ctx second', when: childTask('bg ctx child work', 1), reply: { text: 'ctx result with 8%' } },
      {
        name: 'plain first',
        when: childTask('bg plain child work', 0),
        reply: hold({ toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] }),
      },
      { name: 'plain second', when: childTask('bg plain child work', 1), reply: { text: 'plain result with 8%' } },
    );
    const id = h.id('bg-chat');
    await h.deputy.startRun({ task, mode: 'conversation', scopes: PARENT_SCOPES }, { workflowId: id });

    // The delegate call came back at once: the parent answered and waits for its person while both children run.
    await expect
      .poll(
        async () => {
          const s = await state(id);
          return [s.status, ...s.delegations.map((d) => `${d.taskName}:${d.status}:${d.background}`)];
        },
        { timeout: 10_000 },
      )
      .toEqual(['waiting_for_user', 'ctx:running:true', 'plain:running:true']);
    const dispatched = h.model.requests.find((r) => r.rule === 'dispatched')!.body.messages.at(-1)!.content!;
    expect(dispatched).toContain(
      `Dispatched in the background: ctx (child run ${id}/ctx-1), plain (child run ${id}/plain-1)`,
    );
    // R2.6: the children's reservations are held while they work.
    expect((await state(id)).reserved.costMicroUsd).toBe(2 * 3000);

    // Two user messages answered while the children are still working.
    await h.deputy.sendMessage(id, 'How is it going?');
    await expect
      .poll(async () =>
        (await state(id)).session.some((e) => e.type === 'message/assistant' && e.content === 'Still working on it.'),
      )
      .toBe(true);
    await h.deputy.sendMessage(id, 'Change of plan: use the 8% rate.');
    await expect
      .poll(async () =>
        (await state(id)).session.some((e) => e.type === 'message/assistant' && e.content === 'Told them both.'),
      )
      .toBe(true);
    expect((await state(id)).delegations.map((d) => d.status)).toEqual(['running', 'running']);
    const interjected = (await state(id)).session.filter((e) => e.type === 'tool/result' && e.name === 'interject');
    expect(interjected.map((e) => e.type === 'tool/result' && e.content).sort()).toEqual([
      `delivered to ${id}/ctx-1`,
      `delivered to ${id}/plain-1`,
    ]);

    // Temporal UI lists them as background children (their static summary).
    expect(await (await h.client.workflow.getHandle(`${id}/plain-1`).describe()).staticSummary()).toBe(
      'plain (background): bg plain child work',
    );
    // `deputy tree` shows both children in the background, each with the interjection it received.
    const tree = renderTree(await loadTree(h.client, id), { width: 400 }).split('\n');
    // Each run a line, its notes on the line under it.
    expect(tree[2]).toMatch(/^├─ ctx +running /);
    expect(tree[3]).toMatch(/ · background · 1 interjection$/);
    expect(tree[4]).toMatch(/^└─ plain +running /);
    expect(tree[5]).toMatch(/ · background · 1 interjection$/);
    children.open();
    await expect
      .poll(async () => (await state(id)).session.filter((e) => e.type === 'subagent/result').length, {
        timeout: 15_000,
      })
      .toBe(2);
    await expect
      .poll(async () => (await state(id)).session.at(-1))
      .toMatchObject({ type: 'message/assistant', content: 'Report: the children are done.' });
    await h.deputy.endConversation(id);
    const result = await h.deputy.result(id);
    expect(result.status).toBe('completed');

    // Each result came as the untrusted envelope of a waited one, joined between turns, once.
    const final = await state(id);
    const heard = final.session.filter((e) => e.type === 'subagent/result');
    expect(heard.map((e) => e.type === 'subagent/result' && e.childWorkflowId).sort()).toEqual([
      `${id}/ctx-1`,
      `${id}/plain-1`,
    ]);
    for (const event of heard) {
      if (event.type !== 'subagent/result') continue;
      expect(event.content.startsWith('EXTERNAL_UNTRUSTED: results of 1 child run(s).')).toBe(true);
      expect(event.content).toContain(`"status": "completed"`);
    }
    const reportRequest = h.model.requests.find((r) => r.rule === 'report')!;
    expect(lastMessage(reportRequest)).toMatch(/^\[background child (ctx|plain) ended\]\nEXTERNAL_UNTRUSTED: /);
    expect(final.delegations.map((d) => [d.taskName, d.status])).toEqual([
      ['ctx', 'completed'],
      ['plain', 'completed'],
    ]);
    expect(final.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    expect(result.usage.costMicroUsd).toBe(final.usage.costMicroUsd);

    // R3.7: the context child got what the parent's dialogue gained since its snapshot; the none child only the message.
    const interjection = (rule: string) =>
      h.model.requests
        .find((r) => r.rule === rule)!
        .body.messages.filter((m) => m.role === 'user')
        .map((m) => m.content ?? '')
        .find((c) => c.startsWith('[interjection'))!;
    const toCtx = interjection('ctx second');
    expect(toCtx.startsWith(`[interjection from ${id}]\n## Parent Chat Context (continued)\n`)).toBe(true);
    expect(toCtx).toContain('How is it going?');
    expect(toCtx).toContain('Still working on it.');
    expect(toCtx).not.toContain('bg ctx child work'); // the delegate call itself is steering: never copied
    expect(toCtx.endsWith('## Message from your parent\nUse the 8% rate.')).toBe(true);
    expect(interjection('plain second')).toBe(`[interjection from ${id}]\nUse the 8% rate.`);
  });

  it('R2.14 wait joins background children: their results come in its tool result and never a second time as events', async () => {
    const task = 'bg wait: two lookups';
    const children = gate();
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [
            { task_name: 'one', message: 'bg wait child one', wait: false },
            { task_name: 'two', message: 'bg wait child two', wait: false },
          ],
        }),
      },
      {
        // The children may answer only once the parent is waiting for them.
        when: forTask(task, 1),
        reply: () => (setTimeout(children.open, 300), { toolCalls: [{ name: 'wait', arguments: {} }] }),
      },
      { name: 'joined', when: forTask(task, 2), reply: { text: 'Both lookups are in.' } },
      { when: childTask('bg wait child one'), reply: async () => (await children.opened, { text: 'one says 1' }) },
      { when: childTask('bg wait child two'), reply: async () => (await children.opened, { text: 'two says 2' }) },
    );
    const id = h.id('bg-wait');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'Both lookups are in.' });
    const joined = h.model.requests.find((r) => r.rule === 'joined')!.body.messages.at(-1)!.content!;
    expect(joined.startsWith('EXTERNAL_UNTRUSTED: results of 2 child run(s).')).toBe(true);
    expect(joined).toContain('one says 1');
    expect(joined).toContain('two says 2');
    const final = await state(id);
    expect(final.session.filter((e) => e.type === 'subagent/result')).toEqual([]);
    expect(final.delegations.map((d) => d.status)).toEqual(['completed', 'completed']);
  });

  it('R2.14 a task parent that answers while a background child is live waits for it, then gets a turn with its result; wait with a timeout says who is still running', async () => {
    const task = 'bg task: answer early';
    const child = gate();
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'slow', message: 'bg slow child', wait: false }] }),
      },
      {
        when: forTask(task, 1),
        reply: { toolCalls: [{ name: 'wait', arguments: { task_names: ['slow'], timeout_seconds: 1 } }] },
      },
      { name: 'after timeout', when: forTask(task, 2), reply: { text: 'Partial answer for now.' } },
      { name: 'with result', when: heardFrom(task), reply: { text: 'Final answer with the slow result.' } },
      { when: childTask('bg slow child'), reply: async () => (await child.opened, { text: 'slow says 42' }) },
    );
    const id = h.id('bg-task');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    await expect
      .poll(async () => h.model.requests.some((r) => r.rule === 'after timeout'), { timeout: 10_000 })
      .toBe(true);
    await expect.poll(async () => (await state(id)).status).toBe('waiting_for_children');
    const timedOut = h.model.requests.find((r) => r.rule === 'after timeout')!.body.messages.at(-1)!.content!;
    expect(timedOut).toBe(
      'still running after 1 s: slow; each result arrives as a message when its child ends (or call wait again)',
    );
    // The model answered, but the run has not ended: its child is still working.
    expect((await state(id)).session.findLast((e) => e.type === 'message/assistant')).toMatchObject({
      content: 'Partial answer for now.',
    });
    child.open();
    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'Final answer with the slow result.' });
    const heard = lastMessage(h.model.requests.find((r) => r.rule === 'with result')!);
    expect(heard).toContain('slow says 42');
    expect((await state(id)).delegations.map((d) => d.status)).toEqual(['completed']);
  });

  it('R2.16 the live status is derived from what the run waits on: a delegate that ends while a wait of the same turn still waits leaves it waiting_for_children', async () => {
    const task = 'bg status: wait and delegate in one turn';
    const slow = gate();
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'slow', message: 'status slow child', wait: false }] }),
      },
      {
        when: forTask(task, 1),
        reply: {
          toolCalls: [
            { name: 'wait', arguments: { task_names: ['slow'] } },
            { name: 'delegate', arguments: { briefs: [{ task_name: 'fast', message: 'status fast child' }] } },
          ],
        },
      },
      { name: 'status done', when: forTask(task, 3), reply: { text: 'both in' } },
      { when: childTask('status slow child'), reply: async () => (await slow.opened, { text: 'slow done' }) },
      { when: childTask('status fast child'), reply: { text: 'fast done' } },
    );
    const id = h.id('bg-status');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    // The delegate of the second turn has joined its child; the wait of the same turn still waits for "slow".
    await expect
      .poll(async () => (await state(id)).delegations.map((d) => [d.taskName, d.status]), { timeout: 10_000 })
      .toEqual([
        ['slow', 'running'],
        ['fast', 'completed'],
      ]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await state(id)).status).toBe('waiting_for_children');
    // A listing sees the run running: waiting on its own children is live status, not a visibility write.
    const described = await h.client.workflow.getHandle(id).describe();
    const status = defineSearchAttributeKey('DeputyStatus', SearchAttributeType.KEYWORD);
    expect(described.typedSearchAttributes.get(status)).toBe('running');
    slow.open();
    expect(await h.deputy.result(id)).toMatchObject({ status: 'completed', output: 'both in' });
  });

  /** A conversation whose model dispatches one background child that never answers, and waits for its person. */
  async function conversationWithStuckChild(label: string): Promise<{ id: string; childId: string }> {
    const task = `bg ${label}: start one that never answers`;
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'stuck', message: `bg ${label} child`, wait: false }] }),
      },
      { when: forTask(task, 1), reply: { text: 'It is running.' } },
      { when: childTask(`bg ${label} child`), reply: { hang: true } },
    );
    const id = h.id(`bg-${label}`);
    await h.deputy.startRun({ task, mode: 'conversation', scopes: PARENT_SCOPES }, { workflowId: id });
    await expect
      .poll(async () => {
        const s = await state(id);
        return [s.status, s.delegations[0]?.status];
      })
      .toEqual(['waiting_for_user', 'running']);
    return { id, childId: `${id}/stuck-1` };
  }

  it('R2.14 R2.10 a conversation that ends cancels its live background children and releases their reservations', async () => {
    const { id, childId } = await conversationWithStuckChild('end');
    await h.deputy.endConversation(id);
    expect((await h.deputy.result(id)).status).toBe('completed');
    // Settled before the parent's own end: the child is already cancelled when the parent's result is in.
    expect((await h.client.workflow.getHandle(childId).describe()).status.name).toBe('CANCELLED');
    const final = await state(id);
    expect(final.delegations.map((d) => d.status)).toEqual(['cancelled']);
    expect(final.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
  });

  it('R2.14 R2.10 cancelling a parent cancels its background children', async () => {
    const { id, childId } = await conversationWithStuckChild('cancel');
    await h.deputy.cancel(id);
    expect((await h.deputy.result(id)).status).toBe('cancelled');
    expect((await h.client.workflow.getHandle(childId).describe()).status.name).toBe('CANCELLED');
    expect((await state(id)).delegations.map((d) => d.status)).toEqual(['cancelled']);
  });
});
