/**
 * Deputy as a Temporal worker plugin (`@temporalio/plugin`): a service that already runs a Worker adds Deputy's
 * activities, and its workflows when the Worker has none of its own, in one line.
 */
import { SimplePlugin } from '@temporalio/plugin';
import type { WorkerDeploymentOptions, WorkerOptions } from '@temporalio/worker';
import { deputyActivities, type DeputyActivityOptions } from './factory.js';
import { SHARED_MODULES, WORKFLOWS_PATH } from './bundle.js';
import { modelQueueWarnings, sharedQueueWarning } from './start-checks.js';
import { ConfigStore } from '../config/store.js';
import { HEARTBEAT_THROTTLE } from './heartbeats.js';
import { modelQueues, type ModelQueue } from './model-queue.js';

/** Options of `deputyPlugin`: what Deputy's activities need, and the Worker Deployment the Worker is a version of. */
export type DeputyPluginOptions = DeputyActivityOptions & {
  /**
   * Makes the Worker a version of this deployment (as `DEPUTY_DEPLOYMENT` does for `npm run worker`), runs pinned,
   * unless the Worker sets its own `workerDeploymentOptions`. The plugin does not see the Worker's workflow code, so
   * the build id is the service's own (its release).
   */
  deployment?: { name: string; buildId: string } | undefined;
};

/** The plugin `deputyPlugin` returns. */
export class DeputyPlugin extends SimplePlugin {
  readonly #childTaskQueue: string;
  readonly #modelQueues: ModelQueue[];
  readonly #deployment: DeputyPluginOptions['deployment'];

  constructor(options: DeputyPluginOptions) {
    super({ name: 'deputy', activities: deputyActivities(options) });
    this.#childTaskQueue = options.childTaskQueue;
    this.#deployment = options.deployment;
    const { config } = options;
    this.#modelQueues = modelQueues(config instanceof ConfigStore ? config.current : config);
  }

  /**
   * Adds Deputy's activities; a Worker with no workflows of its own gets Deputy's (one with its own re-exports
   * `agentRun` from `deputy/workflows` in its workflows module), evaluated once for all of them as Deputy's own worker
   * does. Cancellation reaches an activity only through a heartbeat's reply, so the heartbeat throttle is kept short
   * unless the Worker sets it.
   */
  override configureWorker(options: WorkerOptions): WorkerOptions {
    const configured: WorkerOptions = super.configureWorker(options);
    const shared = sharedQueueWarning(options.taskQueue, this.#childTaskQueue);
    if (shared) console.warn(shared);
    for (const unpolled of modelQueueWarnings(options.taskQueue, this.#modelQueues)) console.warn(unpolled);
    const deployment = options.workerDeploymentOptions ?? this.#versioned();
    if (deployment?.useWorkerVersioning && deployment.defaultVersioningBehavior !== 'PINNED') {
      // An auto-upgrading run would replay its history on the next version's code mid-run.
      console.warn(
        `deputy: this Worker's deployment runs workflows ${deployment.defaultVersioningBehavior}; Deputy's runs must end on the version they start on: set workerDeploymentOptions.defaultVersioningBehavior to 'PINNED' (docs/versioning.md)`,
      );
    }
    const ownWorkflows = options.workflowsPath !== undefined || options.workflowBundle !== undefined;
    return {
      ...configured,
      ...(!ownWorkflows && {
        workflowsPath: WORKFLOWS_PATH,
        bundlerOptions: {
          ...configured.bundlerOptions,
          preloadModules: [...(configured.bundlerOptions?.preloadModules ?? []), ...SHARED_MODULES],
        },
      }),
      ...(options.maxHeartbeatThrottleInterval === undefined && { maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE }),
      ...(deployment && { workerDeploymentOptions: deployment }),
    };
  }

  /** The deployment options the plugin's `deployment` asks for. */
  #versioned(): WorkerDeploymentOptions | undefined {
    if (!this.#deployment) return undefined;
    const { name: deploymentName, buildId } = this.#deployment;
    return { version: { deploymentName, buildId }, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' };
  }
}

/**
 * Deputy for a Worker a service already runs:
 * `Worker.create({ connection, taskQueue, plugins: [deputyPlugin({ config, model, client, childTaskQueue })] })`.
 * Children run on `childTaskQueue`: give it the Worker's own queue, or run a second Worker on it.
 */
export function deputyPlugin(options: DeputyPluginOptions): DeputyPlugin {
  return new DeputyPlugin(options);
}
