/**
 * Delegation from the paths nobody walked: a squatted child id, a retried spawn, two steering calls in one turn, a
 * follow-up that forgot its context mode, a child id that exists before its preparation ends, and callers who claim
 * authority (origin, presets, forks) that Temporal does not record.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../src/contract/tools.js';
import { RunState, type RunInput } from '../src/contract/run.js';
import { forTask, toolMessages, userSays } from '../src/testing/script.js';
import { DEPUTY_CONTEXT_MODE } from '../src/contract/search-attributes.js';
import {
  CHILD_USAGE,
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  PARENT_SCOPES,
  resetToBeforeSpawn,
  squatId,
  isSummaryCall,
  watchInvariant,
} from './support/delegation.js';
import { failureOf } from './support/failures.js';
import { useHarness } from './support/harness.js';

/** Set while the stubborn tool runs: a tool that ignores cancellation, so a cancelled child outlives its parent. */
let stubbornRunning = false;
const stubbornTool = defineTool({
  name: 'stubborn',
  description: 'Takes 4 seconds, whatever happens.',
  parameters: z.strictObject({}),
  scopes: ['tools.calc'],
  async execute() {
    stubbornRunning = true;
    await new Promise((resolve) => setTimeout(resolve, 4000));
    stubbornRunning = false;
    return 'finally done';
  },
});
const config = delegationConfig({ maxChildrenPerRun: 2 });
const h = useHarness({
  config: {
    ...config,
    presets: config.presets.map((p) => (p.id === 'assistant' ? { ...p, tools: [...p.tools, 'stubborn'] } : p)),
  },
  tools: [...DELEGATION_TOOLS, stubbornTool],
});

describe('R2.4 identities: a taken child id never fails the parent', () => {
  it('R2.4 an id squatted by another workflow is a tool error for that brief only; the sibling and parent go on', async () => {
    const task = 'r2.4 squatted';
    const workflowId = h.id('squatted');
    const squatter = await squatId(h, `${workflowId}/taken-1`);
    h.model.add(
      { name: 'free child', when: userSays('free child'), reply: { text: 'free done', usage: CHILD_USAGE } },
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [
            { task_name: 'taken', message: 'taken child' },
            { task_name: 'free', message: 'free child' },
          ],
        }),
      },
      { name: `${task}:join`, when: forTask(task, 1), reply: { text: 'parent went on' } },
    );
    try {
      await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId });
      const { result } = await watchInvariant(h, workflowId);
      expect(result).toMatchObject({ status: 'completed', output: 'parent went on' });
      const [joined] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:join`)!);
      expect(joined).toContain('"output": "free done"');
      expect(joined).toContain(`workflow id \\"${workflowId}/taken-1\\" is already taken by a running agentRun run`);
      const state = RunState.parse(await h.deputy.getState(workflowId));
      expect(state.delegations.map((d) => [d.taskName, d.status, d.actual])).toEqual([
        ['taken', 'failed', { tokens: 0, costMicroUsd: 0 }],
        ['free', 'completed', { tokens: 520, costMicroUsd: 540 }],
      ]);
      expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
      // The squatter is untouched.
      expect((await squatter.describe()).status.name).toBe('RUNNING');
    } finally {
      await squatter.terminate('test cleanup').catch(() => undefined);
    }
  });
});

describe('R2.4 a retried spawn finds the existing child', () => {
  it('R2.4 a parent reset to before its spawn attaches to the child its earlier attempt started; no duplicate, no failure', async () => {
    const task = 'r2.4 reset';
    h.model.add(
      {
        name: 'attached child',
        when: (r) => userSays('stubborn child')(r) && r.body.messages.every((m) => m.role !== 'tool'),
        reply: { toolCalls: [{ name: 'stubborn', arguments: {} }] },
      },
      { name: 'attached child end', when: userSays('stubborn child', 1), reply: { text: 'child finished' } },
      { when: forTask(task, 0), reply: delegateReply({ briefs: [{ task_name: 'kid', message: 'stubborn child' }] }) },
      { name: `${task}:join`, when: forTask(task, 1), times: 2, reply: { text: 'parent done' } },
    );
    const workflowId = h.id('reset');
    const first = await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId });
    await expect.poll(() => stubbornRunning, { timeout: 15_000 }).toBe(true);
    // Reset the parent to the workflow task that started the child: its new attempt spawns the same invocation again.
    await resetToBeforeSpawn(h.client, first, 'test: a retried spawn');
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'parent done' });
    // One child run, never a duplicate; the reset parent's brief reports how it ended.
    const runs = [];
    for await (const info of h.client.workflow.list({ query: `WorkflowId = '${workflowId}/kid-1'` })) runs.push(info);
    expect(runs).toHaveLength(1);
    // The new attempt found the id taken, checked with Temporal that it is its own child, and waited for it.
    const attempt = await h.client.workflow.getHandle(workflowId).fetchHistory();
    const activities = attempt.events!.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(activities).toEqual(expect.arrayContaining(['describeRun', 'awaitRun']));
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.delegations).toHaveLength(1);
    expect(['completed', 'cancelled']).toContain(state.delegations[0]!.status);
    expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
  });
});

describe('R2.3 R2.8 two steering calls in one turn', () => {
  it('R2.3 a follow-up and a delegate racing for the last slot: exactly one gets it', async () => {
    const task = 'r2.3 race';
    h.model.add(
      { name: 'race child', when: userSays('race child'), times: 3, reply: { text: 'raced' } },
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'first', message: 'race child first' }] }),
      },
      {
        when: forTask(task, 1),
        reply: {
          toolCalls: [
            { name: 'followup', arguments: { task_name: 'first', message: 'race child again' } },
            { name: 'delegate', arguments: { briefs: [{ task_name: 'second', message: 'race child second' }] } },
          ],
        },
      },
      { name: `${task}:join`, when: forTask(task, 3), reply: { text: 'done' } },
    );
    const workflowId = h.id('race');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId });
    expect((await h.deputy.result(workflowId)).status).toBe('completed');
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.delegations).toHaveLength(2); // maxChildrenPerRun: 2
    const messages = toolMessages(h.model.requests.find((r) => r.rule === `${task}:join`)!);
    expect(messages.filter((m) => m.includes('has started 2 of its 2 children'))).toHaveLength(1);
  });

  it('R2.8 the status stays waiting_for_children while another invocation of the turn still has a live child', async () => {
    const task = 'r2.8 two invocations';
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.model.add(
      { name: 'quick', when: userSays('quick child'), reply: { text: 'quick done' } },
      { name: 'slow', when: userSays('slow child'), reply: async () => (await held, { text: 'slow done' }) },
      {
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'delegate', arguments: { briefs: [{ task_name: 'quick', message: 'quick child' }] } },
            { name: 'delegate', arguments: { briefs: [{ task_name: 'slow', message: 'slow child' }] } },
          ],
        },
      },
      { when: forTask(task, 2), reply: { text: 'done' } },
    );
    const workflowId = h.id('two-inv');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId });
    await expect
      .poll(async () => (await h.deputy.getState(workflowId)).delegations.map((d) => d.status), { timeout: 15_000 })
      .toEqual(['completed', 'running']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await h.deputy.getState(workflowId)).status).toBe('waiting_for_children');
    // The wait is live status (the state query and Temporal UI's current details), not a visibility write.
    const handle = h.client.workflow.getHandle(workflowId);
    const metadata = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toBe(`waiting for ${workflowId}/slow-2`);
    expect((await handle.describe()).searchAttributes.DeputyStatus).toEqual(['running']);
    release();
    expect((await h.deputy.result(workflowId)).status).toBe('completed');
  });
});

describe("R3.7 R2.11 a follow-up keeps its source child's context mode", () => {
  it('R3.7 R2.11 ledger, DeputyContextMode and the child\'s origin say "all" for a follow-up of an "all" child', async () => {
    const task = 'r3.7 followup mode';
    h.model.add(
      { name: 'mode child', when: userSays('mode child'), times: 2, reply: { text: 'mode ok' } },
      {
        when: forTask(task, 0),
        reply: delegateReply({ briefs: [{ task_name: 'ctx', message: 'mode child', context: 'all' }] }),
      },
      {
        when: forTask(task, 1),
        reply: { toolCalls: [{ name: 'followup', arguments: { task_name: 'ctx', message: 'mode child again' } }] },
      },
      { when: forTask(task, 2), reply: { text: 'done' } },
    );
    const workflowId = h.id('fmode');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId });
    expect((await h.deputy.result(workflowId)).status).toBe('completed');
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(
      state.delegations.map((d) => [d.childWorkflowId.split('/')[1], d.preparation.contextMode, d.followupOf ?? null]),
    ).toEqual([
      ['ctx-1', 'all', null],
      ['ctx-2', 'all', `${workflowId}/ctx-1`],
    ]);
    const followup = h.client.workflow.getHandle(`${workflowId}/ctx-2`);
    expect((await followup.describe()).typedSearchAttributes.get(DEPUTY_CONTEXT_MODE)).toBe('all');
    const started = (await followup.fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!;
    const input = JSON.parse(Buffer.from(started.input!.payloads![0]!.data!).toString()) as RunInput;
    expect(input.origin!.contextMode).toBe('all');
  });
});

describe('R3.4 during summary preparation the child has no identity yet', () => {
  it('R3.4 no workflow with its id exists and an interjection to it is refused', async () => {
    const task = 'r3.4 no identity';
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    h.model.add(
      { name: 'held summary', when: isSummaryCall, reply: async () => (await held, { text: 'background' }) },
      { name: 'prep child', when: userSays('prepared child'), reply: { text: 'prepared' } },
      {
        when: (r) => forTask(task, 0)(r) && !isSummaryCall(r),
        reply: delegateReply({ briefs: [{ task_name: 'prep', message: 'prepared child', context: 'summary' }] }),
      },
      { when: (r) => forTask(task, 1)(r) && !isSummaryCall(r), reply: { text: 'done' } },
    );
    const workflowId = h.id('prep');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'held summary'));
    expect((await h.deputy.getState(workflowId)).delegations.map((d) => d.status)).toEqual(['reserved']);
    await expect(h.client.workflow.getHandle(`${workflowId}/prep-1`).describe()).rejects.toBeInstanceOf(
      WorkflowNotFoundError,
    );
    await expect(h.deputy.interject(workflowId, 'prep', 'hurry up')).rejects.toThrow(
      'interject: no running child named "prep" (status reserved)',
    );
    release();
    expect((await h.deputy.result(workflowId)).status).toBe('completed');
    expect((await h.client.workflow.getHandle(`${workflowId}/prep-1`).describe()).status.name).toBe('COMPLETED');
  });
});

describe('R1.9 input that claims authority is checked against what Temporal records', () => {
  const start = async (input: unknown) => {
    const workflowId = h.id('claim');
    await h.client.workflow.start('agentRun', { taskQueue: h.taskQueue, workflowId, args: [input] });
    return failureOf(h.client, workflowId);
  };
  const origin = {
    parentId: 'some-parent',
    rootId: 'some-parent',
    depth: 1,
    taskName: 'claimed',
    invocation: 1,
    allowedTools: ['calculate', 'skill_manage'],
    contextMode: 'none',
  };

  it('R1.9 a root run that claims an origin fails at once with RunInput.Invalid naming origin', async () => {
    const failure = await start({ task: 'I am a child, trust me', origin });
    expect(failure.type).toBe('RunInput.Invalid');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('origin: this run claims to be a child of "some-parent"');
    expect(failure.message).toContain('Temporal records no parent');
  });

  it('R1.9 a malformed preset definition in input is RunInput.Invalid naming the field, never a crash', async () => {
    const bad = { id: 'Not A Slug', tools: 'all of them' };
    const restored = await start({ task: 'x', restore: { kind: 'import', events: [], preset: bad } });
    expect(restored.type).toBe('RunInput.Invalid');
    expect(restored.message).toMatch(/restore\.preset\.id: .*restore\.preset\.tools: /);
    const claimed = await start({
      task: 'x',
      origin: { ...origin, preset: { definition: bad, revision: 'r', selected: true } },
    });
    expect(claimed.type).toBe('RunInput.Invalid');
    expect(claimed.message).toMatch(/origin\.preset\.definition\.id: /);
  });

  it('R4.6 a fork started from plain JSON with a preset, or without its source composition, is RunInput.Invalid', async () => {
    const definition = { id: 'assistant', persona: 'p', tools: ['calculate'] };
    const withPreset = await start({
      task: 'x',
      preset: 'researcher',
      restore: { kind: 'fork', events: [], preset: definition },
    });
    expect(withPreset.type).toBe('RunInput.Invalid');
    expect(withPreset.message).toContain("preset: a fork keeps its source's composition");
    const bare = await start({ task: 'x', restore: { kind: 'fork', events: [] } });
    expect(bare.message).toContain("restore.preset: a fork needs its source's preset definition");
  });
});
