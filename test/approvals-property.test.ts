/**
 * R7.2–R7.6, property-based: fast-check draws trees (the calls at the root, a child or a grandchild), how many calls
 * wait at once, and each one's fate (approved from the root, denied, left to expire). Whatever it draws: every
 * approved call ran exactly once with its own arguments, no denied or expired call ran, nothing stays listed, and no
 * workflow task of the tree failed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventType } from '../src/client/watch-events.js';
import { lastMessage, toolMessages, userSays } from '../src/testing/script.js';
import { delegateReply, PARENT_SCOPES } from './support/delegation.js';
import { approvalConfig, effects, until, useApprovalHarness } from './support/approvals.js';

const { h, state } = useApprovalHarness(approvalConfig({ delegationAboveUsd: 1, timeoutSeconds: 3 }));

const RUNS = Number(process.env.APPROVALS_PROPERTY_RUNS ?? 8);
const SEED = Number(process.env.APPROVALS_PROPERTY_SEED ?? Date.now() % 1_000_000);
type Fate = 'approve' | 'deny' | 'expire';
let cases = 0;

/** One drawn tree: the calls wait at `depth` (0 the root), each with its fate. */
async function runCase(depth: number, fates: Fate[]): Promise<void> {
  const label = `prop-${(cases += 1)}-${SEED}`;
  const address = (k: number) => `${label}-${k}@example.com`;
  const leafTask = depth === 0 ? label : `${label} leaf`;
  const calls = fates.map((_, k) => ({ name: 'send_email', arguments: { to: address(k), body: label } }));
  h.model.add(
    { when: (r) => lastMessage(r).endsWith(leafTask), reply: { toolCalls: calls } },
    {
      when: (r) => userSays(leafTask)(r) && toolMessages(r).length === fates.length,
      reply: { text: `${label} leaf finished` },
    },
  );
  if (depth >= 1) {
    const parentTask = depth === 1 ? label : `${label} mid`;
    h.model.add(
      {
        when: (r) => lastMessage(r).endsWith(parentTask),
        reply: delegateReply({ briefs: [{ task_name: 'leaf', message: `${label} leaf` }] }),
      },
      {
        when: (r) => userSays(parentTask)(r) && lastMessage(r).includes(`${label} leaf finished`),
        reply: { text: `${label} mid finished` },
      },
    );
  }
  if (depth === 2) {
    h.model.add(
      {
        when: (r) => lastMessage(r) === label,
        reply: delegateReply({ briefs: [{ task_name: 'mid', message: `${label} mid`, limits: { maxCostUsd: 0.02 } }] }),
      },
      {
        when: (r) => userSays(label)(r) && lastMessage(r).includes(`${label} mid finished`),
        reply: { text: `${label} done` },
      },
    );
  }
  const id = h.id(label);
  await h.deputy.startRun({ task: label, scopes: PARENT_SCOPES }, { workflowId: id });
  const open = await until(
    () => h.deputy.approvals(id),
    (list) => list.length === fates.length,
    `${label}: its requests`,
  );
  for (const request of open) {
    const fate = fates[calls.findIndex((c) => request.preview.includes(c.arguments.to))]!;
    if (fate !== 'expire') await h.deputy.decideApproval(id, request.requestId, fate);
  }
  const result = await h.deputy.result(id);
  expect(result.status, label).toBe('completed');
  const ran = effects
    .filter((e) => (e.args as { body?: string }).body === label)
    .map((e) => (e.args as { to: string }).to);
  const approved = fates.flatMap((fate, k) => (fate === 'approve' ? [address(k)] : []));
  expect(ran.sort(), `${label}: ${fates.join(',')}`).toEqual(approved.sort());
  expect(await h.deputy.approvals(id)).toEqual([]);
  await expectNoTaskFailed(id);
}

/** No workflow task of the tree under `id` failed (a failed task would retry, and could run a call twice). */
async function expectNoTaskFailed(id: string): Promise<void> {
  const ids = [id];
  for (let i = 0; i < ids.length; i += 1) ids.push(...(await state(ids[i]!)).delegations.map((d) => d.childWorkflowId));
  for (const runId of ids) {
    const history = await h.client.workflow.getHandle(runId).fetchHistory();
    const failed = (history.events ?? []).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
    expect(failed, runId).toEqual([]);
  }
}

describe(`R7.2–R7.6 property: approvals anywhere in random trees (seed ${SEED})`, () => {
  it(`R7.2 R7.3 R7.4 R7.6 ${RUNS} random trees: every approved call ran once, no denied or expired call ran, no workflow task failed`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 2 }),
        fc.array(fc.constantFrom<Fate>('approve', 'deny', 'expire'), { minLength: 1, maxLength: 2 }),
        (depth, fates) => runCase(depth, fates),
      ),
      { numRuns: RUNS, seed: SEED },
    );
  }, 600_000);
});
