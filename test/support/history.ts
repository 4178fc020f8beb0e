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
