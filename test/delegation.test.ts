import { describe, expect, it } from 'vitest';
import { withinBudget } from '../src/rules/budget.js';
import { RunState } from '../src/contract/run.js';
import { forTask, offeredTools, userSays } from '../src/testing/script.js';
import {
  CHILD_USAGE,
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  listChildren,
  PARENT_SCOPES,
  PARENT_USAGE,
  delegatingParent,
  lastToolMessage,
} from './support/delegation.js';
import { useHarness } from './support/harness.js';

const h = useHarness({ config: delegationConfig(), tools: DELEGATION_TOOLS });

describe('R2.1 the delegate tool exists only when enabled, in scope and below max depth', () => {
  it('R2.1 a run with run.delegate is offered delegate; without the scope it is not', async () => {
    h.model.add(
      { name: 'with', when: forTask('r2.1 with scope'), reply: { text: 'ok' } },
      { name: 'without', when: forTask('r2.1 without scope'), reply: { text: 'ok' } },
    );
    await h.deputy.result((await h.deputy.startRun({ task: 'r2.1 with scope', scopes: PARENT_SCOPES })).workflowId);
    await h.deputy.result((await h.deputy.startRun({ task: 'r2.1 without scope', scopes: ['tools.calc'] })).workflowId);
    const [withScope] = h.model.requests.filter((r) => r.rule === 'with');
    const [withoutScope] = h.model.requests.filter((r) => r.rule === 'without');
    expect(offeredTools(withScope!)).toEqual([
      'calculate',
      'search_notes',
      'skill_manage',
      'delegate',
      'interject',
      'followup',
      'wait',
    ]);
    expect(offeredTools(withoutScope!)).toEqual(['calculate']);
  });

  it('R2.1 R2.7 a child at max depth is offered neither delegate nor a neverInherit tool', async () => {
    h.model.add({ name: 'depth child', when: userSays('child at max depth'), reply: { text: 'child ok' } });
    const parentId = await delegatingParent(h, 'r2.1 depth', {
      briefs: [{ task_name: 'deep', message: 'child at max depth' }],
    });
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const child = h.model.requests.find((r) => r.rule === 'depth child')!;
    // R3.9: asking the parent is not a capability: every child has it, at max depth too.
    expect(offeredTools(child)).toEqual(['calculate', 'search_notes', 'ask_parent']);
    const state = RunState.parse(await h.deputy.getState(`${parentId}/deep-1`));
    expect(state.session.map((e) => e.type).slice(0, 3)).toEqual([
      'session/header',
      'subagent/descriptor',
      'message/user',
    ]);
  });
});

describe('R2.2 R2.3 invalid invocations are tool errors and spawn nothing', () => {
  it.each([
    ['a bad task_name', { briefs: [{ task_name: 'Bad Name', message: 'x' }] }, /briefs\.0\.task_name: use a slug/],
    ['no briefs', { briefs: [] }, /give at least one brief/],
    [
      'four briefs',
      { briefs: ['a', 'b', 'c', 'd'].map((n) => ({ task_name: n, message: 'x' })) },
      /at most 3 briefs per invocation/,
    ],
    [
      'a duplicate task_name',
      {
        briefs: [
          { task_name: 'same', message: 'x' },
          { task_name: 'same', message: 'y' },
        ],
      },
      /task_name "same" is already used in this run/,
    ],
    ['an unknown role', { briefs: [{ task_name: 'r', message: 'x', role: 'wizard' }] }, /unknown role "wizard"/],
    ['malformed JSON', '{"briefs": [', /arguments are not valid JSON/],
  ])('R2.2 %s', async (_name, args, expected) => {
    const task = `r2.2 ${_name}`;
    const parentId = await delegatingParent(h, task, args);
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const join = h.model.requests.find((r) => r.rule === `${task}:join`)!;
    expect(lastToolMessage(join)).toMatch(expected);
    expect(lastToolMessage(join)).toMatch(/nothing was spawned/);
    const state = RunState.parse(await h.deputy.getState(parentId));
    expect(state.delegations).toEqual([]);
    expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    expect(await listChildren(h.client, parentId)).toEqual([]);
  });

  it("R2.3 a 9th child over the run's life is refused; exactly 8 exist", async () => {
    const task = 'r2.3 nine children';
    h.model.add({ name: 'nine child', when: userSays('count me'), times: 8, reply: { text: 'counted' } });
    const brief = (name: string) => ({ task_name: name, message: `count me ${name}` });
    h.model.add(
      { when: forTask(task, 0), reply: delegateReply({ briefs: ['a1', 'a2', 'a3'].map(brief) }) },
      { when: forTask(task, 1), reply: delegateReply({ briefs: ['b1', 'b2', 'b3'].map(brief) }) },
      { when: forTask(task, 2), reply: delegateReply({ briefs: ['c1', 'c2'].map(brief) }) },
      { when: forTask(task, 3), reply: delegateReply({ briefs: ['d1'].map(brief) }) },
      { name: 'nine join', when: forTask(task, 4), reply: { text: 'done' } },
    );
    const parentId = h.id('nine');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const join = h.model.requests.find((r) => r.rule === 'nine join')!;
    expect(lastToolMessage(join)).toMatch(/has started 8 of its 8 children; 1 more do not fit; nothing was spawned/);
    await expect.poll(async () => (await listChildren(h.client, parentId)).length, { timeout: 15_000 }).toBe(8);
    expect((await listChildren(h.client, parentId)).map((c) => c.workflowId.split('/')[1])).toEqual([
      'a1-1',
      'a2-1',
      'a3-1',
      'b1-2',
      'b2-2',
      'b3-2',
      'c1-3',
      'c2-3',
    ]);
  });
});

describe('R2.5 R2.6 derived limits and reserved cost', () => {
  it('R2.5 R2.6 exact numbers: child limits, reservation while children run, usage after the join', async () => {
    const task = 'r2.5 numbers';
    h.model.add(
      {
        name: 'num a',
        when: userSays('numbers child a'),
        delayMs: 1500,
        reply: { text: 'a done', usage: CHILD_USAGE },
      },
      {
        name: 'num b',
        when: userSays('numbers child b'),
        delayMs: 1500,
        reply: { text: 'b done', usage: CHILD_USAGE },
      },
    );
    const parentId = await delegatingParent(
      h,
      task,
      {
        briefs: [
          { task_name: 'a', message: 'numbers child a', limits: { maxTurns: 3, maxTokens: 1000, maxCostUsd: 0.002 } },
          { task_name: 'b', message: 'numbers child b' },
        ],
      },
      { maxTurns: 6, maxTokens: 30_000, maxCostUsd: 0.03, maxToolCalls: 10 },
      PARENT_USAGE,
    );
    await expect
      .poll(async () => (await h.deputy.getState(parentId)).delegations.map((d) => d.status), { timeout: 10_000 })
      .toEqual(['running', 'running']);
    const during = RunState.parse(await h.deputy.getState(parentId));
    expect(during.reserved).toEqual({ tokens: 3000, costMicroUsd: 5000 });
    expect(during.delegations.map((d) => [d.taskName, d.status, d.reserved])).toEqual([
      ['a', 'running', { tokens: 1000, costMicroUsd: 2000 }],
      ['b', 'running', { tokens: 2000, costMicroUsd: 3000 }],
    ]);
    const resolved = async (id: string) => {
      await expect.poll(async () => (await h.deputy.getState(id)).limits, { timeout: 10_000 }).not.toBeNull();
      return RunState.parse(await h.deputy.getState(id));
    };
    const childA = await resolved(`${parentId}/a-1`);
    const childB = await resolved(`${parentId}/b-1`);
    expect(childA.limits).toMatchObject({ maxTurns: 3, maxTokens: 1000, maxCostMicroUsd: 2000, maxToolCalls: 5 });
    expect(childB.limits).toMatchObject({ maxTurns: 5, maxTokens: 2000, maxCostMicroUsd: 3000, maxToolCalls: 5 });
    // A child's deadline never passes its parent's.
    expect(childA.limits!.deadlineMs).toBe(during.limits!.deadlineMs);

    const result = await h.deputy.result(parentId);
    // The parent's two calls (5,100 tokens, 5,200 micro-USD each at $1 in / $2 out) and its children's (520, 540).
    expect(result.usage).toMatchObject({ totalTokens: 11_240, costMicroUsd: 11_480, modelCalls: 2, toolCalls: 1 });
    const after = RunState.parse(await h.deputy.getState(parentId));
    expect(after.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    expect(after.delegations.map((d) => [d.status, d.actual])).toEqual([
      ['completed', { tokens: 520, costMicroUsd: 540 }],
      ['completed', { tokens: 520, costMicroUsd: 540 }],
    ]);
  });

  it('R2.6 an invocation whose reservation does not fit reserves nothing and starts nothing; the error gives the numbers', async () => {
    const task = 'r2.6 does not fit';
    const parentId = await delegatingParent(
      h,
      task,
      {
        briefs: [
          { task_name: 'cheap', message: 'never runs', limits: { maxCostUsd: 0.001 } },
          { task_name: 'pricey', message: 'never runs', limits: { maxCostUsd: 0.5 } },
        ],
      },
      { maxCostUsd: 0.02 },
      PARENT_USAGE,
    );
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const join = h.model.requests.find((r) => r.rule === `${task}:join`)!;
    // "pricey" asks for more than is left and is cut to it; with "cheap" beside it, the two do not fit.
    expect(lastToolMessage(join)).toBe(
      'the reservation does not fit: cost: the children need $0.015800 but only $0.014800 is left (max $0.020000, used $0.005200, reserved $0.000000); ask for smaller limits or fewer children; nothing was spawned',
    );
    const state = RunState.parse(await h.deputy.getState(parentId));
    expect(state.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    expect(state.delegations).toEqual([]);
    expect(await listChildren(h.client, parentId)).toEqual([]);
  });

  it('R2.6 with three concurrent children, used + reserved never passes max at any observed step', async () => {
    const task = 'r2.6 invariant';
    h.model.add({
      name: 'inv child',
      when: userSays('invariant child'),
      times: 3,
      delayMs: 600,
      reply: { text: 'ok', usage: CHILD_USAGE },
    });
    const parentId = await delegatingParent(
      h,
      task,
      { briefs: ['x', 'y', 'z'].map((n) => ({ task_name: n, message: `invariant child ${n}` })) },
      { maxTokens: 20_000, maxCostUsd: 0.02 },
      PARENT_USAGE,
    );
    const done = h.deputy.result(parentId);
    let finished = false;
    void done.finally(() => (finished = true));
    const observed: RunState[] = [];
    while (!finished) {
      observed.push(RunState.parse(await h.deputy.getState(parentId)));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    observed.push(RunState.parse(await h.deputy.getState(parentId)));
    expect(observed.some((s) => s.reserved.costMicroUsd === 9000)).toBe(true);
    for (const state of observed.filter((s) => s.limits !== null)) {
      const budget = {
        maxTokens: state.limits!.maxTokens,
        maxCostMicroUsd: state.limits!.maxCostMicroUsd,
        used: { tokens: state.usage.totalTokens, costMicroUsd: state.usage.costMicroUsd },
        reserved: state.reserved,
      };
      expect(withinBudget(budget), JSON.stringify(budget)).toBe(true);
    }
    expect((await done).usage).toMatchObject({ totalTokens: 2 * 5100 + 3 * 520, costMicroUsd: 2 * 5200 + 3 * 540 });
  });
});

describe('R2.7 tools and scopes only narrow', () => {
  it('R2.7 asking for a tool the parent lacks is a tool error; nothing spawned', async () => {
    const task = 'r2.7 lacking';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [{ task_name: 'greedy', message: 'x', allowed_tools: ['calculate', 'drop_database'] }],
        }),
      },
      { name: 'lacking join', when: forTask(task, 1), reply: { text: 'ok' } },
    );
    const parentId = h.id('lacking');
    await h.deputy.startRun({ task, scopes: ['tools.calc', 'run.delegate'] }, { workflowId: parentId });
    await h.deputy.result(parentId);
    const join = h.model.requests.find((r) => r.rule === 'lacking join')!;
    expect(lastToolMessage(join)).toBe(
      'brief "greedy": you cannot grant tools you do not have: drop_database; nothing was spawned',
    );
    expect(await listChildren(h.client, parentId)).toEqual([]);
  });

  it('R2.7 a brief without allowed_tools gets every tool of its parent that its preset has, neverInherit excepted (Deputy does not ask each brief for an explicit subset)', async () => {
    h.model.add({ name: 'default tools', when: userSays('default tools child'), reply: { text: 'ok' } });
    const parentId = await delegatingParent(h, 'r2.7 default tools', {
      briefs: [{ task_name: 'plain', message: 'default tools child' }],
    });
    await h.deputy.result(parentId);
    // The parent holds calculate, search_notes and skill_manage (neverInherit), and the steering tools.
    expect(offeredTools(h.model.requests.find((r) => r.rule === 'default tools')!)).toEqual([
      'calculate',
      'search_notes',
      'ask_parent',
    ]);
  });

  it('R2.7 a child gets allowed_tools ∩ parent ∩ preset tools, and only the scopes they need', async () => {
    h.model.add(
      { name: 'narrow plain', when: userSays('narrow plain child'), reply: { text: 'ok' } },
      { name: 'narrow role', when: userSays('narrow role child'), reply: { text: 'ok' } },
    );
    const parentId = await delegatingParent(h, 'r2.7 narrow', {
      briefs: [
        { task_name: 'plain', message: 'narrow plain child', allowed_tools: ['calculate', 'skill_manage'] },
        { task_name: 'role', message: 'narrow role child', role: 'researcher' },
      ],
    });
    await h.deputy.result(parentId);
    expect(offeredTools(h.model.requests.find((r) => r.rule === 'narrow plain')!)).toEqual(['calculate', 'ask_parent']);
    expect(offeredTools(h.model.requests.find((r) => r.rule === 'narrow role')!)).toEqual([
      'search_notes',
      'ask_parent',
    ]);
    const handle = (id: string) => h.client.workflow.getHandle(id);
    const plainInput = (await handle(`${parentId}/plain-1`).fetchHistory()).events![0]!
      .workflowExecutionStartedEventAttributes!.input!.payloads![0]!;
    const input = JSON.parse(Buffer.from(plainInput.data!).toString()) as {
      scopes: string[];
      origin: { allowedTools: string[] };
    };
    expect(input.scopes).toEqual(['tools.calc']);
    expect(input.origin.allowedTools).toEqual(['calculate']);
  });
});
