/**
 * Approvals (R7.1–R7.6): a call the config names waits, recorded and free, until a decision from outside the models;
 * approve runs it once with exactly its arguments, deny and expiry are tool errors naming who and why; requests
 * anywhere in a tree are listed at its root and decided from there.
 */
import { describe, expect, it } from 'vitest';
import { lastMessage, toolMessages, userSays } from '../src/testing/script.js';
import { delegateReply, PARENT_SCOPES } from './support/delegation.js';
import { call, effects, until, useApprovalHarness } from './support/approvals.js';

const { h, state, listedStatus } = useApprovalHarness();

const lastTool = (r: Parameters<typeof toolMessages>[0]) => toolMessages(r).at(-1) ?? '';
const effectsOf = (runId: string) => effects.filter((e) => e.runId === runId);

describe('R7.2 R7.4 a call that needs approval waits, then runs once when approved', () => {
  it('R7.2 R7.4 the email waits as waiting_for_approval, is listed with its digest and preview, runs once on approve, and a second decision is refused', async () => {
    const task = 'approve-1: email the board';
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: call('send_email', { to: 'board@example.com', body: 'Q3 is in.' }),
      },
      {
        when: (r) => userSays(task)(r) && lastTool(r) === 'sent to board@example.com',
        reply: { text: 'Emailed the board.' },
      },
    );
    const id = h.id('approve-1');
    await h.deputy.startRun({ task }, { workflowId: id });
    const [request] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );
    expect(request).toMatchObject({
      requestId: 'a1.1',
      run: id,
      path: id,
      tool: 'send_email',
      preview: '{"to":"board@example.com","body":"Q3 is in."}',
    });
    expect(request!.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(request!.why).toContain('send_email');
    // 24 h by default, but never past the run's own deadline (600 s in these tests).
    const waiting = await state(id);
    expect(request!.deadline).toBe(new Date(waiting.limits!.deadlineMs!).toISOString());
    expect(waiting.status).toBe('waiting_for_approval');
    expect(await listedStatus(id)).toBe('waiting_for_approval');
    expect((await state(id)).details).toContain('waiting for approval of send_email (a1.1)');
    expect(effectsOf(id)).toEqual([]);
    // Waiting spends nothing: no model call, no tool call, the usage as it was.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect((await state(id)).usage).toEqual(waiting.usage);
    expect(h.model.requests.filter((r) => userSays(task)(r)).length).toBe(1);

    const decided = await h.deputy.decideApproval(id, 'a1.1', 'approve', { reason: 'fine' });
    expect(decided).toEqual({ requestId: 'a1.1', decision: 'approve', by: 'client' });
    expect((await h.deputy.result(id)).output).toBe('Emailed the board.');
    expect(effectsOf(id)).toEqual([
      { tool: 'send_email', args: { to: 'board@example.com', body: 'Q3 is in.' }, runId: id },
    ]);
    await expect(h.deputy.decideApproval(id, 'a1.1', 'approve')).rejects.toThrow(
      `decideApproval: run ${id} has ended or does not exist; nothing there waits for a decision`,
    );
  });

  it('R7.4 deny is a tool error naming who denied and why; the tool never runs and the run goes on', async () => {
    const task = 'approve-2: email everyone';
    h.model.add(
      { when: (r) => lastMessage(r) === task, reply: call('send_email', { to: 'all@example.com', body: 'hi' }) },
      { when: (r) => userSays(task)(r) && lastTool(r).startsWith('not run:'), reply: { text: 'I was told not to.' } },
    );
    const id = h.id('approve-2');
    await h.deputy.startRun({ task }, { workflowId: id });
    await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );
    await h.deputy.decideApproval(id, 'a1.1', 'deny', { reason: 'too many recipients', approver: 'ops' });
    expect((await h.deputy.result(id)).output).toBe('I was told not to.');
    const toolResult = (await state(id)).session.find((e) => e.type === 'tool/result');
    expect(toolResult).toMatchObject({ isError: true });
    expect(toolResult && 'content' in toolResult && toolResult.content).toBe(
      'not run: ops (unverified) denied approval request a1.1 for send_email: too many recipients. Do not try the same call again unless asked to.',
    );
    expect(effectsOf(id)).toEqual([]);
  });

  it('R7.4 a second decision while the first is final is refused naming the request; an unknown one names what is open', async () => {
    const task = 'approve-3: email twice';
    h.model.add(
      { when: (r) => lastMessage(r) === task, reply: call('send_email', { to: 'a@example.com', body: 'x' }) },
      { when: (r) => userSays(task)(r) && lastTool(r).startsWith('not run:'), reply: { text: 'Denied.' } },
    );
    const id = h.id('approve-3');
    await h.deputy.startRun({ task, mode: 'conversation' }, { workflowId: id });
    await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );
    await expect(h.deputy.decideApproval(id, 'a9.9', 'approve')).rejects.toThrow(
      'decideApproval: no request a9.9 in this run (open here: a1.1)',
    );
    await h.deputy.decideApproval(id, 'a1.1', 'deny');
    await expect(h.deputy.decideApproval(id, 'a1.1', 'approve')).rejects.toThrow(
      'decideApproval: request a1.1 is closed: denied by client',
    );
    await until(
      () => state(id),
      (s) => s.status === 'waiting_for_user',
      'the conversation to go on',
    );
    expect(effectsOf(id)).toEqual([]);
    await h.deputy.endConversation(id);
  });
});

describe('R7.1 the config says which calls wait', () => {
  it('R7.1 a payment of 50 runs at once; one of 500 matches the rule and waits', async () => {
    const task = 'approve-4: pay two invoices';
    h.model.add(
      { when: (r) => lastMessage(r) === task, reply: call('pay_invoice', { invoice: 'small', amount: 50 }) },
      {
        when: (r) => userSays(task)(r) && lastTool(r) === 'paid 50',
        reply: call('pay_invoice', { invoice: 'big', amount: 500 }),
      },
      { when: (r) => userSays(task)(r) && lastTool(r) === 'paid 500', reply: { text: 'Both paid.' } },
    );
    const id = h.id('approve-4');
    await h.deputy.startRun({ task }, { workflowId: id });
    const [request] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );
    expect(request).toMatchObject({ tool: 'pay_invoice', preview: '{"invoice":"big","amount":500}' });
    expect(effectsOf(id).map((e) => e.args)).toEqual([{ invoice: 'small', amount: 50 }]);
    await h.deputy.decideApproval(id, request!.requestId, 'approve');
    expect((await h.deputy.result(id)).output).toBe('Both paid.');
    expect(effectsOf(id).map((e) => e.args)).toEqual([
      { invoice: 'small', amount: 50 },
      { invoice: 'big', amount: 500 },
    ]);
  });
});

describe('R7.3 requests anywhere in the tree are seen and decided from the root', () => {
  it("R7.3 a grandchild's email is listed at the root with its path, its parent's model hears of it as untrusted news, and the root's client decides it", async () => {
    const task = 'approve-5: have the team email the client';
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({
          briefs: [
            {
              task_name: 'research-1',
              message: 'approve-5 research: find and mail',
              limits: { maxCostUsd: 0.02, maxTokens: 40_000 },
            },
          ],
        }),
      },
      {
        when: (r) => lastMessage(r).endsWith('approve-5 research: find and mail'),
        reply: delegateReply({
          briefs: [
            { task_name: 'mailer-1', role: 'mailer', message: 'approve-5 mailer: mail the client', wait: false },
          ],
        }),
      },
      {
        when: (r) => lastMessage(r).endsWith('approve-5 mailer: mail the client'),
        reply: call('send_email', { to: 'client@example.com', body: 'Report attached.' }),
      },
      { when: (r) => lastTool(r) === 'sent to client@example.com', reply: { text: 'Mailed the client.' } },
      // The research child dispatched its mailer in the background: it hears of the request while it waits.
      {
        when: (r) =>
          userSays('approve-5 research')(r) && r.body.messages.some((m) => m.content?.includes('Mailed the client.')),
        reply: { text: 'Research done; client mailed.' },
      },
      {
        when: (r) => userSays('approve-5 research')(r) && lastMessage(r).startsWith('Dispatched in the background'),
        reply: { text: 'Waiting for the mailer.' },
      },
      {
        when: (r) =>
          userSays('approve-5 research')(r) && lastMessage(r).startsWith('[approval requested below child mailer-1]'),
        reply: { text: 'The mailer waits for approval.' },
      },
      {
        when: (r) => userSays(task)(r) && lastMessage(r).includes('Research done'),
        reply: { text: 'The team mailed the client.' },
      },
    );
    const id = h.id('approve-5');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const [request] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request at the root',
    );
    expect(request!.path).toBe(`${id}/research-1/mailer-1`);
    expect(request!.tool).toBe('send_email');
    expect(request!.run).not.toBe(id);
    expect(await listedStatus(request!.run)).toBe('waiting_for_approval');
    expect((await state(id)).status).toBe('waiting_for_children');
    await h.deputy.decideApproval(id, request!.requestId, 'approve');
    expect(await h.deputy.result(id)).toMatchObject({ status: 'completed', output: 'The team mailed the client.' });
    expect(effectsOf(request!.run)).toHaveLength(1);
    expect(await h.deputy.approvals(id)).toEqual([]);
    // The research child's model was told, as untrusted data, and told it cannot decide.
    const notice = h.model.requests
      .flatMap((r) => r.body.messages)
      .find((m) => m.content?.startsWith('[approval requested below child mailer-1]'));
    expect(notice?.content).toContain('EXTERNAL_UNTRUSTED: a run below you waits for approval of a call.');
    expect(notice?.content).toContain('you cannot approve or deny it');
    expect(notice?.content).toContain(`"below":"mailer-1","run":"${request!.run}"`);
    // The watch stream says both, on the run that waited.
    const events = [];
    for await (const event of h.deputy.watch(id)) if (event.type.startsWith('approval/')) events.push(event);
    expect(events).toMatchObject([
      {
        type: 'approval/requested',
        run: request!.run,
        requestId: request!.requestId,
        tool: 'send_email',
        preview: '{"to":"client@example.com","body":"Report attached."}',
        deadline: request!.deadline,
      },
      { type: 'approval/decided', run: request!.run, requestId: request!.requestId, decision: 'approve', by: 'client' },
    ]);
  });
});
