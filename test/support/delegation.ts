/** Helpers for delegation tests: a config with delegation on, delegate calls, and visibility lookups. */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { z } from 'zod';
import { builtinTools } from '../../activities/builtin-tools.js';
import type { DeputyConfig } from '../../src/config/schema.js';
import { defineTool, type ToolDefinition } from '../../src/contract/tools.js';
import { expect } from 'vitest';
import { RunState } from '../../src/contract/run.js';
import { forTask, toolMessages, type RecordedRequest } from '../../src/testing/script.js';
import { testConfig, type Harness } from './harness.js';

/** A tool in `neverInherit` that parents may hold but children never get. */
export const skillManageTool = defineTool({
  name: 'skill_manage',
  description: 'Edit the skills of presets.',
  parameters: z.strictObject({ skill: z.string() }),
  scopes: ['skills.write'],
  async execute() {
    return 'ok';
  },
});

/** The worker's tools in delegation tests: the built-ins plus `skill_manage`. */
export const DELEGATION_TOOLS: ToolDefinition[] = [...builtinTools(), skillManageTool];

/** Scopes a delegating parent holds in these tests. */
export const PARENT_SCOPES = ['tools.calc', 'tools.notes', 'skills.write', 'run.delegate'];

/** Delegation on, small child defaults, and a `researcher` preset that has only `search_notes`. */
export function delegationConfig(delegation: Record<string, unknown> = {}): DeputyConfig {
  return testConfig({
    grantableScopes: PARENT_SCOPES,
    presets: [
      { id: 'assistant', persona: 'You are the parent.', tools: ['calculate', 'search_notes', 'skill_manage'] },
      { id: 'researcher', persona: 'You research.', tools: ['search_notes'] },
    ],
    delegation: {
      enabled: true,
      activation: 'unconditional',
      childDefaults: { maxTurns: 5, maxTokens: 2000, maxCostUsd: 0.003, maxToolCalls: 5 },
      ...delegation,
    },
  });
}

/**
 * Usage for tests that assert exact figures: more than Deputy counts for such calls (a delegating parent's system
 * prompt and seven tools' schemas come to about 3,800 tokens, a child's call to a few hundred), so each call is debited
 * exactly as reported, not at a count that shifts by a token or two with the run's random id.
 */
export const PARENT_USAGE = { prompt_tokens: 5000, completion_tokens: 100 };
export const CHILD_USAGE = { prompt_tokens: 500, completion_tokens: 20 };

/** A scripted reply that calls `delegate` with `args` (reporting `usage`, if given). */
export function delegateReply(args: unknown, usage?: { prompt_tokens: number; completion_tokens: number }) {
  return { toolCalls: [{ name: 'delegate', arguments: args }], ...(usage && { usage }) };
}

/**
 * R2.4: takes `workflowId` with an `agentRun` on a task queue no worker polls, so a child that would get that id finds
 * it held by a workflow that is not its parent's child. Terminate it when done.
 */
export async function squatId(h: Pick<Harness, 'client' | 'taskQueue'>, workflowId: string) {
  return h.client.workflow.start('agentRun', {
    taskQueue: `${h.taskQueue}-nobody`,
    workflowId,
    args: [{ task: 'I got here first' }],
  });
}

/** The children of `parentId` as Temporal visibility lists them. */
export async function listChildren(client: Client, parentId: string) {
  const children = [];
  for await (const info of client.workflow.list({ query: `DeputyParentId = '${parentId}'` })) children.push(info);
  return children.sort((a, b) => a.workflowId.localeCompare(b.workflowId));
}

/**
 * Resets a parent to the workflow task before its first child was started, so its new attempt spawns the
 * same invocation again.
 */
export async function resetToBeforeSpawn(
  client: Client,
  first: WorkflowHandleWithFirstExecutionRunId,
  reason: string,
): Promise<void> {
  const history = await first.fetchHistory();
  const spawnAt = history.events!.findIndex((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
  const taskCompleted = history.events!.slice(0, spawnAt).findLast((e) => e.workflowTaskCompletedEventAttributes)!;
  await client.workflowService.resetWorkflowExecution({
    namespace: 'default',
    workflowExecution: { workflowId: first.workflowId, runId: first.firstExecutionRunId },
    workflowTaskFinishEventId: taskCompleted.eventId,
    requestId: randomUUID(),
    reason,
  });
}

/** A request that prepares a child's summary of its parent's context. */
export const isSummaryCall = (r: RecordedRequest) =>
  (r.body.messages[0]?.content ?? '').startsWith('You write the background');

/** Polls the parent's state until it ends, checking used + reserved ≤ max at every observation. */
export async function watchInvariant(h: Harness, workflowId: string) {
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

/**
 * Starts a parent that delegates `args` on its first turn and answers "parent done" after the join; with `usage`, both
 * calls report it.
 */
export async function delegatingParent(
  h: Harness,
  task: string,
  args: unknown,
  limits = {},
  usage?: typeof PARENT_USAGE,
): Promise<string> {
  h.model.add(
    { name: `${task}:delegate`, when: forTask(task, 0), reply: delegateReply(args, usage) },
    { name: `${task}:join`, when: forTask(task, 1), reply: { text: 'parent done', ...(usage && { usage }) } },
  );
  const workflowId = h.id('parent');
  await h.deputy.startRun({ task, scopes: PARENT_SCOPES, limits }, { workflowId });
  return workflowId;
}

/** The last tool result a request's dialogue holds, or `''`. */
export const lastToolMessage = (request: RecordedRequest): string => toolMessages(request).at(-1) ?? '';
