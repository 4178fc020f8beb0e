/**
 * The delegation promises attacked from the paths nobody walked: a summary that pushed used + reserved
 * past max, a child that reports more than it was given, a squatted child id, two invocations racing the caps and the
 * status, a follow-up that forgot its context mode, a child id that exists before its preparation ends, and callers
 * who claim authority (origin, presets, forks) that Temporal does not record.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../src/contract/tools.js';
import { RunState, type RunInput } from '../src/contract/run.js';
import { loadTree } from '../src/client/inspect.js';
import { renderTree } from '../src/client/tree.js';
import type { WatchEvent } from '../src/client/watch.js';
import { forTask, toolMessages, userSays, type RecordedRequest } from '../src/testing/scripted-model.js';
import { worstUsage } from '../src/testing/script-usage.js';
import { DEPUTY_CONTEXT_MODE, DEPUTY_STATUS } from '../src/contract/search-attributes.js';
import {
  CHILD_USAGE,
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  PARENT_SCOPES,
  PARENT_USAGE,
  resetToBeforeSpawn,
  squatId,
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

const isSummaryCall = (r: RecordedRequest) =>
  (r.body.messages[0]?.content ?? '').startsWith('You write the background');

/** Polls the parent's state until it ends, checking used + reserved ≤ max at every observation. */
async function watchInvariant(workflowId: string) {
  const done = h.deputy.result(workflowId);
  let finished = false;
  void done.finally(() => (finished = true));
  const worst = { tokens: 0, costMicroUsd: 0 };
  let observations = 0;
  for (;;) {
    const last = finished;
    const state = RunState.parse(await h.deputy.getState(workflowId));
    if (state.limits) {
      observations += 1;
      const tokens = state.usage.totalTokens + state.reserved.tokens;
      const cost = state.usage.costMicroUsd + state.reserved.costMicroUsd;
      worst.tokens = Math.max(worst.tokens, tokens);
      worst.costMicroUsd = Math.max(worst.costMicroUsd, cost);
      expect(tokens, `tokens used + reserved at observation ${observations}`).toBeLessThanOrEqual(
        state.limits.maxTokens!,
      );
      expect(cost, `cost used + reserved at observation ${observations}`).toBeLessThanOrEqual(
        state.limits.maxCostMicroUsd!,
      );
    }
    if (last) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { result: await done, worst, observations };
}

describe('R2.13 hard budgets across a delegation', () => {
  it('R2.13 R3.4 a summary prepared while two reservations are held never pushes used + reserved past max', async () => {
    const task = 'r2.13 summary squeeze';
    const briefs = {
      briefs: [
        { task_name: 'plain', message: 'squeeze child plain', limits: { maxCostUsd: 0.0008 } },
        { task_name: 'sum', message: 'squeeze child sum', context: 'summary', limits: { maxCostUsd: 0.0008 } },
      ],
    };
    // The parent's first call, as reported (more than Deputy counts for it), at $1 in / $2 out per million tokens.
    const firstCallCost = PARENT_USAGE.prompt_tokens + 2 * PARENT_USAGE.completion_tokens;
    const max = 1600 + firstCallCost + 260;
    h.model.add(
      { name: 'squeeze summary', when: isSummaryCall, delayMs: 300, reply: { text: 'The tax is 8%.', usage: 'worst' } },
      {
        name: 'squeeze child',
        when: userSays('squeeze child'),
        times: 2,
        delayMs: 300,
        reply: { text: 'ok', usage: 'worst' },
      },
      { when: (r) => forTask(task, 0)(r) && !isSummaryCall(r), reply: delegateReply(briefs, PARENT_USAGE) },
      { name: `${task}:join`, when: (r) => forTask(task, 1)(r) && !isSummaryCall(r), reply: { text: 'done' } },
    );
    const workflowId = h.id('squeeze');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES, limits: { maxCostUsd: max / 1_000_000 } }, { workflowId });
    const { result, worst, observations } = await watchInvariant(workflowId);
    expect(observations).toBeGreaterThan(3);
    expect(worst.costMicroUsd).toBeLessThanOrEqual(max);
    expect(result.usage.costMicroUsd).toBeLessThanOrEqual(max);
    // The summary call's worst case (its input as counted, and its max_completion_tokens) fits in what was free
    // after both reservations: max − the parent's first call − 2 × 800 reserved = 260 micro-USD.
    const summary = h.model.requests.find((r) => r.rule === 'squeeze summary')!;
    const worstSummary = worstUsage(summary.body);
    expect(worstSummary.completion_tokens).toBeGreaterThanOrEqual(16);
    expect(worstSummary.prompt_tokens + 2 * worstSummary.completion_tokens).toBeLessThanOrEqual(260);
    // Children billed to their caps leave the parent nothing for another call: it ends, it does not overspend.
    expect(result).toMatchObject({ status: 'limit_reached', limit: 'maxCostUsd' });
  });

  it('R2.15 a summary billed far past its hold is absorbed by the reservations of children not yet started: used + reserved never passes max, and they start with the limits they were cut to', async () => {
    const task = 'r2.15 absorb an over-billed summary';
    h.model.add(
      // The summary for "a" is billed 4,000 input tokens: far past its hold (Deputy counts a few hundred).
      {
        name: 'billed summary',
        when: (r) => isSummaryCall(r) && userSays('absorb child a')(r),
        reply: { text: 'Background for a.', usage: { prompt_tokens: 4000, completion_tokens: 10 } },
      },
      // The summary for "b" is still being written meanwhile, holding its own worst case.
      {
        name: 'slow summary',
        when: (r) => isSummaryCall(r) && userSays('absorb child b')(r),
        delayMs: 1500,
        reply: { text: 'Background for b.', usage: 'counted' },
      },
      {
        name: 'absorb child',
        when: (r) => !isSummaryCall(r) && userSays('absorb child')(r),
        times: 2,
        reply: { text: 'ok' },
      },
      {
        when: (r) => forTask(task, 0)(r) && !isSummaryCall(r),
        reply: delegateReply(
          {
            briefs: ['a', 'b'].map((n) => ({ task_name: n, message: `absorb child ${n}`, context: 'summary' })),
          },
          PARENT_USAGE,
        ),
      },
      { when: (r) => forTask(task, 1)(r) && !isSummaryCall(r), reply: { text: 'done' } },
    );
    const workflowId = h.id('absorb');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES, limits: { maxTokens: 12_000 } }, { workflowId });
    const { result, observations } = await watchInvariant(workflowId);
    expect(observations).toBeGreaterThan(3);
    expect(result.usage.totalTokens).toBeLessThanOrEqual(12_000);
    const state = RunState.parse(await h.deputy.getState(workflowId));
    const [a, b] = state.delegations;
    // Each was reserved 2,000 tokens (delegation.childDefaults); together they gave up what the summary overran.
    expect(a!.reserved.tokens + b!.reserved.tokens).toBeLessThan(4000);
    expect(a!.reserved.tokens).toBeGreaterThanOrEqual(1);
    for (const entry of [a!, b!]) {
      const child = RunState.parse(await h.deputy.getState(entry.childWorkflowId));
      expect(child.limits?.maxTokens, entry.taskName).toBe(entry.reserved.tokens);
    }
  });

  it("R2.15 the parent's synthesis reserve is never lent to a child: a brief asking for everything gets what is left after it, and the parent still writes its final answer", async () => {
    const task = 'r2.15 keep the synthesis reserve';
    h.model.add(
      // The child bills everything its cap allows.
      { name: 'greedy child', when: userSays('spend all you get'), reply: { text: 'spent', usage: 'worst' } },
      {
        when: forTask(task, 0),
        reply: {
          text: 'Delegating.',
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [{ task_name: 'greedy', message: 'spend all you get', limits: { maxTokens: 50_000 } }],
              },
            },
          ],
          usage: PARENT_USAGE,
        },
      },
      { name: 'final', when: forTask(task, 1), reply: { text: 'final answer', usage: 'counted' } },
    );
    const workflowId = h.id('keep');
    await h.deputy.startRun(
      { task, scopes: PARENT_SCOPES, limits: { maxTokens: 10_000, synthesisReserve: { tokens: 3000 } } },
      { workflowId },
    );
    const result = await h.deputy.result(workflowId);
    const [entry] = RunState.parse(await h.deputy.getState(workflowId)).delegations;
    // 10,000 − 5,100 used by the delegate call − 3,000 kept for the final answer.
    expect(entry!.reserved.tokens).toBe(1900);
    const child = RunState.parse(await h.deputy.getState(entry!.childWorkflowId));
    expect(child.limits?.maxTokens).toBe(1900);
    // It spent nearly all of it; what is left is the reserve, and the parent's next call still fits in it.
    expect(child.usage.totalTokens).toBeGreaterThan(1500);
    expect(result).toMatchObject({ status: 'completed', output: 'final answer' });
    expect(result.usage.totalTokens).toBeLessThanOrEqual(10_000);
  });

  it('R2.15 R2.6 a child whose provider bills more than its reservation is charged all of it; the overrun is shown in the ledger, the tree and the watch, and the parent stops at its limit', async () => {
    const task = 'r2.15 over-billing child';
    h.model.add(
      {
        name: 'liar',
        when: userSays('report a lot'),
        reply: { text: 'ok', usage: { prompt_tokens: 90_000, completion_tokens: 0 } },
      },
      { when: forTask(task, 0), reply: delegateReply({ briefs: [{ task_name: 'liar', message: 'report a lot' }] }) },
      { name: `${task}:join`, when: forTask(task, 1), reply: { text: 'done' } },
    );
    const workflowId = h.id('liar');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES, limits: { maxTokens: 10_000 } }, { workflowId });
    const result = await h.deputy.result(workflowId);
    const state = RunState.parse(await h.deputy.getState(workflowId));
    // The child's reservation is delegation.childDefaults.maxTokens (2000) and $0.003; it was billed 90,000 input
    // tokens ($0.09) and is charged all of it.
    const [entry] = state.delegations;
    expect(entry).toMatchObject({ status: 'completed', reserved: { tokens: 2000, costMicroUsd: 3000 } });
    const child = await h.deputy.result(entry!.childWorkflowId);
    expect(entry!.actual).toEqual({ tokens: child.usage.totalTokens, costMicroUsd: child.usage.costMicroUsd });
    expect(child.usage.inputTokens).toBe(90_000);
    expect(entry!.overrun).toEqual({
      tokens: child.usage.totalTokens - 2000,
      costMicroUsd: child.usage.costMicroUsd - 3000,
    });
    // The parent's usage includes it: past its own max, so no further call fits and it ends at its limit.
    expect(result.usage.totalTokens).toBeGreaterThan(90_000);
    expect(result).toMatchObject({ status: 'limit_reached', limit: 'maxTokens' });
    expect(h.model.requests.some((r) => r.rule === `${task}:join`)).toBe(false);
    // Shown: in the tree, and in the watch's join event.
    const tree = renderTree(await loadTree(h.client, workflowId));
    expect(tree).toContain(
      `overran its reservation by ${entry!.overrun!.tokens} tok $${(entry!.overrun!.costMicroUsd / 1e6).toFixed(6)}`,
    );
    const joined: WatchEvent[] = [];
    for await (const event of h.deputy.watch(workflowId)) if (event.type === 'delegation/joined') joined.push(event);
    expect(joined).toMatchObject([
      {
        type: 'delegation/joined',
        child: entry!.childWorkflowId,
        overrun: { tokens: entry!.overrun!.tokens, costUsd: entry!.overrun!.costMicroUsd / 1e6 },
      },
    ]);
  });
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
      const { result } = await watchInvariant(workflowId);
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
    const described = await h.client.workflow.getHandle(workflowId).describe();
    expect(described.typedSearchAttributes.get(DEPUTY_STATUS)).toBe('waiting_for_children');
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
