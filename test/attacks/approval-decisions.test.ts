/**
 * Attacks on approvals at their edges (docs/security.md rows 43, 45): decisions racing a request's deadline, and
 * random payloads at `decideApproval`. Each ends with its literal outcome: the call not run (or run once), the run
 * still answering, no workflow task failed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { lastMessage, userSays } from '../../src/testing/script.js';
import { call, until } from '../support/approvals.js';
import { failedWorkflowTasks } from './support.js';
import { useApprovalAttacks } from './approval-support.js';

const { h, effectsOf, approve, waitingEmail, stillAnswersAfterDeny } = useApprovalAttacks();

describe('R7.6 a decision racing the deadline', () => {
  it('R7.6 attack 48: approvals sent just before, at and just after a request’s deadline: a refused one never runs, a taken one runs at most once, no task fails', async () => {
    const offsets = [-300, -60, 0, 60];
    const runs = await Promise.all(
      offsets.map(async (offset, i) => {
        const task = `attack-48-${i}: send at the edge`;
        h.model.add(
          {
            when: (r) => lastMessage(r) === task,
            reply: call('send_email', { to: `edge-${i}@example.com`, body: 'edge' }),
          },
          { when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: 'edge done' } },
        );
        const id = h.id(`attack-48-${i}`);
        // The run's own deadline bounds the request's: 3 s from now.
        await h.deputy.startRun(
          { task, limits: { deadline: new Date(Date.now() + 3000).toISOString() } },
          { workflowId: id },
        );
        const [request] = await until(
          () => h.deputy.approvals(id),
          (list) => list.length === 1,
          'the request',
        );
        return { id, request: request!, offset };
      }),
    );
    const decided = await Promise.all(
      runs.map(async ({ id, request, offset }) => {
        await new Promise((resolve) =>
          setTimeout(resolve, Math.max(0, Date.parse(request.deadline) + offset - Date.now())),
        );
        const taken = await h.deputy
          .decideApproval(id, request.requestId, 'approve', approve(id, request.requestId, request))
          .then(
            () => true,
            () => false,
          );
        await h.deputy.result(id);
        return { id, taken };
      }),
    );
    for (const { id, taken } of decided) {
      expect(effectsOf(id).length, id).toBeLessThanOrEqual(taken ? 1 : 0);
      expect(await failedWorkflowTasks(h.client, id)).toEqual([]);
    }
  });
});

describe('R7.4 random payloads at decideApproval', () => {
  it('R7.4 attack 47: null, arrays, huge strings, prototype keys and near-valid decisions are refused by the validator; the request stays open and the run answers', async () => {
    const { id, request } = await waitingEmail('attack-47');
    const handle = h.client.workflow.getHandle(id);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constant(null),
          fc.anything(),
          fc.constant('x'.repeat(600_000)),
          fc.constant(JSON.parse('{"__proto__": {"decision": "approve"}, "requestId": "a1.1"}') as unknown),
          fc.record(
            {
              requestId: fc.oneof(fc.constant('a1.1'), fc.string()),
              decision: fc.oneof(fc.constant('approve'), fc.string()),
              approver: fc.oneof(fc.constant('ops'), fc.string()),
              proof: fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), fc.string()),
              extra: fc.anything(),
            },
            { requiredKeys: [] },
          ),
        ),
        async (payload) => {
          await expect(handle.executeUpdate('decideApproval', { args: [payload] })).rejects.toThrow();
        },
      ),
      { numRuns: 60, seed: 20261206 },
    );
    expect((await h.deputy.approvals(id)).map((r) => r.requestId)).toEqual(['a1.1']);
    expect(effectsOf(id)).toEqual([]);
    expect(await failedWorkflowTasks(h.client, id)).toEqual([]);
    await stillAnswersAfterDeny(id, request);
  });
});
