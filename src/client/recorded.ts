/**
 * What a command can say of a run when no worker answers for it: what Temporal itself recorded (its status,
 * Deputy's search attributes, its result or failure once it ended). A query needs a worker; a description does not.
 */
import { isGrpcServiceError, WorkflowFailedError, type Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { DEPUTY_COST_USD, DEPUTY_PRESET, DEPUTY_STATUS, DEPUTY_TENANT } from '../contract/search-attributes.js';
import { failureMessage } from '../rules/failure-message.js';

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

/** gRPC's status codes for a cancelled call, a call past its deadline, and a call the server refused to route. */
const CANCELLED = 1;
const DEADLINE_EXCEEDED = 4;
const FAILED_PRECONDITION = 9;

/** `err` and each error it was caused by. */
function* causes(err: unknown): Generator<Error> {
  for (let at: unknown = err; at instanceof Error; at = at.cause) yield at;
}

const hasCode = (err: unknown, code: number) =>
  [...causes(err)].some((at) => isGrpcServiceError(at) && Number(at.code) === code);

/**
 * Whether `err` is a query nobody answered: it ran out of time, or the server refused it because no worker has
 * polled the run's task queue lately (what it says once the workers that served the run have stopped).
 */
export function unanswered(err: unknown): boolean {
  return (
    hasCode(err, DEADLINE_EXCEEDED) ||
    hasCode(err, FAILED_PRECONDITION) ||
    [...causes(err)].some((at) => /query timed out|deadline exceeded|no poller seen/i.test(at.message))
  );
}

/** A live poller asks again at least this often (a long poll lasts about a minute); older ones have gone. */
const POLLER_GONE_MS = 90_000;

/** Whether a worker polls `taskQueue` for workflow tasks now: when none does, a query would wait for nobody. */
export async function workerPolls(client: Client, taskQueue: string): Promise<boolean> {
  const { pollers } = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const now = Date.now();
  return (pollers ?? []).some((poller) => {
    const seconds = poller.lastAccessTime?.seconds;
    return seconds !== undefined && seconds !== null && now - Number(String(seconds)) * 1000 < POLLER_GONE_MS;
  });
}

/** What a command asked of a run's worker, or why it read Temporal's record of the run instead. */
export type Reading<T> = { live: T } | { recorded: RecordedRun; because: string };

/**
 * `ask()` of the run's worker, within `seconds`; Temporal's record of the run at once when no worker polls its task
 * queue, or when the worker did not answer in time.
 */
export async function askWorker<T>(
  client: Client,
  workflowId: string,
  ask: () => Promise<T>,
  seconds = 10,
): Promise<Reading<T>> {
  const recorded = await recordedRun(client, workflowId);
  if (!(await workerPolls(client, recorded.taskQueue)))
    return { recorded, because: `no worker polls its task queue "${recorded.taskQueue}"` };
  try {
    return { live: await withinSeconds(client, seconds, ask) };
  } catch (err) {
    // A run refused at its input ended before it set up its handlers: its failure says why.
    if ([...causes(err)].some((at) => /did not register a handler/.test(at.message)))
      return { recorded, because: 'it ended before it could answer (its error says why)' };
    if (!unanswered(err)) throw err;
    return { recorded, because: `no worker answered for it within ${seconds} s` };
  }
}

/** The one line a command prints when it read the record: why, and which worker answers live. */
export function fromRecordLine(workflowId: string, reading: { recorded: RecordedRun; because: string }): string {
  const queue = reading.recorded.taskQueue;
  return `deputy: ${workflowId}: ${reading.because}, so this is what Temporal recorded; for live answers start a worker on task queue "${queue}" (DEPUTY_TASK_QUEUE=${queue} npm run worker)`;
}

/** A run as Temporal recorded it: no worker involved. */
export interface RecordedRun {
  workflowId: string;
  readFrom: string;
  workflowStatus: string;
  status: string | null;
  /** Why it failed, when it did. */
  error: string | null;
  costUsd: number | null;
  preset: string | null;
  tenant: string | null;
  taskQueue: string;
  startedAt: string;
  endedAt: string | null;
  result?: unknown;
}

/** The run as Temporal recorded it. */
export async function recordedRun(client: Client, workflowId: string): Promise<RecordedRun> {
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe();
  const attributes = described.typedSearchAttributes;
  const closed = described.status.name !== 'RUNNING' && described.status.name !== 'CONTINUED_AS_NEW';
  let result: unknown;
  let error: string | null = null;
  if (closed) {
    try {
      result = await handle.result();
      const said = (result as { error?: unknown } | null)?.error;
      if (typeof said === 'string') error = said;
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      error = failureMessage(err);
    }
  }
  return {
    workflowId,
    readFrom: 'what Temporal recorded (no worker answered)',
    workflowStatus: described.status.name,
    status: attributes.get(DEPUTY_STATUS) ?? null,
    error,
    costUsd: attributes.get(DEPUTY_COST_USD) ?? null,
    preset: attributes.get(DEPUTY_PRESET) ?? null,
    tenant: attributes.get(DEPUTY_TENANT) ?? null,
    taskQueue: described.taskQueue,
    startedAt: described.startTime.toISOString(),
    endedAt: described.closeTime?.toISOString() ?? null,
    ...(result !== undefined && { result }),
  };
}

/** Whether the run's input is encrypted in history (its first event says how its payload is encoded). */
export async function encryptedRun(client: Client, workflowId: string): Promise<boolean> {
  const { history } = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId },
    maximumPageSize: 1,
  });
  const metadata = history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.metadata;
  const encoding = metadata?.encoding ? Buffer.from(metadata.encoding).toString() : '';
  return encoding === 'binary/encrypted';
}

/** What a command reading an encrypted run without its keys says. */
export function encryptedWords(): string {
  return `this run is encrypted and ${process.env.DEPUTY_CODEC_KEYS ? 'DEPUTY_CODEC_KEYS here does not hold its key' : 'DEPUTY_CODEC_KEYS is not set here'}: set DEPUTY_CODEC_KEYS to the workers' keys (key-id:base64 entries, as the workers have them) to read it`;
}
