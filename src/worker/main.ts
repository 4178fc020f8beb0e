/**
 * `npm run worker`: runs Deputy's worker against `TEMPORAL_ADDRESS` until SIGINT or SIGTERM.
 * Invalid configuration stops it at start with one line per problem.
 */
import { Client } from '@temporalio/client';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { watch } from 'node:fs';
import { loadConfig, readEnv, type DeputyEnv } from '../config/load.js';
import { ConfigStore } from '../config/store.js';
import { ConfigError, DeputyError } from '../contract/errors.js';
import { connectTemporal } from '../client/connect.js';
import { MessageKeys } from '../ops/message-keys.js';
import { checkSearchAttributes, createDeputyWorker } from './factory.js';
import { deputyDataConverter } from '../codec/aes-gcm.js';
import { deputyTracing } from '../ops/tracing.js';
import { runtimeTelemetry } from '../ops/metrics.js';
import { checkModelEndpoint } from './start-checks.js';
import { modelQueues } from './model-queue.js';
import { builtinTools } from '../../activities/builtin-tools.js';
import { oneLineLogger } from './log.js';
import { scriptArgs } from '../ops/script-args.js';
import { deploymentFromEnv } from './deployment.js';

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/**
 * SIGUSR2 prints the worker's memory (after a full GC when node runs with --expose-gc), for checking leaks. The
 * Temporal runtime shuts down on SIGUSR2 by default; here only SIGINT, SIGTERM and SIGQUIT stop the worker.
 */
function reportMemoryOnSignal(): void {
  // DEPUTY_METRICS_ADDRESS serves the SDK's and Deputy's metrics for Prometheus.
  const telemetryOptions = runtimeTelemetry();
  Runtime.install({
    logger: oneLineLogger(),
    shutdownSignals: ['SIGINT', 'SIGTERM', 'SIGQUIT'],
    ...(telemetryOptions && { telemetryOptions }),
  });
  process.on('SIGUSR2', () => {
    (globalThis as { gc?: () => void }).gc?.();
    const memory = process.memoryUsage();
    console.log(
      `deputy worker: memory rss ${mib(memory.rss)} MiB, heap used ${mib(memory.heapUsed)} MiB of ${mib(memory.heapTotal)} MiB, external ${mib(memory.external)} MiB`,
    );
  });
}

async function main(): Promise<void> {
  scriptArgs({
    name: 'worker',
    does: "runs Deputy's worker against TEMPORAL_ADDRESS until Ctrl-C (SIGINT) or SIGTERM; SIGUSR2 prints its memory",
    environment: {
      TEMPORAL_ADDRESS: 'the Temporal server (default localhost:7233)',
      TEMPORAL_NAMESPACE: 'its namespace (default default)',
      DEPUTY_TASK_QUEUE: 'the task queue it polls (default deputy)',
      DEPUTY_CONFIG: 'the config file (without it: built-in defaults, delegation off)',
      DEPUTY_MESSAGE_KEYS: 'the key ring every worker signs messages between runs with (k1:<base64>)',
      OPENAI_BASE_URL: 'the model endpoint (OPENAI_API_KEY its key)',
      DEPUTY_CODEC_KEYS: 'keys that encrypt payloads in history',
      DEPUTY_DEPLOYMENT: 'the Worker Deployment it is a version of (runs stay on the version they start on)',
      DEPUTY_BUILD_ID: "that version's build id (default: Deputy's version and a digest of its workflow code)",
    },
  });
  reportMemoryOnSignal();
  // Every problem of the environment and the config at once: a person fixes them in one round, not one a start.
  const problems: ConfigError[] = [];
  const gather = <T>(read: () => T): T | undefined => {
    try {
      return read();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(err);
      return undefined;
    }
  };
  const env = gather(() => readEnv());
  // The tools a worker of `npm run worker` has: its config's problems with them show with the file's others.
  const tools = new Set(builtinTools().map((tool) => tool.name));
  const loaded = env && gather(() => loadConfig(env, tools));
  // A worker on a shared server signs with the deployment's key ring, never a key of its own.
  const messageKeys = gather(() => MessageKeys.fromEnv(process.env, { makeKeyFile: false }));
  const deployment = gather(() => deploymentFromEnv());
  const all = ConfigError.gathered(problems);
  if (all) throw all;
  if (!env || !loaded || !messageKeys) throw new Error('unreachable: every reading above either answered or failed');
  const config = new ConfigStore(loaded);
  watchConfig(config, env, tools);
  // The client connection first: it reports an address where nothing answers within seconds.
  const clientConnection = await connectTemporal(env.temporalAddress);
  const connection = await NativeConnection.connect({ address: env.temporalAddress });
  try {
    const missing = await checkSearchAttributes(connection, env.temporalNamespace);
    if (missing.length > 0) throw new ConfigError(missing, `Temporal namespace ${env.temporalNamespace}`);
    // With DEPUTY_CODEC_KEYS set, history holds ciphertext; the worker and its client read and write through it.
    const dataConverter = deputyDataConverter();
    const tracing = deputyTracing({ serviceName: process.env.OTEL_SERVICE_NAME ?? 'deputy-worker' });
    // Bundling the workflow code takes a while on a cold start; say so rather than sit silent.
    console.log(`deputy worker: connected to ${env.temporalAddress}; bundling workflow code …`);
    const endpoint = checkModelEndpoint(env.openaiBaseUrl, env.openaiApiKey);
    const worker = await createDeputyWorker({
      client: new Client({
        connection: clientConnection,
        namespace: env.temporalNamespace,
        ...(dataConverter && { dataConverter }),
        ...(tracing && { plugins: [tracing.plugin] }),
      }),
      tracing,
      ...(dataConverter && { workerOptions: { dataConverter } }),
      connection,
      namespace: env.temporalNamespace,
      taskQueue: env.taskQueue,
      childTaskQueue: env.childTaskQueue,
      config,
      model: { apiKey: env.openaiApiKey, baseURL: env.openaiBaseUrl },
      messageKeys,
      modelCallsOnly: env.modelCallsOnly,
      deployment,
    });
    // Where model calls go besides the run's own queues: the fleet's queue, each provider's.
    const calls = modelQueues(config.current).map(
      ({ field, taskQueue, requestsPerSecond }) =>
        `, ${field === 'modelCalls' ? 'model calls' : `${field.replace('providers.', 'provider ')}'s calls`} on ${taskQueue}${requestsPerSecond === undefined ? '' : `, ${requestsPerSecond} requests/s`}`,
    );
    // Ready only once it polls beside no worker that signs with another key.
    const running = worker.run();
    // Refused while polling: `running` rejects with why, once the workers have stopped.
    await worker.started.catch(() => running);
    console.log(
      `deputy worker: ${env.modelCallsOnly ? `model calls only${calls.join('')}` : `task queues ${env.taskQueue} and ${env.childTaskQueue}${calls.join('')}`} on ${env.temporalAddress} (namespace ${env.temporalNamespace}), model ${config.current.model}, delegation ${config.current.delegation.enabled ? 'on' : 'off'}${worker.version ? `, deployment version ${worker.version} (runs pinned to it)` : ''}`,
    );
    const problem = await endpoint;
    if (problem) console.error(`deputy worker: warning: ${problem}`);
    await running; // returns after SIGINT/SIGTERM once in-flight tasks are done
    await tracing?.shutdown();
  } finally {
    await connection.close();
    await clientConnection.close();
  }
}

/**
 * Reloads the config on SIGHUP or when its file changes. A config that fails validation is reported, one line
 * per problem, and the one in force stays.
 */
function watchConfig(store: ConfigStore, env: DeputyEnv, tools: ReadonlySet<string>): void {
  const reload = (why: string) => {
    try {
      store.set(loadConfig(env, tools));
      console.log(
        `deputy worker: configuration reloaded (${why}); presets: ${store.current.presets.map((p) => p.id).join(', ')}`,
      );
    } catch (err) {
      console.error(
        `deputy worker: reload (${why}) refused, keeping the configuration in force: ${(err as Error).message}`,
      );
    }
  };
  process.on('SIGHUP', () => reload('SIGHUP'));
  if (env.configPath) {
    let timer: NodeJS.Timeout | undefined;
    watch(env.configPath, () => {
      clearTimeout(timer);
      timer = setTimeout(() => reload(`${env.configPath} changed`), 200);
    }).unref();
  }
}

main().catch((err: unknown) => {
  if (err instanceof DeputyError) {
    console.error(`deputy worker: ${err.message}`);
  } else {
    console.error('deputy worker:', err);
  }
  process.exit(1);
});
