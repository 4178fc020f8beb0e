/**
 * The fleet's model-call queue: its rate is set on the server, where Temporal holds it for every worker that polls the
 * queue at once, and read back, so a worker never starts believing in a limit the server does not hold.
 */
import proto from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import type { DeputyConfig } from '../config/schema.js';
import { ConfigError } from '../contract/errors.js';

type ModelCalls = NonNullable<DeputyConfig['modelCalls']>;

/** A task queue of model calls the config names, and where it names it (`modelCalls`, `providers.<name>`). */
export interface ModelQueue extends ModelCalls {
  field: string;
}

/** The task queues of model calls the config names: the default endpoint's, then each provider's that has one. */
export function modelQueues(config: DeputyConfig): ModelQueue[] {
  const queues: ModelQueue[] = config.modelCalls ? [{ ...config.modelCalls, field: 'modelCalls' }] : [];
  for (const [name, { taskQueue, requestsPerSecond, perTenantRequestsPerSecond }] of Object.entries(config.providers)) {
    if (taskQueue === undefined) continue;
    queues.push({ taskQueue, requestsPerSecond, perTenantRequestsPerSecond, field: `providers.${name}` });
  }
  return queues;
}

const ACTIVITY_QUEUE = proto.temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY;

/**
 * Sets the queue's rate limits the config names (the whole queue's, each fairness key's) and checks that the server
 * holds them; a server that cannot is a `ConfigError` saying what to do.
 */
export async function applyModelQueueRate(
  connection: NativeConnection,
  namespace: string,
  { taskQueue, requestsPerSecond, perTenantRequestsPerSecond, field }: ModelQueue,
): Promise<void> {
  if (requestsPerSecond === undefined && perTenantRequestsPerSecond === undefined) return;
  const limit = (rps: number) => ({
    rateLimit: { requestsPerSecond: rps },
    reason: `set by a Deputy worker at its start, from its config (${field})`,
  });
  let held: proto.temporal.api.taskqueue.v1.ITaskQueueConfig | null | undefined;
  try {
    await connection.workflowService.updateTaskQueueConfig({
      namespace,
      identity: 'deputy-worker',
      taskQueue,
      taskQueueType: ACTIVITY_QUEUE,
      ...(requestsPerSecond !== undefined && { updateQueueRateLimit: limit(requestsPerSecond) }),
      ...(perTenantRequestsPerSecond !== undefined && {
        updateFairnessKeyRateLimitDefault: limit(perTenantRequestsPerSecond),
      }),
    });
    ({ config: held } = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: proto.temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: ACTIVITY_QUEUE,
      reportConfig: true,
    }));
  } catch (err) {
    throw new ConfigError(
      [
        `${field}: the Temporal server did not take the rate of task queue "${taskQueue}" (${(err as Error).message}); it needs Temporal Server 1.29 or later (UpdateTaskQueueConfig): upgrade it, or remove the rates from ${field} and set them with \`temporal task-queue config set --task-queue ${taskQueue} --task-queue-type activity --queue-rps-limit <n>\``,
      ],
      `task queue ${taskQueue}`,
    );
  }
  const problems: string[] = [];
  const check = (name: string, asked: number | undefined, rps: number | null | undefined) => {
    // The server keeps a 32-bit float: 0.3 reads back as 0.30000001.
    if (asked !== undefined && (rps === null || rps === undefined || Math.abs(rps - asked) > asked * 1e-6)) {
      problems.push(
        `${field}.${name}: ${asked} was set on task queue "${taskQueue}" but the server holds ${rps ?? 'none'}; check the server's dynamic config (matching rate limits) and that no other fleet sets this queue`,
      );
    }
  };
  check('requestsPerSecond', requestsPerSecond, held?.queueRateLimit?.rateLimit?.requestsPerSecond);
  check(
    'perTenantRequestsPerSecond',
    perTenantRequestsPerSecond,
    held?.fairnessKeysRateLimitDefault?.rateLimit?.requestsPerSecond,
  );
  if (problems.length > 0) throw new ConfigError(problems, `task queue ${taskQueue}`);
}
