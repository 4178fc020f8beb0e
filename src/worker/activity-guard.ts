/**
 * Deputy's activities act with the worker's keys: the model key, the message keys, the tools' reach. Temporal lets
 * any client of the namespace run an activity by name — standalone, with no workflow at all, or from a workflow of
 * its own, named as it likes — so each activity first checks who calls it:
 *
 * - Temporal must report one of Deputy's workflows as its caller;
 * - what Deputy's runs call as local activities (signing, checking a steering call, looking up a composition) runs
 *   only as a local activity: that is, in the worker running the caller's workflow code, which is then Deputy's own;
 * - what acts for a run (a model call, a tool, a hook, a context summary, an MCP session, a signed message, a slot)
 *   needs the grant of the run's tree, which only a root's local activity makes, honoured for the run Temporal
 *   reports as the caller when the root is that run or one Temporal records as its ancestor (`grants.ts`).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../contract/failures.js';

/** The workflow types whose activities Deputy's workers run. */
const DEPUTY_WORKFLOWS: ReadonlySet<string> = new Set(['agentRun', 'tenantAdmission']);

/** What Deputy's runs call only as local activities. */
const LOCAL_ONLY: ReadonlySet<string> = new Set(['madeByModel', 'signMessage', 'resolveRun', 'presetAtRevision']);

/** What acts for a run, with the run's grant in its input. */
const FOR_A_RUN: ReadonlySet<string> = new Set([
  'callModel',
  'summarizeContext',
  'compactSession',
  'runTool',
  'runHook',
  'openMcpSession',
  'requestAdmission',
  'requestApproval',
  'checkApproval',
]);

/** Whether the activity in progress acts for a run: a tenant's admission workflow signs its own messages. */
function actsForARun(activity: string): boolean {
  return FOR_A_RUN.has(activity) || (activity === 'signMessage' && Context.current().info.workflowType === 'agentRun');
}

/** Whether a grant is the one of the run Temporal reports as the caller of the activity in progress. */
export type GrantCheck = (grant: unknown) => Promise<boolean>;

function refuse(activity: string, why: string, what: string): never {
  throw ApplicationFailure.create({
    type: FAILURE.ActivityCaller,
    message: `${activity} runs only for Deputy's runs (agentRun, tenantAdmission), and ${why}; ${what}`,
    nonRetryable: true,
  });
}

/** Refuses the activity in progress unless Temporal reports a caller that may call it (see above). */
function refuseOutsideCallers(activity: string): void {
  const { inWorkflow, workflowType, isLocal } = Context.current().info;
  if (!inWorkflow || workflowType === undefined || !DEPUTY_WORKFLOWS.has(workflowType)) {
    const caller = inWorkflow
      ? `a workflow of type ${JSON.stringify(workflowType)}`
      : 'no workflow (a standalone activity)';
    refuse(activity, `Temporal reports ${caller} as its caller`, 'start a run instead (DeputyClient.startRun)');
  }
  if (LOCAL_ONLY.has(activity) && !isLocal) {
    refuse(
      activity,
      'it was scheduled on a task queue, where Deputy only ever runs it as a local activity',
      'start a run instead (DeputyClient.startRun)',
    );
  }
}

/** `activities`, each refusing callers that may not call it before it does anything. */
export function guardActivities<T extends Record<string, (...args: never[]) => unknown>>(
  activities: T,
  holds: GrantCheck,
): T {
  return Object.fromEntries(
    Object.entries(activities).map(([name, activity]) => [
      name,
      (...args: never[]) => {
        refuseOutsideCallers(name);
        if (!actsForARun(name)) return activity(...args);
        return holds((args[0] as { grant?: unknown } | undefined)?.grant).then((granted) => {
          if (!granted) {
            refuse(
              name,
              'its input carries no grant a worker made for the tree of the run Temporal reports as its caller',
              'only a run started through Deputy (DeputyClient.startRun, a front door) acts with its powers',
            );
          }
          return activity(...args);
        });
      },
    ]),
  ) as T;
}
