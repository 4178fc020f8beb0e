/**
 * The run's side of grants (see `activities/grants.ts`): a run opens its input with a worker at its start, seals each
 * child's input before starting it and the input it continues as new with. Local activities: only code running on
 * Deputy's workers calls them, and they add no server round trip. Deterministic code only: no key enters a workflow.
 */
import { ApplicationFailure, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import type { RunInput } from '../src/contract/run.js';
import { FAILURE } from '../src/contract/failures.js';
import { LOOKUP_OPTIONS } from './activity-options.js';

const { openRun, sealRunInput } = proxyLocalActivities<DeputyActivities>(LOOKUP_OPTIONS);

/**
 * This execution's grant, once a worker has checked that an origin or a resume in `input` was sealed for it by the
 * parent or the earlier run Temporal records. Either without its seal is invalid input.
 */
export async function openGrant(input: RunInput): Promise<string> {
  const { parent, continuedFromExecutionRunId, firstExecutionRunId } = workflowInfo();
  const opened = await openRun.executeWithOptions({ summary: 'open the run' }, [
    {
      input,
      parent: parent && { workflowId: parent.workflowId, runId: parent.runId },
      continuedFrom: continuedFromExecutionRunId,
      firstRunId: firstExecutionRunId,
    },
  ]);
  if (opened.ok) return opened.grant;
  throw ApplicationFailure.create({
    type: FAILURE.RunInputInvalid,
    message: `invalid RunInput: ${opened.reason}`,
    nonRetryable: true,
  });
}

/** A child's input, sealed for the child `childWorkflowId` by this execution. */
export async function sealedForChild(input: RunInput, childWorkflowId: string): Promise<RunInput> {
  const { grant: _old, ...rest } = input;
  const grant = await sealRunInput.executeWithOptions({ summary: `seal ${childWorkflowId}` }, [
    { input: rest, childWorkflowId },
  ]);
  return { ...rest, grant };
}

/** The input this execution continues as new with, sealed for the run that follows it. */
export async function sealedToContinue(input: RunInput): Promise<RunInput> {
  const { grant: _old, ...rest } = input;
  const grant = await sealRunInput.executeWithOptions({ summary: 'seal the resume' }, [{ input: rest }]);
  return { ...rest, grant };
}
