/**
 * R2.16: a follow-up is the same child continued. It keeps every narrowing of the brief it follows — the role and its
 * model, the tools it was allowed, the limits it asked for, the return shape — follows only a child this parent
 * really started, and the same invocation after a reset attaches to the child it started even once that child has
 * closed.
 */
import { describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { forTask, offeredTools, toolMessages, userSays } from '../src/testing/script.js';
import {
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  listChildren,
  PARENT_SCOPES,
  resetToBeforeSpawn,
  squatId,
} from './support/delegation.js';
import { useHarness } from './support/harness.js';

const base = delegationConfig();
const h = useHarness({
  config: {
    ...base,
    prices: { ...base.prices, 'role-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } },
    presets: base.presets.map((p) => (p.id === 'researcher' ? { ...p, model: 'role-model' } : p)),
  },
  tools: DELEGATION_TOOLS,
});

const followup = (taskName: string, message: string) => ({
  toolCalls: [{ name: 'followup', arguments: { task_name: taskName, message } }],
});

describe('R2.16 a follow-up keeps every narrowing of its brief', () => {
  it('R2.16 allowed_tools, limits and return_shape of the brief hold for its follow-up', async () => {
    const task = 'r2.16 narrowed follow-up';
    h.model.add(
      { name: 'narrow first', when: userSays('narrow child: first'), reply: { text: '{"total": 1}' } },
      { name: 'narrow again', when: userSays('narrow child: again'), reply: { text: '{"total": 2}' } },
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [
            {
              task_name: 'narrow',
              message: 'narrow child: first',
              allowed_tools: ['calculate'],
              limits: { maxTurns: 2, maxToolCalls: 1 },
            },
          ],
          return_shape: { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] },
        }),
      },
      { when: forTask(task, 1), reply: followup('narrow', 'narrow child: again') },
      { name: `${task}:done`, when: forTask(task, 2), reply: { text: 'done' } },
    );
    const id = h.id('narrowed');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    expect((await h.deputy.result(id)).status).toBe('completed');
    const first = h.model.requests.find((r) => r.rule === 'narrow first')!;
    const again = h.model.requests.find((r) => r.rule === 'narrow again')!;
    expect(offeredTools(first)).toEqual(['calculate', 'ask_parent']);
    expect(offeredTools(again)).toEqual(['calculate', 'ask_parent']);
    expect(again.body.messages.at(-1)?.content).toContain('Answer with JSON only, matching this JSON Schema');
    const [source, continued] = RunState.parse(await h.deputy.getState(id)).delegations;
    expect(continued!.followupOf).toBe(source!.childWorkflowId);
    const child = RunState.parse(await h.deputy.getState(continued!.childWorkflowId));
    expect(child.limits).toMatchObject({ maxTurns: 2, maxToolCalls: 1 });
    // The result was checked against the shape: parsed JSON, not text.
    const [, joined] = h.model.requests.filter(forTask(task)).slice(1);
    expect(toolMessages(joined!).at(-1)).toContain('"status": "completed", "output": { "total": 2 }');
  });

  it("R2.16 a role child's follow-up runs on its role's model, not the parent's", async () => {
    const task = 'r2.16 role follow-up';
    h.model.add(
      { name: 'role first', when: userSays('role child: first'), reply: { text: 'found it' } },
      { name: 'role again', when: userSays('role child: again'), reply: { text: 'found more' } },
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'look', message: 'role child: first', role: 'researcher' }] }),
      },
      { when: forTask(task, 1), reply: followup('look', 'role child: again') },
      { when: forTask(task, 2), reply: { text: 'done' } },
    );
    const id = h.id('role-followup');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
    expect((await h.deputy.result(id)).status).toBe('completed');
    expect(h.model.requests.find((r) => r.rule === 'role first')!.body.model).toBe('role-model');
    expect(h.model.requests.find((r) => r.rule === 'role again')!.body.model).toBe('role-model');
    expect(offeredTools(h.model.requests.find((r) => r.rule === 'role again')!)).toEqual([
      'search_notes',
      'ask_parent',
    ]);
  });

  it('R2.16 a follow-up of a brief refused at its start (its id held by another run) is a tool error; that run is never read', async () => {
    const task = 'r2.16 follow a squatted brief';
    const id = h.id('squat-followup');
    const squatter = await squatId(h, `${id}/taken-1`);
    try {
      h.model.add(
        { when: forTask(task, 0), reply: delegateReply({ briefs: [{ task_name: 'taken', message: 'never runs' }] }) },
        { when: forTask(task, 1), reply: followup('taken', 'go on') },
        { name: `${task}:after`, when: forTask(task, 2), reply: { text: 'gave up' } },
      );
      await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: id });
      expect((await h.deputy.result(id)).status).toBe('completed');
      const refusal = toolMessages(h.model.requests.find((r) => r.rule === `${task}:after`)!).at(-1);
      expect(refusal).toMatch(/^child "taken" was never started \(.*already taken.*\); nothing was spawned$/);
      const state = RunState.parse(await h.deputy.getState(id));
      expect(state.delegations.map((d) => [d.taskName, d.status])).toEqual([['taken', 'failed']]);
      const history = await h.client.workflow.getHandle(id).fetchHistory();
      const loads = history.events!.filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'loadSession',
      );
      expect(loads).toEqual([]);
    } finally {
      await squatter.terminate();
    }
  });
});

describe('R2.16 the same invocation after a reset attaches to the child it started', () => {
  it('R2.16 R2.4 a parent reset to before its spawn, its child already closed: it attaches to that child, never runs a second', async () => {
    const task = 'r2.16 reset after the child closed';
    h.model.add(
      { name: 'closed child', when: userSays('closes before the reset'), times: 2, reply: { text: 'child result' } },
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'kid', message: 'closes before the reset' }] }),
      },
      { name: `${task}:join`, when: forTask(task, 1), times: 2, reply: { text: 'parent done' } },
    );
    const workflowId = h.id('reset-closed');
    const first = await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId });
    expect((await h.deputy.result(workflowId)).status).toBe('completed');
    await resetToBeforeSpawn(h.client, first, 'test: a reset after the child closed');
    await expect
      .poll(async () => (await h.client.workflow.getHandle(workflowId).describe()).runId, { timeout: 10_000 })
      .not.toBe(first.firstExecutionRunId);
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'parent done' });
    // The child ran once: one run of its id, one model request.
    const runs = [];
    for await (const info of h.client.workflow.list({ query: `WorkflowId = '${workflowId}/kid-1'` })) runs.push(info);
    expect(runs).toHaveLength(1);
    expect(h.model.requests.filter((r) => r.rule === 'closed child')).toHaveLength(1);
    expect(await listChildren(h.client, workflowId)).toHaveLength(1);
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.delegations.map((d) => [d.taskName, d.status, d.summary])).toEqual([
      ['kid', 'completed', 'child result'],
    ]);
  });
});
