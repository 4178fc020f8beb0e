/**
 * An attack on the delegation threshold (docs/security.md row 49): one answer splits a delegation past
 * `approvals.delegationAboveUsd` into four calls, each under it.
 */
import { describe, expect, it } from 'vitest';
import { lastMessage, userSays } from '../../src/testing/script.js';
import { approvalConfig, until, useApprovalHarness } from '../support/approvals.js';
import { listChildren, PARENT_SCOPES } from '../support/delegation.js';

const { h } = useApprovalHarness(approvalConfig({ delegationAboveUsd: 0.1 }));

describe('attacks on the delegation threshold', () => {
  it('R7.1 attack 52: four delegate calls at $0.09 in one answer ($0.36 against $0.10): the first starts, the other three ask', async () => {
    const task = 'attack-52: split the delegation';
    const brief = (n: number) => ({
      name: 'delegate',
      arguments: {
        briefs: [{ task_name: `part-${n}`, message: `attack-52 part ${n}.`, limits: { maxCostUsd: 0.09 } }],
      },
    });
    h.model.add(
      { when: (r) => lastMessage(r) === task, reply: { toolCalls: [1, 2, 3, 4].map(brief) } },
      ...[1, 2, 3, 4].map((n) => ({ when: userSays(`attack-52 part ${n}.`), reply: { text: `part ${n} done` } })),
      { when: (r) => userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool', reply: { text: 'parts done' } },
    );
    const id = h.id('attack-52');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    const open = await until(
      () => h.deputy.approvals(id),
      (list) => list.length === 3,
      'three requests',
    );
    expect(open.map((r) => r.why)).toEqual([
      'this delegation would reserve $0.0900 for its children, $0.1800 with the other delegations of the same model answer, above approvals.delegationAboveUsd ($0.1)',
      'this delegation would reserve $0.0900 for its children, $0.1800 with the other delegations of the same model answer, above approvals.delegationAboveUsd ($0.1)',
      'this delegation would reserve $0.0900 for its children, $0.1800 with the other delegations of the same model answer, above approvals.delegationAboveUsd ($0.1)',
    ]);
    const started = await until(
      () => listChildren(h.client, id),
      (children) => children.length > 0,
      'the first child in visibility',
    );
    expect(started.map((c) => c.workflowId)).toEqual([`${id}/part-1-1`]);
    for (const request of open)
      await h.deputy.decideApproval(id, request.requestId, 'deny', { reason: 'one is enough' });
    expect(await h.deputy.result(id)).toMatchObject({ status: 'completed', output: 'parts done' });
    expect((await listChildren(h.client, id)).map((c) => c.workflowId)).toEqual([`${id}/part-1-1`]);
  });
});
