/**
 * Deputy's activities act with the worker's keys: the model key, the message keys, the tools' reach. Temporal lets
 * any client of the namespace run an activity by name — standalone, with no workflow at all, or from a workflow of
 * its own type — so each activity first checks that Temporal reports one of Deputy's workflows as its caller.
 * Defence in depth only: a client of the namespace can still name its own workflow `agentRun` (see docs/security.md).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../contract/failures.js';

/** The workflow types whose activities Deputy's workers run. */
const DEPUTY_WORKFLOWS: ReadonlySet<string> = new Set(['agentRun', 'tenantAdmission']);

/** Refuses the activity in progress unless Temporal reports one of Deputy's workflows as its caller. */
export function refuseOutsideCallers(activity: string): void {
  const { inWorkflow, workflowType } = Context.current().info;
  if (inWorkflow && workflowType !== undefined && DEPUTY_WORKFLOWS.has(workflowType)) return;
  const caller = inWorkflow
    ? `a workflow of type ${JSON.stringify(workflowType)}`
    : 'no workflow (a standalone activity)';
  throw ApplicationFailure.create({
    type: FAILURE.ActivityCaller,
    message: `${activity} runs only for Deputy's runs (agentRun, tenantAdmission), and Temporal reports ${caller} as its caller; start a run instead (DeputyClient.startRun)`,
    nonRetryable: true,
  });
}

/** `activities`, each refusing callers that are not Deputy's workflows before it does anything. */
export function guardActivities<T extends Record<string, (...args: never[]) => unknown>>(activities: T): T {
  return Object.fromEntries(
    Object.entries(activities).map(([name, activity]) => [
      name,
      (...args: never[]) => {
        refuseOutsideCallers(name);
        return activity(...args);
      },
    ]),
  ) as T;
}
