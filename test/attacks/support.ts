/** Helpers for the attack suite: what an attacker with a plain Temporal client sees and does. */
import { execFile } from 'node:child_process';
import type { Client } from '@temporalio/client';
import { expect, inject } from 'vitest';
import { findTemporalCli } from '../../src/testing/temporal-cli.js';
import { lastMessage, userSays, type RecordedRequest } from '../../src/testing/script.js';

/** Workflow tasks that failed in a run's history: an attack that wedges a run shows up here. */
export async function failedWorkflowTasks(client: Client, workflowId: string): Promise<string[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((event) =>
    event.workflowTaskFailedEventAttributes
      ? [event.workflowTaskFailedEventAttributes.failure?.message ?? 'workflow task failed']
      : [],
  );
}

/** The raw JSON of a run's history, for searching it for what must never be there. */
export async function historyText(client: Client, workflowId: string): Promise<string> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return JSON.stringify(history, (_key, value: unknown) =>
    value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value,
  );
}

/** Waits until the run's `state` query reports `status`. */
export async function untilStatus(client: Client, workflowId: string, status: string): Promise<void> {
  await expect
    .poll(
      async () => (await client.workflow.getHandle(workflowId).query<{ status: string } | undefined>('state'))?.status,
      { timeout: 20_000, interval: 100 },
    )
    .toBe(status);
}

/** A request whose dialogue ends with a user message that is exactly `text`. */
export const lastUserSays = (task: string, text: string) => (r: RecordedRequest) =>
  userSays(task)(r) && r.body.messages.at(-1)?.role === 'user' && lastMessage(r) === text;

/** A request whose last message is a tool result containing `text`. */
export const afterTool = (task: string, text: string) => (r: RecordedRequest) =>
  userSays(task)(r) && r.body.messages.at(-1)?.role === 'tool' && lastMessage(r).includes(text);

/** Runs the `temporal` CLI against the test server, as any client of the namespace can: its exit status and output. */
export function temporalCli(...args: string[]): Promise<{ status: number; output: string }> {
  return new Promise((resolve) => {
    execFile(findTemporalCli()!, [...args, '--address', inject('temporalAddress')], (err, stdout, stderr) =>
      resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }),
    );
  });
}

/**
 * Completes the model call a run is waiting on by hand, with `toolCalls` and `usage` (none by default), as `temporal activity complete`
 * lets any client of the namespace do.
 */
export async function completeModelCallByHand(
  client: Client,
  workflowId: string,
  toolCalls: { id: string; name: string; arguments: string; seal: string }[],
  usage: { inputTokens: number; outputTokens: number } = { inputTokens: 0, outputTokens: 0 },
): Promise<void> {
  let pending: string | undefined;
  await expect
    .poll(async () => {
      const described = await client.workflow.getHandle(workflowId).describe();
      pending =
        described.raw.pendingActivities?.find((a) => a.activityType?.name === 'callModel')?.activityId ?? undefined;
      return pending;
    })
    .toBeDefined();
  const answer = { content: null, toolCalls, ...usage, finishReason: 'tool_calls' };
  const completed = await temporalCli(
    'activity',
    'complete',
    '--workflow-id',
    workflowId,
    '--activity-id',
    pending!,
    '--result',
    JSON.stringify(answer),
  );
  expect(completed.status, completed.output).toBe(0);
}
