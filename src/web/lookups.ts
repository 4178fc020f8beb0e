/**
 * What the web view asks Temporal before it draws: whether a run is there (within seconds: a page says "Temporal
 * unreachable" or "no such run" rather than "connecting…" for ever) and a run's transcript, from its worker or, when
 * none answers, what Temporal recorded of it.
 */
import type { ServerResponse } from 'node:http';
import { Connection, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { DeputyClient } from '../client/client.js';
import { askWorker, withinSeconds } from '../client/recorded.js';
import { probe } from '../client/connect.js';

/** How long a lookup may take before the page is told Temporal does not answer. */
const LOOKUP_SECONDS = 3;
/** How long Temporal's port may take to accept a connection. */
const PROBE_MS = 1000;

export interface Found {
  status: 200 | 404 | 503;
  error?: string;
}

/** Temporal did not answer: what the page says, naming the address. */
export function unreachable(err: unknown, address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233'): Error {
  return new Error(
    `Temporal does not answer at ${address} (${err instanceof Error ? err.message.split('\n')[0] : String(err)}): start it, or point TEMPORAL_ADDRESS at one that runs`,
  );
}

/** Whether `workflowId` is a run in the namespace: 200, 404 (no such run) or 503 (Temporal unreachable). */
export async function findRun(client: Client, workflowId: string): Promise<Found> {
  // A refused port is said at once, not after the deadline.
  const address = client.connection instanceof Connection ? client.connection.options.address : undefined;
  const down =
    address === undefined
      ? undefined
      : await probe(address, PROBE_MS).then(
          () => undefined,
          (err: unknown) => err,
        );
  if (down !== undefined) return { status: 503, error: unreachable(down, address).message };
  try {
    await withinSeconds(client, LOOKUP_SECONDS, () => client.workflow.getHandle(workflowId).describe());
    return { status: 200 };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      return { status: 404, error: `no run "${workflowId}" in namespace "${client.options.namespace}"` };
    return { status: 503, error: unreachable(err, address).message };
  }
}

/** A run's transcript as JSON: its session from its worker, or its record (status, why it failed) when none answers. */
export async function transcript(
  deputy: DeputyClient,
  workflowId: string,
  res: ServerResponse,
  headers: Record<string, string>,
): Promise<void> {
  const reading = await askWorker(deputy.temporal, workflowId, () => deputy.getState(workflowId), LOOKUP_SECONDS);
  const body =
    'live' in reading
      ? { status: reading.live.status, session: reading.live.session }
      : {
          status: reading.recorded.status ?? reading.recorded.workflowStatus.toLowerCase(),
          error: reading.recorded.error,
          session: [],
          note: `${reading.because}: this is what Temporal recorded of the run`,
        };
  res.writeHead(200, { ...headers, 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
