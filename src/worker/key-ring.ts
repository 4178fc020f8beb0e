/**
 * Workers that sign messages with different keys cannot serve each other's runs: each names its key's fingerprint
 * (never the key) in its build id, and refuses to poll beside a worker that names another, as Temporal reports the
 * pollers of its task queues.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { NativeConnection, WorkflowBundleOption } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { ConfigError } from '../contract/errors.js';

/** What precedes a worker's key fingerprint in its build id. */
const KEY_MARK = 'key:';

/**
 * The name of what a worker runs, which Temporal records in every task event of a run's history and reports for each
 * poller of a queue: Deputy, a digest of its workflow bundle, and its message key's fingerprint (never the key).
 * Workers that sign with different keys cannot serve each other's runs, so they are different builds. The SDK's own
 * default names the SDK and the bundle's whole SHA-256: 105 characters, about 0.5 KiB of every turn's history.
 */
export function deputyBuildId(bundle: WorkflowBundleOption, fingerprint: string): string {
  const code = 'code' in bundle ? bundle.code : readFileSync(bundle.codePath, 'utf8');
  return `deputy+${createHash('sha256').update(code).digest('hex').slice(0, 12)}+${KEY_MARK}${fingerprint}`;
}

/** The pollers the server lists for a task queue's workflow and activity sides (those of the last minutes). */
async function pollersOf(connection: NativeConnection, namespace: string, taskQueue: string) {
  const sides = await Promise.all(
    [
      proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    ].map((taskQueueType) =>
      connection.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType,
      }),
    ),
  );
  return sides.flatMap(({ pollers }) => pollers ?? []);
}

/**
 * Waits until the server lists a poller of `identity` on `taskQueue`, 10 s at most: a server that lists pollers by
 * partition may show this worker's later, and the check that follows is then made all the same.
 */
export async function untilPolling(
  connection: NativeConnection,
  namespace: string,
  taskQueue: string,
  identity: string,
): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const pollers = await pollersOf(connection, namespace, taskQueue);
    if (pollers.some((poller) => poller.identity === identity)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Refuses (a `ConfigError` saying what to do) when a worker polling `taskQueue` in the last minutes, as Temporal
 * reports its pollers, names another message key than `fingerprint` in its build id.
 */
export async function checkKeyRing(
  connection: NativeConnection,
  namespace: string,
  taskQueue: string,
  fingerprint: string,
): Promise<void> {
  const others = new Set<string>();
  for (const poller of await pollersOf(connection, namespace, taskQueue)) {
    const buildId = poller.workerVersionCapabilities?.buildId ?? '';
    const at = buildId.indexOf(KEY_MARK);
    const theirs = at < 0 ? undefined : buildId.slice(at + KEY_MARK.length);
    if (theirs && theirs !== fingerprint) others.add(theirs);
  }
  if (others.size === 0) return;
  throw new ConfigError(
    [
      `task queue ${taskQueue}: workers polling it sign messages with key ${[...others].join(', ')}, this one with ${fingerprint}; messages between their runs would be dropped. Give every worker the same DEPUTY_MESSAGE_KEYS (or DEPUTY_MESSAGE_KEYS_FILE)`,
    ],
    'message keys',
  );
}
