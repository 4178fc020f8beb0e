/** Activity options shared by the workflow modules. Deterministic code only. */
import { ActivityCancellationType, type ActivityOptions } from '@temporalio/workflow';
import type { Priority } from '@temporalio/common';
import { MODEL_CALL_RETRY, type ChainModel } from '../src/rules/model-retry.js';

const { initialIntervalMs, backoffCoefficient, maximumIntervalMs, maximumAttempts } = MODEL_CALL_RETRY;

/** Tool calls: heartbeating, abortable, retried by Temporal with the backoff the workflow gives model calls. */
export const TOOL_CALL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  // A cancelled run ends only after the call in flight has been aborted.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: {
    initialInterval: initialIntervalMs,
    backoffCoefficient,
    maximumInterval: maximumIntervalMs,
    maximumAttempts,
  },
};

/**
 * Model calls (turns, summaries, compaction): heartbeating and abortable like tools, but each attempt is an activity
 * of its own, retried by the workflow (`ModelRetries`). An attempt can be billed and still fail (a stream cut, a
 * usage report with no answer); the workflow debits it when it fails. Were Temporal to retry it, a run cancelled
 * while the retry waits would learn nothing of it: the server records such a cancel without the attempts before.
 */
export const MODEL_CALL_OPTIONS: ActivityOptions = { ...TOOL_CALL_OPTIONS, retry: { maximumAttempts: 1 } };

/**
 * Look-ups in the worker's configuration and in Temporal (resolveRun, resolvePresets, loadSession). A run
 * resolves its composition as a local activity (no server round trip; the replay suite runs it with
 * maxCachedWorkflows 0, where Core once stalled on this, temporalio/sdk-rust#1482); the others are regular activities.
 */
export const LOOKUP_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
};

/**
 * Like `Promise.all`, but waits for every promise before rethrowing the first failure, so a cancelled run ends only
 * after all of its work has stopped (children cancelled, HTTP requests aborted), never while some is still live.
 */
export async function joinAll<T>(promises: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((result) => (result as PromiseFulfilledResult<T>).value);
}

/** An activity's summary in Temporal UI, with the attempt when it is a retry. */
export function attempted(summary: string, attempt: number): string {
  return attempt > 1 ? `${summary} (attempt ${attempt})` : summary;
}

/** What of a run its calls' options are made from. */
interface CallingRun {
  readonly priority: Priority;
  readonly deadlineOnActivities: boolean;
  readonly account: { readonly limits: { readonly deadlineMs: number | null } };
}

/**
 * What each of a run's calls carries: its place in the queues the fleet shares, and an end at the run's deadline when
 * the deadline bounds activities (not a timer).
 */
export function callOptions(run: CallingRun): ActivityOptions {
  const { deadlineMs } = run.account.limits;
  if (!run.deadlineOnActivities || deadlineMs === null) return { priority: run.priority };
  return { priority: run.priority, scheduleToCloseTimeout: Math.max(1, deadlineMs - Date.now()) };
}

/**
 * What each of a run's model calls carries: what any call does, on the task queue of the model it goes to (`on`): its
 * provider's, or the fleet's, when the config names one.
 */
export function modelCallOptions(run: CallingRun, on: ChainModel): ActivityOptions {
  const { taskQueue } = on;
  return { ...callOptions(run), ...(taskQueue && { taskQueue }) };
}
