/**
 * The `delegate` gate area (R5.5): twenty-one gates, each one property of the delegation rules checked against a
 * real Temporal server; G1–G12 (what a run may delegate, and with what) here, G13–G21 in
 * delegate-gates-outcomes.test.ts. `npm run gates` runs them and prints the table (scripts/gates.ts); `.ci/run`
 * runs it.
 * Every run here belongs to an activated tenant (R5.3): the gates hold under activation.
 */
import { describe, expect, it } from 'vitest';
import { forTask, offeredTools, toolMessages, userSays } from '../../src/testing/script.js';
import {
  CHILD_USAGE,
  delegateReply,
  DELEGATION_TOOLS,
  listChildren,
  PARENT_SCOPES,
  PARENT_USAGE,
} from '../support/delegation.js';
import { createHarness } from '../support/harness.js';
import { useGates } from '../support/gates.js';

const { h, config, TENANT, state, delegating, brief } = useGates();

describe('R5.5 delegate gates', () => {
  it('G1 flag: with delegation off, no run is offered delegate; with it on, an activated tenant is', async () => {
    const off = await createHarness();
    await off.startWorker({
      config: { ...config, delegation: { ...config.delegation, enabled: false } },
      tools: DELEGATION_TOOLS,
    });
    try {
      off.model.add({ name: 'off', when: forTask('g1 off'), reply: { text: 'ok' } });
      await off.deputy.result(
        (await off.deputy.startRun({ task: 'g1 off', scopes: PARENT_SCOPES, tenant: TENANT })).workflowId,
      );
      expect(offeredTools(off.model.requests.find((r) => r.rule === 'off')!)).not.toContain('delegate');
    } finally {
      await off.close();
    }
    h.model.add({ name: 'g1 on', when: forTask('g1 on'), reply: { text: 'ok' } });
    await h.deputy.result(
      (await h.deputy.startRun({ task: 'g1 on', scopes: PARENT_SCOPES, tenant: TENANT })).workflowId,
    );
    expect(offeredTools(h.model.requests.find((r) => r.rule === 'g1 on')!)).toContain('delegate');
  });

  it('G2 scope: a run without run.delegate is not offered delegate', async () => {
    h.model.add({ name: 'g2', when: forTask('g2 no scope'), reply: { text: 'ok' } });
    await h.deputy.result(
      (await h.deputy.startRun({ task: 'g2 no scope', scopes: ['tools.calc'], tenant: TENANT })).workflowId,
    );
    expect(offeredTools(h.model.requests.find((r) => r.rule === 'g2')!)).toEqual(['calculate']);
  });

  it('G3 depth: a child at maxDepth is offered no delegate', async () => {
    const { final } = await delegating('g3 depth', { briefs: [brief('g3 depth', 'deep')] });
    expect(final.delegations[0]!.status).toBe('completed');
    expect(offeredTools(h.model.requests.find((r) => r.rule === 'g3 depth:child')!)).not.toContain('delegate');
  });

  it('G4 per-call cap: four briefs in one call are refused, nothing spawned', async () => {
    const task = 'g4 four briefs';
    const { id, final, join } = await delegating(task, { briefs: ['a', 'b', 'c', 'd'].map((n) => brief(task, n)) });
    expect(toolMessages(join!)[0]).toMatch(/at most 3 briefs per invocation.*nothing was spawned/);
    expect(final.delegations).toEqual([]);
    expect(await listChildren(h.client, id)).toEqual([]);
  });

  it('G5 per-parent cap: the ninth child over a run’s life is refused; exactly eight exist', async () => {
    const task = 'g5 nine children';
    const calls = [['a', 'b', 'c'], ['d', 'e', 'f'], ['g', 'h'], ['i']];
    calls.forEach((names, turn) =>
      h.model.add({ when: forTask(task, turn), reply: delegateReply({ briefs: names.map((n) => brief(task, n)) }) }),
    );
    h.model.add(
      { name: 'g5 end', when: forTask(task, 4), reply: { text: 'done' } },
      { when: userSays(`${task} child`), times: 8, reply: { text: 'ok' } },
    );
    const id = h.id('gate');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES, tenant: TENANT }, { workflowId: id });
    await h.deputy.result(id);
    expect(toolMessages(h.model.requests.find((r) => r.rule === 'g5 end')!)[3]).toMatch(
      /has started 8 of its 8 children/,
    );
    expect((await state(id)).delegations).toHaveLength(8);
  });

  it('G6 derived limits: a child gets its brief’s limits, capped by what the parent has left', async () => {
    const task = 'g6 limits';
    const { id } = await delegating(
      task,
      { briefs: [brief(task, 'a', { limits: { maxTurns: 50, maxTokens: 1000 } })] },
      { limits: { maxTurns: 4, maxTokens: 10_000, maxCostUsd: 0.01 } },
    );
    const child = await state(`${id}/a-1`);
    expect(child.limits).toMatchObject({ maxTurns: 3, maxTokens: 1000, maxCostMicroUsd: 3000 });
    // A brief asking more tokens and cost than the parent has left gets what is left: its limits less its one call
    // as reported (5,100 tokens, 5,200 micro-USD at the test price), nothing reserved before it.
    const greedy = 'g6 greedy limits';
    const { id: greedyId } = await delegating(
      greedy,
      { briefs: [brief(greedy, 'b', { limits: { maxTokens: 50_000, maxCostUsd: 1 } })] },
      { limits: { maxTurns: 4, maxTokens: 20_000, maxCostUsd: 0.02 }, usage: PARENT_USAGE },
    );
    expect((await state(`${greedyId}/b-1`)).limits).toMatchObject({ maxTokens: 14_900, maxCostMicroUsd: 14_800 });
  });

  it('G7 bounded deadline: a child’s deadline never passes its parent’s', async () => {
    const task = 'g7 deadline';
    const parentDeadline = new Date(Date.now() + 60_000).toISOString();
    const { id } = await delegating(
      task,
      { briefs: [brief(task, 'a', { limits: { deadline: new Date(Date.now() + 3_600_000).toISOString() } })] },
      { limits: { deadline: parentDeadline } },
    );
    expect((await state(`${id}/a-1`)).limits!.deadlineMs).toBe(Date.parse(parentDeadline));
  });

  it('G8 all-or-nothing reservation: briefs whose reservations do not all fit reserve and start nothing', async () => {
    const task = 'g8 reservation';
    const { id, final, join } = await delegating(
      task,
      { briefs: [brief(task, 'a'), brief(task, 'b')] },
      { limits: { maxCostUsd: 0.005 } },
    );
    expect(toolMessages(join!)[0]).toMatch(/the reservation does not fit.*nothing was spawned/);
    expect(final.delegations).toEqual([]);
    expect(final.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    expect(await listChildren(h.client, id)).toEqual([]);
    // Briefs that fit are reserved whole before they run: each child's default limits (2,000 tokens, 3,000 micro-USD).
    const fits = 'g8 reservation that fits';
    const during: unknown[] = [];
    await delegating(
      fits,
      { briefs: [brief(fits, 'a'), brief(fits, 'b')] },
      { duringChild: async (parent) => void during.push((await state(parent)).reserved) },
    );
    expect(during[0]).toEqual({ tokens: 4000, costMicroUsd: 6000 });
  });

  it('G9 debit at join: the child’s actual spend moves from reserved to used when it is joined', async () => {
    const task = 'g9 debit';
    let whileRunning: unknown;
    const { result, final } = await delegating(
      task,
      { briefs: [brief(task, 'a')] },
      {
        usage: PARENT_USAGE,
        child: { text: `${task} child done`, usage: CHILD_USAGE },
        duringChild: async (parent) => void (whileRunning = (await state(parent)).reserved),
      },
    );
    // Reserved while the child ran (its default limits), released at the join.
    expect(whileRunning).toEqual({ tokens: 2000, costMicroUsd: 3000 });
    expect(final.reserved).toEqual({ tokens: 0, costMicroUsd: 0 });
    expect(final.delegations[0]!.actual).toEqual({ tokens: 520, costMicroUsd: 540 });
    // The parent's two calls as reported (5,100 tokens and 5,200 micro-USD each) and the child's actual spend.
    expect(result.usage).toMatchObject({ totalTokens: 2 * 5100 + 520, costMicroUsd: 2 * 5200 + 540 });
  });

  it('G10 synthesis reserve: the synthesis call offers no tools, delegate included', async () => {
    const task = 'g10 synthesis';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 1, b: 2 } }] },
      },
      { name: 'g10 synthesis', when: forTask(task, 1), reply: { text: 'final' } },
    );
    const id = h.id('gate');
    await h.deputy.startRun(
      { task, scopes: PARENT_SCOPES, tenant: TENANT, limits: { maxTurns: 2, synthesisReserve: {} } },
      { workflowId: id },
    );
    expect(await h.deputy.result(id)).toMatchObject({ status: 'completed', limit: 'maxTurns' });
    expect(offeredTools(h.model.requests.find((r) => r.rule === 'g10 synthesis')!)).toEqual([]);
  });

  it('G11 tool and scope subsets: a child gets allowed_tools ∩ parent ∩ preset, and only the scopes they need', async () => {
    const task = 'g11 subsets';
    const { id } = await delegating(task, { briefs: [brief(task, 'a', { allowed_tools: ['calculate'] })] });
    const child = await state(`${id}/a-1`);
    expect(offeredTools(h.model.requests.find((r) => r.rule === `${task}:child`)!)).toEqual([
      'calculate',
      'ask_parent',
    ]);
    const history = await h.client.workflow.getHandle(`${id}/a-1`).fetchHistory();
    const input = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!.data!;
    expect((JSON.parse(Buffer.from(input).toString('utf8')) as { scopes: string[] }).scopes).toEqual(['tools.calc']);
    expect(child.status).toBe('completed');
  });

  it('G12 never delegate or skill_manage for a child: neverInherit and depth hold even when a brief asks', async () => {
    const task = 'g12 never';
    // A brief that asks for them gets neither: skill_manage is never inherited, delegate not below max depth.
    const { id, final } = await delegating(task, {
      briefs: [brief(task, 'a', { allowed_tools: ['skill_manage', 'calculate'] })],
    });
    expect(final.delegations[0]!.status).toBe('completed');
    expect(offeredTools(h.model.requests.find((r) => r.rule === `${task}:child`)!)).toEqual([
      'calculate',
      'ask_parent',
    ]);
    expect((await state(`${id}/a-1`)).status).toBe('completed');
    const plain = await delegating('g12 plain', { briefs: [brief('g12 plain', 'a')] });
    const offered = offeredTools(h.model.requests.find((r) => r.rule === 'g12 plain:child')!);
    expect(offered).not.toContain('skill_manage');
    expect(offered).not.toContain('delegate');
    expect(plain.final.delegations[0]!.status).toBe('completed');
  });
});
