/**
 * What the approval attacks share: a worker whose config names an approver, and a live conversation whose email waits
 * for its decision.
 */
import { expect } from 'vitest';
import { approvalProof } from '../../src/ops/approval-proof.js';
import { lastMessage, toolMessages, userSays } from '../../src/testing/script.js';
import { approvalConfig, call, effects, until, useApprovalHarness } from '../support/approvals.js';
import { failedWorkflowTasks } from './support.js';

export function useApprovalAttacks() {
  const KEY = 'attack-approver-key-0123456789abcdef';
  const { h, state } = useApprovalHarness(
    approvalConfig({ approvers: [{ id: 'ops', key: KEY }], timeoutSeconds: 30, delegationAboveUsd: 1 }),
  );
  const effectsOf = (runId: string) => effects.filter((e) => e.runId === runId);
  const lastTool = (r: Parameters<typeof toolMessages>[0]) => toolMessages(r).at(-1) ?? '';
  const approve = (
    runId: string,
    requestId: string,
    { digest, firstRunId }: { digest: string; firstRunId: string },
  ) => ({
    approver: 'ops',
    proof: approvalProof(KEY, { runId, firstRunId, requestId, decision: 'approve', digest }),
  });

  /** A conversation whose model emails `to` (once per task), then says what the tool said; it stays live. */
  async function waitingEmail(label: string, extra: { text?: string } = {}) {
    const task = `${label}: send it`;
    h.model.add(
      {
        when: (r) => lastMessage(r) === task,
        reply: { ...call('send_email', { to: `${label}@example.com`, body: label }), ...extra },
      },
      {
        when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool',
        reply: (r) => ({ text: `tool said: ${lastTool(r)}` }),
      },
      { when: (r) => userSays(task)(r) && lastMessage(r) === 'still there?', reply: { text: 'yes' }, times: 5 },
    );
    const id = h.id(label);
    await h.deputy.startRun({ task, mode: 'conversation' }, { workflowId: id });
    const [request] = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 1,
      `${label}: the request`,
    );
    return { id, request: request! };
  }

  /** The run still answers a person: a message gets its reply. */
  async function stillAnswers(id: string) {
    await until(
      () => state(id),
      (s) => s.status === 'waiting_for_user',
      'the conversation to wait for its person',
    );
    await h.deputy.sendMessage(id, 'still there?');
    await until(
      () => state(id),
      (s) => s.session.at(-1)?.type === 'message/assistant' && s.status === 'waiting_for_user',
      'its reply',
    );
    expect(await failedWorkflowTasks(h.client, id)).toEqual([]);
  }

  /** Denies the request (with proof), then checks the run reads the denial and still answers. */
  async function stillAnswersAfterDeny(id: string, request: { requestId: string; digest: string; firstRunId: string }) {
    const proof = approvalProof(KEY, {
      runId: id,
      firstRunId: request.firstRunId,
      requestId: request.requestId,
      decision: 'deny',
      digest: request.digest,
    });
    await h.deputy.decideApproval(id, request.requestId, 'deny', { approver: 'ops', proof, reason: 'attack over' });
    await stillAnswers(id);
    expect(effectsOf(id)).toEqual([]);
  }

  return { h, state, KEY, effectsOf, lastTool, approve, waitingEmail, stillAnswers, stillAnswersAfterDeny };
}
