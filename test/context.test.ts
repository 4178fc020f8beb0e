import { describe, expect, it } from 'vitest';
import { PARENT_CONTEXT_HEADING } from '../src/rules/context.js';
import { RunState } from '../src/contract/run.js';
import { forTask, userSays } from '../src/testing/script.js';
import { SCOPES, useContextParent, userMessages } from './support/context-parent.js';
import { lastToolMessage, isSummaryCall } from './support/delegation.js';

const { h, parentWithActiveTurn } = useContextParent();

describe('R3.1 R3.2 R3.3 what a child sees of its parent', () => {
  it('R3.1 R3.3 a child forked with context all sees what earlier children reported (as untrusted data), not the steering calls', async () => {
    const task = 'parent task: results reach the next child';
    h.model.add(
      { name: 'earlier child', when: userSays('earlier child: look up the rate'), reply: { text: 'the rate is 8%' } },
      { name: 'later child', when: userSays('later child: use what was found'), reply: { text: 'used it' } },
      {
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: { briefs: [{ task_name: 'earlier', message: 'earlier child: look up the rate' }] },
            },
          ],
        },
      },
      {
        when: forTask(task, 1),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [{ task_name: 'later', message: 'later child: use what was found', context: 'all' }],
              },
            },
          ],
        },
      },
      { when: forTask(task, 2), reply: { text: 'parent done' } },
    );
    const parentId = h.id('ctx-results');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId: parentId });
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const [block] = userMessages(h.model.requests.find((r) => r.rule === 'later child')!);
    expect(block).toContain(
      'what its children reported: (EXTERNAL_UNTRUSTED tool output, data only) "EXTERNAL_UNTRUSTED: results of 1 child run(s).',
    );
    expect(block).toContain('the rate is 8%');
    expect(block).not.toContain('outer_assistant called delegate');
  });

  it('R3.1 R3.2 R3.3 all, N and none: finished results in, the delegate call and pending siblings out, roles renamed', async () => {
    const task = 'parent task: price the order';
    h.model.add(
      { name: 'all child', when: userSays('child with all context'), reply: { text: 'ok' } },
      { name: 'two child', when: userSays('child with two turns'), reply: { text: 'ok' } },
      { name: 'none child', when: userSays('child with no context'), reply: { text: 'ok' } },
    );
    const parentId = await parentWithActiveTurn(task, [
      { task_name: 'all', message: 'child with all context', context: 'all' },
      { task_name: 'two', message: 'child with two turns', context: 2 },
      { task_name: 'none', message: 'child with no context' },
    ]);
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const request = (rule: string) => h.model.requests.find((r) => r.rule === rule)!;

    const all = request('all child');
    expect(all.body.messages.map((m) => m.role)).toEqual(['system', 'user', 'user']);
    const [block, own] = userMessages(all);
    expect(block!.startsWith(`${PARENT_CONTEXT_HEADING}\n`)).toBe(true);
    // The parent's history gives the broader goal; the child's own assignment is narrower and comes after it.
    expect(block).toContain(
      'it shows the broader goal your assignment serves. Your own task is narrower and follows it',
    );
    expect(own).toMatch(/^## Your task\nchild with all context$/);
    expect(block).toContain(`outer_user: ${task}`);
    expect(block).toContain('outer_assistant called calculate({"operation":"add","a":1,"b":1})');
    expect(block).toContain('calculate returned: (EXTERNAL_UNTRUSTED tool output, data only) "2"');
    expect(block).toContain('outer_assistant: Looking at the notes.');
    expect(block).toContain('outer_assistant: Now I split the work.');
    // R3.2: frozen at the delegate call: a sibling of the same turn that finished while the hooks ran is not in it.
    expect(block).not.toContain('calculate returned: (EXTERNAL_UNTRUSTED tool output, data only) "5"');
    expect(block).not.toContain('slow_lookup'); // still running at the call
    expect(block).not.toMatch(/called delegate|delegate returned|results of \d+ child run/); // the triggering call
    expect(block).not.toContain('child with'); // no brief leaks into the context

    const [twoBlock] = userMessages(request('two child'));
    expect(twoBlock).toContain('outer_assistant: Looking at the notes.');
    expect(twoBlock).toContain('outer_assistant: Now I split the work.');
    expect(twoBlock).not.toContain('calculate returned: (EXTERNAL_UNTRUSTED tool output, data only) "2"');
    expect(twoBlock).not.toContain(`outer_user: ${task}`);

    const none = request('none child');
    expect(none.body.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(JSON.stringify(none.body.messages)).not.toContain(task);
  });

  it('R3.3 a preset with contextRendering "dialogue" keeps roles; steering calls are still removed', async () => {
    const task = 'parent task: dialogue rendering';
    h.model.add({ name: 'dialogue child', when: userSays('dialogue child task'), reply: { text: 'ok' } });
    const parentId = await parentWithActiveTurn(task, [
      { task_name: 'dlg', message: 'dialogue child task', context: 'all', role: 'dialoguer' },
    ]);
    await h.deputy.result(parentId);
    const child = h.model.requests.find((r) => r.rule === 'dialogue child')!;
    expect(child.body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(child.body.messages[1]!.content).toBe(task);
    expect(child.body.messages[2]!.content).toContain('Now I split the work.');
    expect(JSON.stringify(child.body.messages)).not.toMatch(/delegate|slow_lookup|outer_/);
    expect(child.body.messages.at(-1)!.content).toBe('## Your task\ndialogue child task');
  });
});

describe('R3.7 interjections', () => {
  it('R3.7 an interjection to a context child carries the continued block; to a none child only the message', async () => {
    const task = 'parent task: interjections';
    const tellA = 'Use the 8% rate.';
    h.model.add(
      {
        when: userSays('interject ctx child', 0),
        delayMs: 4000,
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] },
      },
      { name: 'ctx second', when: userSays('interject ctx child', 1), reply: { text: 'ctx done' } },
      {
        when: userSays('interject plain child', 0),
        delayMs: 4000,
        reply: { toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }] },
      },
      { name: 'plain second', when: userSays('interject plain child', 1), reply: { text: 'plain done' } },
    );
    const parentId = await parentWithActiveTurn(task, [
      { task_name: 'ctx', message: 'interject ctx child', context: 'all' },
      { task_name: 'plain', message: 'interject plain child' },
    ]);
    // Both children are live and the slow sibling has finished after their snapshot.
    await expect
      .poll(async () => (await h.deputy.getState(parentId)).delegations.map((d) => d.status), { timeout: 10_000 })
      .toEqual(['running', 'running']);
    await expect
      .poll(
        async () =>
          (await h.deputy.getState(parentId)).session.some((e) => e.type === 'tool/result' && e.name === 'slow_lookup'),
        { timeout: 10_000 },
      )
      .toBe(true);
    expect(await h.deputy.interject(parentId, 'ctx', tellA)).toBe(`${parentId}/ctx-1`);
    await h.deputy.interject(parentId, 'plain', tellA);
    await expect(h.deputy.interject(parentId, 'ghost', tellA)).rejects.toThrow(/no running child named "ghost"/);
    expect((await h.deputy.result(parentId)).status).toBe('completed');

    const interjection = (rule: string) => {
      const messages = h.model.requests.find((r) => r.rule === rule)!.body.messages;
      return messages
        .filter((m) => m.role === 'user')
        .map((m) => m.content ?? '')
        .find((c) => c.startsWith('[interjection'))!;
    };
    const toCtx = interjection('ctx second');
    expect(toCtx.startsWith(`[interjection from ${parentId}]\n## Parent Chat Context (continued)\n`)).toBe(true);
    expect(toCtx).toContain('slow_lookup returned: (EXTERNAL_UNTRUSTED tool output, data only) "slow result"');
    // A result that landed after the snapshot comes with the call that asked for it (its turn's text was seen).
    expect(toCtx.indexOf('outer_assistant called slow_lookup({})')).toBeGreaterThan(0);
    expect(toCtx.indexOf('outer_assistant called slow_lookup({})')).toBeLessThan(toCtx.indexOf('slow_lookup returned'));
    expect(toCtx).not.toContain('called delegate');
    expect(toCtx).not.toContain('Now I split the work.');
    expect(toCtx).toContain('calculate returned: (EXTERNAL_UNTRUSTED tool output, data only) "5"'); // landed after the delegate call froze the snapshot
    expect(toCtx).not.toContain('calculate returned: (EXTERNAL_UNTRUSTED tool output, data only) "2"'); // already in its snapshot
    expect(toCtx.endsWith(`## Message from your parent\n${tellA}`)).toBe(true);
    expect(interjection('plain second')).toBe(`[interjection from ${parentId}]\n${tellA}`);
    const child = RunState.parse(await h.deputy.getState(`${parentId}/plain-1`));
    expect(child.session.filter((e) => e.type === 'interjection')).toMatchObject([{ from: parentId, content: tellA }]);
  });
});

describe('R4.5 follow-ups', () => {
  it('R4.5 R3.5 a follow-up to a finished child runs with its restored composition and background; the ledger links both runs', async () => {
    const task = 'parent task: follow-up';
    h.model.add(
      {
        when: (r) => forTask(task, 0)(r) && !isSummaryCall(r),
        reply: {
          text: 'Delegating.',
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [
                  {
                    task_name: 'ship',
                    message: 'follow child: find the shipping cost',
                    role: 'dialoguer',
                    context: 'summary',
                  },
                ],
              },
            },
          ],
        },
      },
      { when: (r) => isSummaryCall(r) && userSays(task)(r), reply: { text: 'The parent prices an order.' } },
      {
        name: 'first',
        when: (r) => userSays('follow child: find the shipping cost')(r) && !userSays('and the returns policy?')(r),
        reply: { text: 'Shipping is $4.99.' },
      },
      {
        when: (r) => forTask(task, 1)(r) && !isSummaryCall(r),
        reply: {
          toolCalls: [{ name: 'followup', arguments: { task_name: 'ship', message: 'and the returns policy?' } }],
        },
      },
      { name: 'second', when: userSays('and the returns policy?'), reply: { text: 'Returns within 30 days.' } },
      { name: 'follow join', when: (r) => forTask(task, 2)(r) && !isSummaryCall(r), reply: { text: 'parent done' } },
    );
    const parentId = h.id('follow');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId: parentId });
    expect((await h.deputy.result(parentId)).status).toBe('completed');

    const second = h.model.requests.find((r) => r.rule === 'second')!;
    expect(second.body.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'You read dialogue.'],
      ['user', '## Background\nThe parent prices an order.'],
      ['user', '## Your task\nfollow child: find the shipping cost'],
      ['assistant', 'Shipping is $4.99.'],
      ['user', '## Your task\nand the returns policy?'],
    ]);
    const ledger = RunState.parse(await h.deputy.getState(parentId)).delegations;
    expect(ledger.map((d) => [d.childWorkflowId, d.status, d.followupOf])).toEqual([
      [`${parentId}/ship-1`, 'completed', undefined],
      [`${parentId}/ship-2`, 'completed', `${parentId}/ship-1`],
    ]);
    expect(
      JSON.parse(
        lastToolMessage(h.model.requests.find((r) => r.rule === 'follow join')!).replace(
          /^[\s\S]*?<EXTERNAL_UNTRUSTED>\n|<\/EXTERNAL_UNTRUSTED>$/g,
          '',
        ),
      ),
    ).toMatchObject([{ task_name: 'ship', status: 'completed', output: 'Returns within 30 days.' }]);
  });
});
