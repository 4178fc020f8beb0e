/**
 * `npm run worker`: runs Deputy's worker against `TEMPORAL_ADDRESS` until SIGINT or SIGTERM.
 * Invalid configuration stops it at start with one line per problem.
 */
import { NativeConnection } from '@temporalio/worker';
import { loadConfig, readEnv } from './config.js';
import { ConfigError } from './errors.js';
import { checkSearchAttributes, createDeputyWorker } from './worker-factory.js';

async function main(): Promise<void> {
  const env = readEnv();
  const config = loadConfig(env);
  const connection = await NativeConnection.connect({ address: env.temporalAddress });
  try {
    const missing = await checkSearchAttributes(connection, env.temporalNamespace);
    if (missing.length > 0) throw new ConfigError(missing, `Temporal namespace ${env.temporalNamespace}`);
    const worker = await createDeputyWorker({
      connection,
      namespace: env.temporalNamespace,
      taskQueue: env.taskQueue,
      backgroundTaskQueue: env.backgroundTaskQueue,
      config,
      model: { apiKey: env.openaiApiKey, baseURL: env.openaiBaseUrl },
    });
    console.log(
      `deputy worker: task queues ${env.taskQueue} and ${env.backgroundTaskQueue} on ${env.temporalAddress} (namespace ${env.temporalNamespace}), model ${config.model}, delegation ${config.delegation.enabled ? 'on' : 'off'}`,
    );
    await worker.run(); // returns after SIGINT/SIGTERM once in-flight tasks are done
  } finally {
    await connection.close();
  }
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(`deputy worker: ${err.message}`);
  } else {
    console.error('deputy worker:', err);
  }
  process.exit(1);
});
