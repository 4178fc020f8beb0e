/**
 * The chain of the run Temporal reports as an activity's caller: its workflow id and the first run of its chain
 * (`firstRunId`: continue-as-new, retry, cron and reset keep it), and the run Temporal records as its parent. Grants
 * and seals are bound to chains, so a run an operator resets (a new run id, its history up to the reset point
 * replayed) keeps its grant and the tool calls its model made. Only Deputy's own code runs in such a chain: a reset
 * or a continue-as-new runs the workflow it was made from; a workflow of a client's own starts a chain of its own.
 */
import { Context } from '@temporalio/activity';
import { MAX_DEPTH_CEILING } from '../src/rules/children.js';

export interface Chain {
  workflowId: string;
  firstRunId: string;
}

interface Execution {
  workflowId: string;
  runId: string;
}

/** What the server records of a run: its chain, and the execution that started it as a child. */
interface Recorded extends Chain {
  parent: Execution | undefined;
}

/** Runs' records by run id, read from the server once per run (bounded: the oldest are forgotten first). */
const known = new Map<string, Recorded>();
const KEPT = 10_000;

/** How far up a tree a caller's lineage is read: from the deepest child the config allows to its root. */
const MAX_LINEAGE = MAX_DEPTH_CEILING + 1;

async function recorded(execution: Execution): Promise<Recorded> {
  const cached = known.get(execution.runId);
  if (cached !== undefined) return cached;
  const { client } = Context.current();
  const described = await client.workflow.getHandle(execution.workflowId, execution.runId).describe();
  const info = described.raw.workflowExecutionInfo;
  const parent = info?.parentExecution;
  const record: Recorded = {
    workflowId: execution.workflowId,
    firstRunId: info?.firstRunId || execution.runId,
    parent: parent?.workflowId && parent.runId ? { workflowId: parent.workflowId, runId: parent.runId } : undefined,
  };
  if (known.size >= KEPT) known.delete(known.keys().next().value!);
  known.set(execution.runId, record);
  return record;
}

/** The chain of the caller of the activity in progress: Temporal's own record of it. Undefined outside a workflow. */
export async function callerChain(): Promise<Chain | undefined> {
  const execution = Context.current().info.workflowExecution;
  return execution && (await recorded(execution));
}

/**
 * Whether `matches` holds for the caller's chain or for the chain of a run Temporal records as its ancestor (its
 * parent, its parent's parent, …), nearest first. Each run's record is read once per worker.
 */
export async function callerLineageHas(matches: (chain: Chain) => boolean): Promise<boolean> {
  let execution: Execution | undefined = Context.current().info.workflowExecution;
  for (let level = 0; execution !== undefined && level < MAX_LINEAGE; level++) {
    const record = await recorded(execution);
    if (matches(record)) return true;
    execution = record.parent;
  }
  return false;
}

/** The chain of the caller, once `callerChain` has read it in this activity (as the activity guard does first). */
export function knownCallerChain(): Chain | undefined {
  const execution = Context.current().info.workflowExecution;
  const record = execution && known.get(execution.runId);
  return record && { workflowId: record.workflowId, firstRunId: record.firstRunId };
}
