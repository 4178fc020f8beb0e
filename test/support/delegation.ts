/** Helpers for delegation tests: a config with delegation on, delegate calls, and visibility lookups. */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { z } from 'zod';
import { builtinTools } from '../../activities/builtin-tools.js';
import type { DeputyConfig } from '../../src/config/schema.js';
import { defineTool, type ToolDefinition } from '../../src/contract/tools.js';
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
