/** What a run's recorded history says, read the way tests ask it. */
import type { Client } from '@temporalio/client';

/** The activities a run scheduled, in order, with the task queue of each. */
export async function scheduledActivities(
  client: Client,
  workflowId: string,
): Promise<{ type: string; taskQueue: string }[]> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const scheduled = e.activityTaskScheduledEventAttributes;
    return scheduled ? [{ type: scheduled.activityType!.name!, taskQueue: scheduled.taskQueue!.name! }] : [];
  });
}

/**
 * How long each workflow task of a run took on its worker, in ms, as the server recorded it (from the task's start to
 * its completion or failure); with the failures' messages.
 */
export async function workflowTaskTimes(
  client: Client,
  workflowId: string,
): Promise<{ slowestMs: number; failures: string[] }> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const ms = (e: (typeof history.events & object)[number]) =>
    Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);
  let started: number | undefined;
  let slowestMs = 0;
  const failures: string[] = [];
  for (const event of history.events ?? []) {
    if (event.workflowTaskStartedEventAttributes) started = ms(event);
    if (event.workflowTaskFailedEventAttributes) {
      failures.push(event.workflowTaskFailedEventAttributes.failure?.message ?? 'workflow task failed');
    }
    if (
      (event.workflowTaskCompletedEventAttributes || event.workflowTaskFailedEventAttributes) &&
      started !== undefined
    ) {
      slowestMs = Math.max(slowestMs, ms(event) - started);
      started = undefined;
    }
  }
  return { slowestMs, failures };
}

/**
 * The longest a workflow task of an attacked run may take as the server records it, from the worker taking it to its
 * answer: the check plus the worker's own work (a fresh workflow context included) and its queueing on a machine
 * running two test files at once. Plain tasks are recorded at 5–200 ms here; a catastrophic pattern held one for
 * seconds and then killed the worker.
 */
export const WORKFLOW_TASK_BOUND_MS = 500;
