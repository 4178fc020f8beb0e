/**
 * The hard budgets of a delegation attacked from the paths nobody walked: a summary that pushed used + reserved past
 * max, a child that reports more than it was given, two invocations racing the caps and the status.
 */
import { describe, expect, it } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { loadTree } from '../src/client/inspect.js';
import { renderTree } from '../src/client/tree.js';
import type { WatchEvent } from '../src/client/watch-events.js';
import { forTask, userSays } from '../src/testing/script.js';
import { worstUsage } from '../src/testing/script-usage.js';
import {
  delegateReply,
  delegationConfig,
  DELEGATION_TOOLS,
  PARENT_SCOPES,
  PARENT_USAGE,
  isSummaryCall,
  watchInvariant,
} from './support/delegation.js';
import { useHarness } from './support/harness.js';

const h = useHarness({ config: delegationConfig({ maxChildrenPerRun: 2 }), tools: DELEGATION_TOOLS });

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
    const { result, worst, observations } = await watchInvariant(h, workflowId);
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
    const { result, observations } = await watchInvariant(h, workflowId);
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
