/**
 * Who may decide, and until when (R7.5, R7.6), and what a child needs (R7.1): with approvers configured a decision
 * carries a proof a worker checks; a request expires at its deadline and takes `onTimeout`; a delegation above the
 * threshold reserves nothing before it is approved; a child needs every approval its parent needs.
 */
import { describe, expect, it } from 'vitest';
import { approvalProof } from '../src/ops/approval-proof.js';
import { lastMessage, toolMessages, userSays } from '../src/testing/script.js';
import { delegateReply, PARENT_SCOPES } from './support/delegation.js';
import { approvalConfig, call, effects, until, useApprovalHarness } from './support/approvals.js';

const ALICE_KEY = 'alice-approval-key-0123456789abcdef';
const { h, state } = useApprovalHarness(
  approvalConfig({ approvers: [{ id: 'alice', key: ALICE_KEY }], timeoutSeconds: 4 }),
);

const lastTool = (r: Parameters<typeof toolMessages>[0]) => toolMessages(r).at(-1) ?? '';
const effectsOf = (runId: string) => effects.filter((e) => e.runId === runId);

/** Starts a run whose model emails once, then reports what the tool said. */
async function emailRun(label: string) {
  const task = `${label}: send the memo`;
  h.model.add(
    { when: (r) => lastMessage(r) === task, reply: call('send_email', { to: 'team@example.com', body: label }) },
    {
      when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
      reply: (r) => ({ text: `tool said: ${lastTool(r)}` }),
    },
  );
  const id = h.id(label);
  await h.deputy.startRun({ task }, { workflowId: id });
  const [request] = await until(
    () => h.deputy.approvals(id),
    (list) => list.length === 1,
    'the request',
  );
  return { id, request: request! };
}

describe('R7.5 with approvers configured, a decision needs its approver’s proof', () => {
  it('R7.5 no proof, an unknown approver and a proof by the wrong key are refused and the request stays open; the right proof approves and the call runs once', async () => {
    const { id, request } = await emailRun('authority-1');
    await expect(h.deputy.decideApproval(id, request.requestId, 'approve')).rejects.toThrow(
      'decideApproval: this run takes decisions only with approver and proof (approvals.approvers is configured)',
    );
    await expect(
      h.deputy.decideApproval(id, request.requestId, 'approve', { approver: 'mallory', key: ALICE_KEY }),
    ).rejects.toThrow('decideApproval: approver "mallory" is not configured');
    await expect(
      h.deputy.decideApproval(id, request.requestId, 'approve', {
        approver: 'alice',
        key: 'not-alices-key-0123456789abcdef00',
      }),
    ).rejects.toThrow(
      `decideApproval: the proof is not alice's for approve of request ${request.requestId} of run ${id} (first run ${request.firstRunId}) with these arguments; the request stays open`,
    );
    // A proof of a denial does not approve.
    const denial = approvalProof(ALICE_KEY, {
      firstRunId: request.firstRunId,
      runId: id,
      requestId: request.requestId,
      decision: 'deny',
      digest: request.digest,
    });
    await expect(
      h.deputy.decideApproval(id, request.requestId, 'approve', { approver: 'alice', proof: denial }),
    ).rejects.toThrow(/the proof is not alice's for approve/);
    expect(await h.deputy.approvals(id)).toHaveLength(1);
    expect(effectsOf(id)).toEqual([]);

    const decided = await h.deputy.decideApproval(id, request.requestId, 'approve', {
      approver: 'alice',
      key: ALICE_KEY,
    });
    expect(decided).toEqual({ requestId: request.requestId, decision: 'approve', by: 'alice' });
    expect((await h.deputy.result(id)).output).toBe('tool said: sent to team@example.com');
    expect(effectsOf(id)).toHaveLength(1);
    // History records who approved, never a key.
    const history = JSON.stringify(await h.client.workflow.getHandle(id).fetchHistory());
    expect(history).not.toContain(ALICE_KEY);
  });

  it('R7.5 a proof made for another run does not decide this one', async () => {
    const first = await emailRun('authority-2a');
    const second = await emailRun('authority-2b');
    const proofForFirst = approvalProof(ALICE_KEY, {
      firstRunId: first.request.firstRunId,
      runId: first.id,
      requestId: first.request.requestId,
      decision: 'approve',
      digest: first.request.digest,
    });
    await expect(
      h.deputy.decideApproval(second.id, second.request.requestId, 'approve', {
        approver: 'alice',
        proof: proofForFirst,
      }),
    ).rejects.toThrow(/the proof is not alice's/);
    await h.deputy.cancel(first.id);
    await h.deputy.cancel(second.id);
    expect(effectsOf(first.id)).toEqual([]);
    expect(effectsOf(second.id)).toEqual([]);
  });
});

describe('R7.6 a request expires at its deadline', () => {
  it('R7.6 with no decision in 4 s the request is denied by timeout, the call never runs, and a late decision is refused', async () => {
    const { id, request } = await emailRun('authority-3');
    expect(Date.parse(request.deadline) - Date.parse(request.requestedAt)).toBe(4000);
    const result = await h.deputy.result(id);
    expect(result.output).toBe(
      `tool said: not run: no decision on approval request ${request.requestId} for send_email arrived by ${request.deadline}; it expired and was denied (approvals.onTimeout)`,
    );
    expect(effectsOf(id)).toEqual([]);
    await expect(
      h.deputy.decideApproval(id, request.requestId, 'approve', { approver: 'alice', key: ALICE_KEY }),
    ).rejects.toThrow(/has ended|no open request/);
    const events = [];
    for await (const event of h.deputy.watch(id)) if (event.type.startsWith('approval/')) events.push(event);
    expect(events.map((e) => [e.type, 'decision' in e ? e.decision : 'tool' in e && e.tool])).toEqual([
      ['approval/requested', 'send_email'],
      ['approval/decided', 'expired'],
    ]);
  });

  it('R7.6 a call approved late runs only within what is left of the run’s deadline, not what was left when it asked', async () => {
    const task = 'authority-7: send slowly';
    h.model.add({ when: (r) => lastMessage(r) === task, reply: call('slow_send', { to: 'late@example.com' }) });
    const id = h.id('authority-7');
    const deadline = Date.now() + 3500;
    await h.deputy.startRun({ task, limits: { deadline: new Date(deadline).toISOString() } }, { workflowId: id });
    const [request] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - 2000 - Date.now())));
    await h.deputy.decideApproval(id, request!.requestId, 'approve', { approver: 'alice', key: ALICE_KEY });
    // The tool needs 4 s and 2 s are left: the call ends at the deadline, and so does the run.
    expect(await h.deputy.result(id)).toMatchObject({ status: 'limit_reached', limit: 'deadline' });
    const closed = (await h.client.workflow.getHandle(id).describe()).closeTime!.getTime();
    expect(closed).toBeLessThan(deadline + 700);
  });

  it('R7.6 cancelling the run cancels its request: nothing runs and nothing stays listed', async () => {
    const { id } = await emailRun('authority-4');
    await h.deputy.cancel(id);
    expect((await h.deputy.result(id)).status).toBe('cancelled');
    expect(effectsOf(id)).toEqual([]);
  });
});

describe('R7.1 delegations and children', () => {
  it('R7.1 a delegation reserving more than approvals.delegationAboveUsd reserves nothing until approved, then starts its child', async () => {
    const task = 'authority-5: delegate a big job';
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({
          briefs: [{ task_name: 'big-job', message: 'authority-5 big job', limits: { maxCostUsd: 0.05 } }],
        }),
      },
      { when: (r) => lastMessage(r).endsWith('authority-5 big job'), reply: { text: 'big job done' } },
      {
        when: (r) => userSays(task)(r) && lastTool(r).includes('big job done'),
        reply: { text: 'Delegated and done.' },
      },
    );
    const id = h.id('authority-5');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const [request] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the request',
    );
    expect(request!.tool).toBe('delegate');
    expect(request!.why).toBe(
      'this delegation would reserve $0.0500 for its children, above approvals.delegationAboveUsd ($0.02)',
    );
    const waiting = await state(id);
    expect(waiting.status).toBe('waiting_for_approval');
    expect(waiting.delegations).toEqual([]);
    expect(waiting.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    await h.deputy.decideApproval(id, request!.requestId, 'approve', { approver: 'alice', key: ALICE_KEY });
    expect((await h.deputy.result(id)).output).toBe('Delegated and done.');
    expect((await state(id)).delegations.map((e) => e.status)).toEqual(['completed']);
  });

  it("R7.1 a child whose preset names no approvals still needs its parent's: its email waits", async () => {
    const task = 'authority-6: have a helper email';
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({ briefs: [{ task_name: 'helper', message: 'authority-6 helper' }] }),
      },
      {
        when: (r) => lastMessage(r).endsWith('authority-6 helper'),
        reply: call('send_email', { to: 'x@example.com', body: 'from the helper' }),
      },
      {
        when: (r) => userSays('authority-6 helper')(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: (r) => ({ text: `helper: ${lastTool(r)}` }),
      },
      { when: (r) => userSays(task)(r) && lastTool(r).includes('helper: '), reply: { text: 'The helper reported.' } },
    );
    const id = h.id('authority-6');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const [request] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      "the helper's request",
    );
    expect(request!.path).toBe(`${id}/helper`);
    await h.deputy.decideApproval(id, request!.requestId, 'deny', {
      reason: 'not now',
      approver: 'alice',
      key: ALICE_KEY,
    });
    expect((await h.deputy.result(id)).output).toBe('The helper reported.');
    expect(effectsOf(request!.run)).toEqual([]);
  });
});
