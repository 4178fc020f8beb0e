import { describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { forTask, userSays } from '../src/testing/script.js';
import { delegationConfig, DELEGATION_TOOLS, listChildren, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';

// Every workflow task replays the run from its first event: a spawn that is re-executed must find its child.
const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS, workerOptions: { maxCachedWorkflows: 0 } });

describe('R2.4 spawning is deterministic and idempotent', () => {
  it('R2.4 with no workflow cache, each brief yields exactly one child with the specified id on the background queue', async () => {
    const task = 'r2.4 replayed spawns';
    const brief = (name: string, n: number) => ({ task_name: name, message: `replayed child ${name} ${n}` });
    h.model.add(
      { name: 'replay child', when: userSays('replayed child'), times: 4, delayMs: 200, reply: { text: 'child ok' } },
      {
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'delegate', arguments: { briefs: [brief('alpha', 1), brief('beta', 1)] } },
            // A second invocation in the same turn that reuses a name: refused, whatever the interleaving.
            { name: 'delegate', arguments: { briefs: [brief('alpha', 2)] }, id: 'second-invocation' },
          ],
        },
      },
      {
        when: forTask(task, 2),
        reply: { toolCalls: [{ name: 'delegate', arguments: { briefs: [brief('gamma', 3), brief('delta', 3)] } }] },
      },
      { name: 'final', when: forTask(task, 3), reply: { text: 'all joined' } },
    );
    const parentId = h.id('replay-parent');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    expect(await h.deputy.result(parentId)).toMatchObject({ status: 'completed', output: 'all joined' });

    const firstTurnResults = h.model.requests
      .find((r) => r.rule === 'final')!
      .body.messages.filter((m) => m.role === 'tool');
    // Results join the session as they come in: find the refused invocation's by its call id.
    expect(firstTurnResults.find((m) => m.tool_call_id === 'second-invocation')?.content).toBe(
      'task_name "alpha" is already used in this run; pick another; nothing was spawned',
    );

    const expected = ['alpha-1', 'beta-1', 'delta-2', 'gamma-2'].map((suffix) => `${parentId}/${suffix}`);
    await expect
      .poll(async () => (await listChildren(h.client, parentId)).map((c) => c.workflowId), { timeout: 15_000 })
      .toEqual(expected);
    for (const child of await listChildren(h.client, parentId)) expect(child.taskQueue).toBe(`${h.taskQueue}-bg`);
    expect(h.model.requests.filter((r) => r.rule === 'replay child')).toHaveLength(4);
    const ledger = RunState.parse(await h.deputy.getState(parentId)).delegations;
    expect(ledger.map((d) => d.childWorkflowId).sort()).toEqual(expected);
  });
});
