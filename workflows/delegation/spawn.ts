/**
 * When a child's start fails or it cannot be followed: a taken id refuses one brief, this invocation's own child from
 * an earlier attempt is attached to, and how a child that failed or was cancelled ended is read from its failure.
 * Deterministic code only.
 */
import { LOOKUP_OPTIONS } from '../activity-options.js';
import type { DeputyActivities } from '../../activities/index.js';
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowFailure,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  ActivityCancellationType,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';

import type { LedgerEntry } from '../../src/contract/run.js';
import { failureMessage } from '../../src/rules/failure-message.js';
import {
  cancelledEnd,
  endOfResult,
  failedEnd,
  reportedArtifacts,
  reportedUsage,
  type ChildEnd,
} from '../../src/rules/child-end.js';
import { FAILURE } from '../../src/contract/failures.js';

const { describeRun } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);
// Waits on a run this parent did not start in this execution (an attach): as long as the run lives.
const { awaitRun } = proxyActivities<DeputyActivities>({
  startToCloseTimeout: '7 days',
  heartbeatTimeout: '30 seconds',
  cancellationType: ActivityCancellationType.TRY_CANCEL,
  retry: { maximumAttempts: 5 },
});

/**
 * Why a child did not start, or that it need not: an id already held by this invocation's own child from an earlier
 * attempt (a reset parent) is attached to; an id held by anything else refuses this brief only; no error of the start
 * ever fails the parent. A cancellation goes through.
 */
export async function explainStartFailure(entry: LedgerEntry, err: unknown): Promise<NotStarted> {
  if (isCancellation(err)) throw err;
  if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
    return { kind: 'refused', reason: `the child could not be started: ${failureMessage(err)}` };
  }
  return explainTakenId(entry);
}

type NotStarted = { kind: 'attached' } | { kind: 'refused'; reason: string };

/** The child's id is taken: this invocation's own child from an earlier attempt (attach), or anything else. */
async function explainTakenId(entry: LedgerEntry): Promise<NotStarted> {
  const existing = await describeRun({ workflowId: entry.childWorkflowId }).catch((err: unknown) => {
    if (isCancellation(err)) throw err;
    return null;
  });
  // Temporal itself records the parent; the memo names the invocation and the task.
  // Running or closed: the same invocation after a reset or a retry joins the child it started, never a second one.
  if (
    existing?.parentId === workflowInfo().workflowId &&
    existing?.invocationId === entry.invocationId &&
    existing?.taskName === entry.taskName
  ) {
    return { kind: 'attached' };
  }
  const holder = existing
    ? `a ${existing.running ? 'running' : 'closed'} ${existing.workflowType} run${existing.parentId ? ` started by ${existing.parentId}` : ''}`
    : 'another run';
  return {
    kind: 'refused',
    reason: `workflow id "${entry.childWorkflowId}" is already taken by ${holder}, not by this invocation's child; this brief was not started (its siblings go on)`,
  };
}

/** Waits for an attached child; cancelling the parent cancels it, as it would a child it started. */
export async function joinAttached(
  workflowId: string,
  returnShape: Record<string, unknown> | undefined,
): Promise<ChildEnd> {
  try {
    const ended = await awaitRun({ workflowId });
    if (ended.kind === 'result') return endOfResult(ended.result, returnShape);
    return ended.kind === 'cancelled' ? cancelledEnd() : failedEnd(ended.error, ended.usage);
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => getExternalWorkflowHandle(workflowId).cancel()).catch(
        () => undefined,
      );
    }
    throw err;
  }
}

/**
 * How a started child ended, read from the failure its result rejected with; a child's end never cancels its parent.
 * A cancellation of the parent itself, or an error that is not the child's, goes through.
 */
export function endOfFailure(err: unknown): ChildEnd {
  if (CancellationScope.current().consideredCancelled || !(err instanceof ChildWorkflowFailure)) throw err;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.type === FAILURE.ChildFailed) {
    const details = cause.details?.[0];
    return { ...failedEnd(cause.message, reportedUsage(details)), ...reportedArtifacts(details) };
  }
  if (cause instanceof CancelledFailure || isCancellation(err)) return cancelledEnd();
  return failedEnd(cause?.message ?? err.message, null);
}
