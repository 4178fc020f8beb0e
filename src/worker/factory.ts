/**
 * Builds Deputy workers. Kept apart from the `npm run worker` entry point so tests, the demo and users' own
 * services create workers the same way.
 */
import { applyModelQueueRate, modelQueues } from './model-queue.js';
import { createOpenAIClient, providerEndpoints } from './endpoints.js';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { bundleDeputyWorkflows } from './bundle.js';
import { builtinTools } from '../../activities/builtin-tools.js';
import { createActivities } from '../../activities/index.js';
import type { McpOptions } from '../../activities/mcp.js';
import { configSource, unknownPresetTools } from '../config/load.js';
import { type DeputyConfig } from '../config/schema.js';
import { ConfigStore } from '../config/store.js';
import { followMcpTools } from './mcp-tools.js';
import { sharedQueueWarning } from './start-checks.js';
import { guardActivities } from './activity-guard.js';
import { runGrants } from '../../activities/grants.js';
import { frontDoorHandler } from './front-door.js';
import { cachedTenantDelegation, describeTenantDelegation, temporalRunRecords } from '../config/tenant-evidence.js';
import { ConfigError } from '../contract/errors.js';
import { CLI_TYPE_NAMES, DEPUTY_SEARCH_ATTRIBUTES } from '../contract/search-attributes.js';
import type { HookFunction } from '../contract/hooks.js';
import type { ToolDefinition } from '../contract/tools.js';
import { TOOL_NAME } from '../contract/tools.js';
import { deputyTracing, type DeputyTracing } from '../ops/tracing.js';
import { MessageKeys } from '../ops/message-keys.js';
import { HEARTBEAT_THROTTLE } from './heartbeats.js';
import { checkKeyRing, deputyBuildId, untilPolling } from './key-ring.js';
import { currentIfNone, deploymentOptions, type DeputyDeployment } from './deployment.js';

/** Kept here, where services building workers already import it from. */
export { createOpenAIClient } from './endpoints.js';

/** Options of `createDeputyWorker`. */
export interface DeputyWorkerOptions {
  connection: NativeConnection;
  namespace?: string;
  /** Task queue of root runs (`DEPUTY_TASK_QUEUE`). */
  taskQueue: string;
  /** Task queue of child runs (`DEPUTY_BACKGROUND_TASK_QUEUE`). @default `deputy-background` */
  childTaskQueue?: string;
  /** Keys that sign messages between runs. @default `MessageKeys.fromEnv()` (a key file made on first use) */
  messageKeys?: MessageKeys;
  /** The configuration, or a store whose configuration can change while the worker runs. */
  config: DeputyConfig | ConfigStore;
  /** Model endpoint; the key never leaves the worker. */
  model: { apiKey: string | undefined; baseURL: string | undefined };
  /** A Temporal client for reading finished children's sessions (follow-ups). */
  client?: Client;
  /** Hook functions the config's hooks can name (`function: <name>`). */
  hookFunctions?: Record<string, HookFunction>;
  /** Where the config's MCP servers read `{ env }` and `{ file }` values. @default the process's environment and directory */
  mcp?: McpOptions;
  /** Tools the worker can run, besides those of the config's MCP servers. @default the built-in `calculate` and `search_notes` */
  tools?: ToolDefinition[];
  /** A prebuilt workflow bundle (tests build one and share it). @default bundled from `workflows/` */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Passed to the Temporal worker as is (cache size, concurrency …). */
  workerOptions?: Partial<WorkerOptions>;
  /** Tracing: its plugin joins the workers and the workflow bundle. @default `deputyTracing()` */
  tracing?: DeputyTracing | undefined;
  /**
   * Poll only the config's queues of model calls (`modelCalls`, each provider's `taskQueue`): a worker that makes a
   * provider's calls apart from the workers running runs (`DEPUTY_WORKER_POLLS=model-calls`).
   */
  modelCallsOnly?: boolean;
  /** Where the worker says, at start and on reload, which tenants have delegation and why. @default the console */
  report?: (line: string) => void;
  /**
   * The Worker Deployment this worker is a version of (`DEPUTY_DEPLOYMENT`): runs stay on the version they start on.
   * @default unversioned: every worker of the task queue runs every run
   */
  deployment?: DeputyDeployment | undefined;
}

/** Indexes tools by name, rejecting bad and duplicate names. */
export function toolMap(tools: readonly ToolDefinition[]): Map<string, ToolDefinition> {
  const problems: string[] = [];
  const map = new Map<string, ToolDefinition>();
  for (const tool of tools) {
    if (!TOOL_NAME.test(tool.name)) problems.push(`tool "${tool.name}": name must match ${TOOL_NAME}`);
    if (map.has(tool.name)) problems.push(`tool "${tool.name}": registered twice`);
    map.set(tool.name, tool);
  }
  if (problems.length > 0) throw new ConfigError(problems, 'worker tools');
  return map;
}

/** Deputy's workers: one on the task queue of root runs, one on the background queue children run on. */
export class DeputyWorker {
  #settle: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  /** Settles once the workers poll and the checks that need them polling passed (rejects, and they stop, if not). */
  readonly started = new Promise<void>((resolve, reject) => (this.#settle = { resolve, reject }));

  constructor(
    /** The Temporal workers, root queue first. */
    readonly workers: readonly Worker[],
    /** Closes what the workers hold besides (the connections of stateful MCP servers). */
    private readonly release: () => Promise<void> = async () => undefined,
    /** What is checked once the workers poll; a throw stops them, and `run()` rejects with it. */
    private readonly whilePolling: () => Promise<void> = async () => undefined,
  ) {
    // Nobody need wait for it: `run()` rejects with the same error.
    this.started.catch(() => undefined);
  }

  /** `<deployment>:<build id>` of the Worker Deployment version these workers are; `null` when unversioned. */
  get version(): string | null {
    const version = this.workers[0]?.options.workerDeploymentOptions?.version;
    return version ? `${version.deploymentName}:${version.buildId}` : null;
  }

  /** Runs every worker until `shutdown()` or a signal (SIGINT/SIGTERM) stops them. */
  async run(): Promise<void> {
    let refused: Error | undefined;
    const running = Promise.all(this.workers.map((worker) => worker.run()));
    const checked = this.whilePolling().then(
      () => this.#settle?.resolve(),
      (err: unknown) => {
        refused = err instanceof Error ? err : new Error(String(err));
        this.#settle?.reject(err);
        this.shutdown();
      },
    );
    try {
      await running;
      await checked;
    } finally {
      await this.release();
    }
    if (refused !== undefined) throw refused;
  }

  /** Asks every running worker to stop after its in-flight tasks. */
  shutdown(): void {
    for (const worker of this.workers) if (worker.getState() === 'RUNNING') worker.shutdown();
  }

  /** Runs the workers while `work` runs, then shuts them down. */
  async runUntil<T>(work: () => Promise<T>): Promise<T> {
    const running = this.run();
    try {
      return await work();
    } finally {
      this.shutdown();
      await running;
    }
  }
}

/** What Deputy's activities need, whether Deputy runs its own workers or joins a service's (the plugin). */
export type DeputyActivityOptions = Pick<
  DeputyWorkerOptions,
  'config' | 'model' | 'client' | 'hookFunctions' | 'tools' | 'report'
> & {
  childTaskQueue: string;
  /** The worker's data converter has an external payload store. @default DEPUTY_PAYLOAD_STORE is set */
  payloadStore?: boolean;
  /** Keys that sign messages between runs. @default `MessageKeys.fromEnv()` */
  messageKeys?: MessageKeys;
};

/** Checks the configuration against the tools and hook functions, and builds Deputy's activities. */
export function deputyActivities(
  options: DeputyActivityOptions,
  /** The worker's tools by name; the worker adds and replaces its MCP servers' tools in it. */
  tools: Map<string, ToolDefinition> = toolMap(options.tools ?? builtinTools()),
  /** The queue only this worker polls, for the runs whose MCP sessions it holds. */
  sessionQueue?: string,
) {
  const store = options.config instanceof ConfigStore ? options.config : new ConfigStore(options.config);
  const config = store.current;
  const hookFunctions = new Map(Object.entries(options.hookFunctions ?? {}));
  const problems = [
    // An MCP server's tools are offered when it answers; one that did not answer at start is reported by the worker.
    ...unknownPresetTools(config, new Set(tools.keys())),
    ...config.hooks.flatMap((hook, i) =>
      hook.function !== undefined && !hookFunctions.has(hook.function)
        ? [`hooks.${i}.function: no hook function "${hook.function}" is registered with the worker`]
        : [],
    ),
  ];
  if (problems.length > 0) throw new ConfigError(problems, configSource(config));
  // Says at start and after every reload which tenants have delegation, and why the others do not.
  const records = options.client && temporalRunRecords(options.client);
  const say = options.report ?? ((line: string) => console.log(`deputy: ${line}`));
  const report = (current: DeputyConfig) => {
    if (!current.delegation.enabled) return;
    cachedTenantDelegation(current, process.cwd(), records).then(
      (activations) => {
        for (const line of describeTenantDelegation([...activations.values()])) say(line);
      },
      (err: unknown) => say(`tenant evidence could not be checked yet: ${(err as Error).message}`),
    );
  };
  report(config);
  store.onChange(report);
  const messageKeys = options.messageKeys ?? MessageKeys.fromEnv();
  return guardActivities(
    createActivities({
      openai: createOpenAIClient(options.model),
      endpoints: providerEndpoints(config),
      config: store,
      tools,
      apiKey: options.model.apiKey,
      childTaskQueue: options.childTaskQueue,
      hookFunctions,
      client: options.client,
      payloadStore: options.payloadStore ?? process.env.DEPUTY_PAYLOAD_STORE !== undefined,
      sessionQueue,
      messageKeys,
    }),
    runGrants(messageKeys).holds,
  );
}

/** Creates the workers that run `agentRun` and its activities on the root and background task queues. */
export async function createDeputyWorker(options: DeputyWorkerOptions): Promise<DeputyWorker> {
  const childTaskQueue = options.childTaskQueue ?? 'deputy-background';
  const shared = sharedQueueWarning(options.taskQueue, childTaskQueue);
  if (shared) console.warn(shared);
  const payloadStore = options.workerOptions?.dataConverter?.externalStorage !== undefined;
  const store = options.config instanceof ConfigStore ? options.config : new ConfigStore(options.config);
  // The MCP servers' tools join the worker's own; a server that does not answer is reported and left out.
  const tools = toolMap(options.tools ?? builtinTools());
  const release = await followMcpTools(store, tools, options.mcp);
  // With a stateful MCP server, this worker also polls a queue of its own: a run's calls to that server come back
  // to the worker that holds the run's session (as Temporal's stateful MCP providers pin theirs).
  const stateful = Object.values(store.current.mcpServers).some((server) => server.stateful);
  const sessionQueue = stateful ? `${options.taskQueue}-mcp-${randomUUID()}` : undefined;
  let activities: ReturnType<typeof deputyActivities>;
  let messageKeys: MessageKeys;
  try {
    messageKeys = options.messageKeys ?? MessageKeys.fromEnv();
    activities = deputyActivities(
      { ...options, config: store, childTaskQueue, payloadStore, messageKeys },
      tools,
      sessionQueue,
    );
  } catch (err) {
    await release();
    throw err;
  }
  const tracing = 'tracing' in options ? options.tracing : deputyTracing();
  const workflowBundle =
    options.workflowBundle ??
    (await bundleDeputyWorkflows({ tracing, stackTraceSources: options.workerOptions?.showStackTraceSources }));
  const queues = childTaskQueue === options.taskQueue ? [options.taskQueue] : [options.taskQueue, childTaskQueue];
  const namespace = options.namespace ?? 'default';
  // Every worker names its message key in its build id, and refuses to poll beside workers that sign with another:
  // a message one signs, the other would drop, and a grant one makes, the other refuses.
  const { fingerprint } = messageKeys;
  // Model calls may go to queues the whole fleet shares (the default endpoint's, a provider's), whose rates the
  // server holds for all of their workers.
  const modelCallQueues = modelQueues(store.current);
  const modelQueueNames = [...new Set(modelCallQueues.map((queue) => queue.taskQueue))];
  if (options.modelCallsOnly && modelQueueNames.length === 0) {
    await release();
    throw new ConfigError(
      [
        'DEPUTY_WORKER_POLLS=model-calls: the config names no queue of model calls; add modelCalls, or a provider with a taskQueue',
      ],
      configSource(store.current),
    );
  }
  // A worker of model calls only polls nothing else: runs and their own queues are other workers' work.
  const runQueues = options.modelCallsOnly ? [] : queues;
  try {
    for (const taskQueue of [...runQueues, ...modelQueueNames]) {
      await checkKeyRing(options.connection, namespace, taskQueue, fingerprint);
    }
    for (const queue of modelCallQueues) await applyModelQueueRate(options.connection, namespace, queue);
  } catch (err) {
    await release();
    throw err;
  }
  const workerDeploymentOptions =
    options.deployment && deploymentOptions(options.deployment, workflowBundle, fingerprint);
  const buildId =
    options.workerOptions?.workerDeploymentOptions || workerDeploymentOptions
      ? undefined
      : deputyBuildId(workflowBundle, fingerprint);
  const versioned = { ...(buildId && { buildId }), ...(workerDeploymentOptions && { workerDeploymentOptions }) };
  // The session queue takes activities only: no workflow is ever started there.
  const poll = (taskQueue: string, runsWorkflows: boolean) =>
    Worker.create({
      connection: options.connection,
      namespace,
      taskQueue,
      activities,
      workflowBundle,
      ...versioned,
      maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE,
      ...options.workerOptions,
      ...(tracing && { plugins: [...(options.workerOptions?.plugins ?? []), tracing.plugin] }),
      ...(!runsWorkflows && { maxConcurrentWorkflowTaskPolls: 1, maxCachedWorkflows: 0 }),
    });
  // Each front door serves Deputy's Nexus service for its tenant, on the queue its endpoint targets; runs it starts
  // go to Deputy's own queue.
  const doors = (options.modelCallsOnly ? [] : store.current.frontDoors).map((door) =>
    Worker.create({
      connection: options.connection,
      namespace,
      taskQueue: door.taskQueue,
      ...versioned,
      nexusServices: [frontDoorHandler({ tenant: door.tenant, taskQueue: options.taskQueue, config: store })],
    }),
  );
  const workers = await Promise.all([
    ...runQueues.map((taskQueue) => poll(taskQueue, true)),
    ...(sessionQueue && !options.modelCallsOnly ? [poll(sessionQueue, false)] : []),
    ...modelQueueNames.map((taskQueue) => poll(taskQueue, false)),
    ...doors,
  ]);
  // Checked again once this worker polls: of two workers started at the same moment, each checked before the other
  // polled. Each now waits until the server lists its own poller, then looks; whichever looks second sees the
  // other's poller (it registered before the other looked, so before this look), so at most one of them stays.
  const identity = workers[0]!.options.identity;
  const whilePolling = async () => {
    for (const taskQueue of [...runQueues, ...modelQueueNames]) {
      await untilPolling(options.connection, namespace, taskQueue, identity);
      await checkKeyRing(options.connection, namespace, taskQueue, fingerprint);
    }
    if (workerDeploymentOptions) {
      const { deploymentName, buildId } = workerDeploymentOptions.version;
      await currentIfNone(options.connection, namespace, workerDeploymentOptions.version, identity).catch(
        (err: unknown) =>
          console.warn(
            `deputy worker: ${deploymentName} has no current version and this one (${buildId}) could not become it (${(err as Error).message}); new runs wait until one is: .deputy/bin/temporal worker deployment set-current-version --deployment-name ${deploymentName} --build-id ${buildId} --yes`,
          ),
      );
    }
  };
  return new DeputyWorker(workers, release, whilePolling);
}

/** Problems with the server's search attributes: one line each, with the command that fixes it. */
export async function checkSearchAttributes(connection: NativeConnection, namespace: string): Promise<string[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  return DEPUTY_SEARCH_ATTRIBUTES.filter((key) => !(key.name in (customAttributes ?? {}))).map(
    (key) =>
      `search attribute ${key.name} is not registered; run \`npm run register-search-attributes\` or: temporal operator search-attribute create --namespace ${namespace} --name ${key.name} --type ${CLI_TYPE_NAMES[key.type]}`,
  );
}
