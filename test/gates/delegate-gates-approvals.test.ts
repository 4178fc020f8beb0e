/**
 * The `delegate` gate area (R5.5) where delegation and approvals meet, G22–G24: a child's request is the child's at
 * its parent, a parent waiting on its children asks nothing of its own, and a delegation past the approval threshold
 * reserves and starts nothing until approved. `npm run gates` runs them with G1–G21 (scripts/gates.ts).
 */
import { describe, expect, it } from 'vitest';
import { lastMessage, userSays } from '../../src/testing/script.js';
import { delegateReply, PARENT_SCOPES } from '../support/delegation.js';
import { call, effects, until, useApprovalHarness } from '../support/approvals.js';

const { h, state, listedStatus } = useApprovalHarness();

/** A root that delegates (and waits for) one child whose email waits for approval; its id and the request. */
async function childWaiting(label: string) {
  const task = `${label}: delegate the mail`;
  const brief = `${label} mailer`;
  h.model.add(
    {
      when: (r) => lastMessage(r) === task,
      reply: delegateReply({ briefs: [{ task_name: 'mailer', message: brief }] }),
    },
    {
      when: (r) => lastMessage(r).endsWith(brief),
      reply: call('send_email', { to: `${label}@example.com`, body: label }),
    },
    { when: (r) => userSays(brief)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: `${label} mailed` } },
    { when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: `${label} done` } },
  );
  const root = h.id(label);
  await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: root });
  const [request] = await until(
    () => h.deputy.approvals(root),
    (list) => list.length > 0,
    'the request',
  );
  return { root, child: `${root}/mailer-1`, request: request! };
}

describe('R5.5 delegate gates', () => {
  it('G22 a child’s request is the child’s at its parent: listed with the child’s run and path, and a decision sent to the parent is refused naming the child', async () => {
    const { root, child, request } = await childWaiting('g22');
    expect(request).toMatchObject({ run: child, path: `${root}/mailer`, tool: 'send_email' });
    // Sent to the parent's own run, the decision is refused, naming where the request waits.
    const atParent = await h.deputy.temporal.workflow
      .getHandle(root)
      .executeUpdate('decideApproval', { args: [{ requestId: request.requestId, decision: 'approve' }] })
      .then(
        () => 'taken',
        (err: Error) => (err.cause as Error | undefined)?.message ?? err.message,
      );
    expect(atParent).toBe(
      `decideApproval: request ${request.requestId} waits in run ${child}, not this one: send the decision there`,
    );
    // Found from the root by the client, it reaches the child.
    await h.deputy.decideApproval(root, request.requestId, 'approve');
    expect(await h.deputy.result(root)).toMatchObject({ status: 'completed', output: 'g22 done' });
    expect(effects.filter((e) => e.runId === child)).toHaveLength(1);
  });

  it('G23 a parent waiting on its children issues no request of its own: no requestApproval in its history, its status stays waiting_for_children', async () => {
    const { root, child, request } = await childWaiting('g23');
    const listed = await h.deputy.approvals(root);
    expect(listed.map((r) => r.run)).toEqual([child]);
    expect((await state(root)).status).toBe('waiting_for_children');
    expect(await listedStatus(root)).toBe('running');
    expect(await listedStatus(child)).toBe('waiting_for_approval');
    await h.deputy.decideApproval(root, request.requestId, 'deny', { reason: 'g23 says no' });
    await h.deputy.result(root);
    const history = await h.client.workflow.getHandle(root).fetchHistory();
    const asked = (history.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'requestApproval',
    );
    expect(asked).toEqual([]);
  });

  it('G24 a delegation reserving more than approvals.delegationAboveUsd reserves and starts nothing until approved; denied, nothing was spent on it', async () => {
    const task = 'g24: a big delegation';
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({ briefs: [{ task_name: 'big', message: 'g24 big job', limits: { maxCostUsd: 0.05 } }] }),
      },
      { when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: 'g24 done' } },
    );
    const root = h.id('g24');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: root });
    const [request] = await until(
      () => h.deputy.approvals(root),
      (list) => list.length === 1,
      'the request',
    );
    expect(request).toMatchObject({ run: root, tool: 'delegate' });
    const waiting = await state(root);
    expect(waiting.delegations).toEqual([]);
    expect(waiting.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    await h.deputy.decideApproval(root, request!.requestId, 'deny', { reason: 'too dear' });
    expect(await h.deputy.result(root)).toMatchObject({ status: 'completed', output: 'g24 done' });
    const final = await state(root);
    expect(final.delegations).toEqual([]);
    expect(h.model.requests.some((r) => userSays('g24 big job')(r))).toBe(false);
  });
});
