/**
 * What a command can say of a run when no worker answers for it: what Temporal itself recorded (its status,
 * Deputy's search attributes, its result once it ended). A query needs a worker; a description does not.
 */
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { DEPUTY_COST_USD, DEPUTY_PRESET, DEPUTY_STATUS, DEPUTY_TENANT } from '../contract/search-attributes.js';

/**
 * `call()`, given up after `seconds` (the server itself would wait 30 s for a worker to answer a query). Under load
 * gRPC can report the call it stopped at the deadline as cancelled rather than past its deadline: a cancellation at
 * or after the deadline is read as the deadline.
 */
export async function withinSeconds<R>(client: Client, seconds: number, call: () => Promise<R>): Promise<R> {
  const deadline = Date.now() + seconds * 1000;
  try {
    return await client.withDeadline(deadline, call);
  } catch (err) {
    if (Date.now() >= deadline && hasCode(err, CANCELLED)) {
      throw new Error(`deadline exceeded after ${seconds} s`, { cause: err });
    }
    throw err;
  }
}

/** gRPC's status codes for a cancelled call and for a call past its deadline. */
const CANCELLED = 1;
const DEADLINE_EXCEEDED = 4;

/** `err` and each error it was caused by. */
function* causes(err: unknown): Generator<Error> {
  for (let at: unknown = err; at instanceof Error; at = at.cause) yield at;
}

const hasCode = (err: unknown, code: number) =>
  [...causes(err)].some((at) => isGrpcServiceError(at) && Number(at.code) === code);

/** Whether `err` is a call that ran out of time: nobody answered it. */
export function unanswered(err: unknown): boolean {
  return (
    hasCode(err, DEADLINE_EXCEEDED) ||
    [...causes(err)].some((at) => /query timed out|deadline exceeded/i.test(at.message))
  );
}

/** The run as Temporal recorded it. */
export async function recordedState(client: Client, workflowId: string): Promise<Record<string, unknown>> {
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe();
  const attributes = described.typedSearchAttributes;
  const ended = described.status.name === 'COMPLETED';
  return {
    workflowId,
    readFrom: 'what Temporal recorded (no worker answered)',
    workflowStatus: described.status.name,
    status: attributes.get(DEPUTY_STATUS) ?? null,
    costUsd: attributes.get(DEPUTY_COST_USD) ?? null,
    preset: attributes.get(DEPUTY_PRESET) ?? null,
    tenant: attributes.get(DEPUTY_TENANT) ?? null,
    taskQueue: described.taskQueue,
    startedAt: described.startTime.toISOString(),
    endedAt: described.closeTime?.toISOString() ?? null,
    ...(ended && { result: await handle.result() }),
  };
}
