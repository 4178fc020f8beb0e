/**
 * The chain of the run Temporal reports as an activity's caller: its workflow id and the first run of its chain
 * (`firstRunId`: continue-as-new, retry, cron and reset keep it). Grants and seals are bound to it, so a run an
 * operator resets (a new run id, its history up to the reset point replayed) keeps the grant it opened and the
 * tool calls its model made. Only Deputy's own code runs in such a chain: a reset or a continue-as-new runs the
 * workflow it was made from; a workflow of a client's own starts a chain of its own.
 */
import { Context } from '@temporalio/activity';

export interface Chain {
  workflowId: string;
  firstRunId: string;
}

/** Callers' chains by run id, read from the server once per run (bounded: the oldest are forgotten first). */
const known = new Map<string, string>();
const KEPT = 10_000;

/** The chain of the caller of the activity in progress: Temporal's own record of it. Undefined outside a workflow. */
export async function callerChain(): Promise<Chain | undefined> {
  const context = Context.current();
  const execution = context.info.workflowExecution;
  if (!execution) return undefined;
  const cached = known.get(execution.runId);
  if (cached !== undefined) return { workflowId: execution.workflowId, firstRunId: cached };
  const described = await context.client.workflow.getHandle(execution.workflowId, execution.runId).describe();
  const firstRunId = described.raw.workflowExecutionInfo?.firstRunId || execution.runId;
  if (known.size >= KEPT) known.delete(known.keys().next().value!);
  known.set(execution.runId, firstRunId);
  return { workflowId: execution.workflowId, firstRunId };
}

/** The chain of the caller, once `callerChain` has read it in this activity (as the activity guard does first). */
export function knownCallerChain(): Chain | undefined {
  const execution = Context.current().info.workflowExecution;
  const firstRunId = execution && known.get(execution.runId);
  return execution && firstRunId !== undefined ? { workflowId: execution.workflowId, firstRunId } : undefined;
}
