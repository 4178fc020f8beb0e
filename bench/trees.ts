/** What the bench scripts share: the median they report, and the walk from a root to every workflow it started. */
import type { Client } from '@temporalio/client';

export type History = Awaited<ReturnType<ReturnType<Client['workflow']['getHandle']>['fetchHistory']>>;

/** The middle value; with an even count, the mean of the two middle ones. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The histories of a root and of every workflow it started, descendants included, root first. */
export async function treeHistories(client: Client, root: string): Promise<{ workflowId: string; history: History }[]> {
  const ids = [root];
  const histories: { workflowId: string; history: History }[] = [];
  for (let i = 0; i < ids.length; i++) {
    const history = await client.workflow.getHandle(ids[i]!).fetchHistory();
    for (const event of history.events ?? []) {
      const id = event.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
      if (id) ids.push(id);
    }
    histories.push({ workflowId: ids[i]!, history });
  }
  return histories;
}
