import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { builtinTools } from '../activities/builtin-tools.js';
import { PARENT_CONTEXT_HEADING, SUMMARY_SYSTEM_PROMPT } from '../src/rules/context.js';
import type { HookInput } from '../src/contract/hooks.js';
import { RunState } from '../src/contract/run.js';
import { forTask, userSays, type RecordedRequest } from '../src/testing/scripted-model.js';
import { defineTool } from '../src/contract/tools.js';
import { CHILD_USAGE, listChildren, PARENT_USAGE } from './support/delegation.js';
import { testConfig, useHarness } from './support/harness.js';

/** A tool that is still running when the delegate call is dispatched. */
const slowLookup = defineTool({
  name: 'slow_lookup',
  description: 'A slow look-up.',
  parameters: z.strictObject({}),
  scopes: ['tools.notes'],
  async execute(_args, { signal }) {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, 2500);
      signal.addEventListener('abort', () => (clearTimeout(timer), resolve(undefined)));
    });
    return 'slow result';
  },
});

/** Every hook call, to prove each ran once per dispatch. */
const hookCalls: HookInput[] = [];
const webhookCalls: HookInput[] = [];
let webhook: Server | undefined;

afterAll(() => webhook?.close());

const h = useHarness(async () => {
  webhook = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const input = JSON.parse(body) as HookInput;
      webhookCalls.push(input);
      if (input.task.includes('WEBHOOK-DOWN')) res.writeHead(500).end('audit service down');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"decision": "accept"}');
    });
  });
  await new Promise<void>((resolve) => webhook!.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/audit`;
  return {
    config: testConfig({
      presets: [
        { id: 'assistant', persona: 'You are the parent.', tools: ['calculate', 'search_notes', 'slow_lookup'] },
        { id: 'dialoguer', persona: 'You read dialogue.', tools: ['search_notes'], contextRendering: 'dialogue' },
      ],
      delegation: {
        enabled: true,
        activation: 'unconditional',
        childDefaults: { maxTurns: 5, maxTokens: 2000, maxCostUsd: 0.003, maxToolCalls: 5 },
      },
      hooks: [
        { name: 'gate', events: ['task.submitted', 'subagent.start', 'subagent.end'], function: 'gate' },
        { name: 'audit', events: ['subagent.start'], url, timeoutSeconds: 5 },
      ],
    }),
    tools: [...builtinTools(), slowLookup],
    hookFunctions: {
      async gate(input: HookInput) {
        hookCalls.push(input);
        if (input.event !== 'task.submitted') return { decision: 'accept' as const };
        await new Promise((resolve) => setTimeout(resolve, 600)); // lets the fast sibling tool finish first
        if (input.task.includes('REJECT')) return { decision: 'reject' as const, reason: 'not allowed here' };
        if (input.task.includes('REWRITE'))
          return { decision: 'rewrite' as const, task: 'Rewritten: find the shipping cost.' };
        return { decision: 'accept' as const };
      },
    },
  };
});

const SCOPES = ['tools.calc', 'tools.notes', 'run.delegate'];
const calc = (a: number, b: number, id?: string) => ({
  name: 'calculate',
  arguments: { operation: 'add', a, b },
  ...(id && { id }),
});
const userMessages = (r: RecordedRequest) =>
  r.body.messages.filter((m) => m.role === 'user').map((m) => m.content ?? '');
const isSummaryCall = (r: RecordedRequest) => r.body.messages[0]?.content === SUMMARY_SYSTEM_PROMPT;

/**
 * A parent with two finished turns whose third (active) turn says something, finishes one tool call, holds one still
 * running, and delegates `briefs`.
 */
async function parentWithActiveTurn(task: string, briefs: unknown[], usage?: typeof PARENT_USAGE) {
  const reported = usage && { usage };
  h.model.add(
    { when: (r) => forTask(task, 0)(r) && !isSummaryCall(r), reply: { toolCalls: [calc(1, 1)], ...reported } },
    {
      when: (r) => forTask(task, 1)(r) && !isSummaryCall(r),
      reply: {
        text: 'Looking at the notes.',
        toolCalls: [{ name: 'search_notes', arguments: { query: 'tax' } }],
        ...reported,
      },
    },
    {
      when: (r) => forTask(task, 2)(r) && !isSummaryCall(r),
      reply: {
        text: 'Now I split the work.',
        toolCalls: [
          calc(2, 3, `${task}-fast`),
          { name: 'slow_lookup', arguments: {}, id: `${task}-slow` },
          { name: 'delegate', arguments: { briefs }, id: `${task}-dlg` },
        ],
        ...reported,
      },
    },
    {
      name: `${task}:join`,
      when: (r) => forTask(task, 5)(r) && !isSummaryCall(r),
      reply: { text: 'parent done', ...reported },
    },
  );
  const workflowId = h.id('ctx');
  await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
  return workflowId;
}

const delegateResult = (task: string) =>
  h.model.requests.find((r) => r.rule === `${task}:join`)!.body.messages.find((m) => m.tool_call_id === `${task}-dlg`)!
    .content!;

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
        toolMessageOf(h.model.requests.find((r) => r.rule === 'follow join')!).replace(
          /^[\s\S]*?<EXTERNAL_UNTRUSTED>\n|<\/EXTERNAL_UNTRUSTED>$/g,
          '',
        ),
      ),
    ).toMatchObject([{ task_name: 'ship', status: 'completed', output: 'Returns within 30 days.' }]);
  });
});

function toolMessageOf(request: RecordedRequest): string {
  return request.body.messages.filter((m) => m.role === 'tool').at(-1)?.content ?? '';
}
