/**
 * A benchmark worker in its own process, so each side's memory is its own: `deputy` runs Deputy's worker,
 * `baseline` the bare Temporal one. Driven over IPC by bench/run.ts: it reports when it is ready, swaps Deputy's
 * configuration on request, and reports the peak RSS it sampled since the last reset.
 */
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { builtinTools } from '../activities/builtin-tools.js';
import { parseConfig } from '../src/config/schema.js';
import { ConfigStore } from '../src/config/store.js';
import { fetchPageTool } from '../src/testing/pages.js';
import { createDeputyWorker, createOpenAIClient } from '../src/worker/factory.js';
import { createBaselineActivities } from './baseline/activities.js';
import { bundleBaselineWorkflows } from './baseline/bundle.js';
import type { ParentMessage, WorkerMessage } from './ipc.js';

const [side, address, taskQueue, modelUrl, configJson] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
Runtime.install({ logger: new DefaultLogger('WARN') });
const send = (message: WorkerMessage) => process.send?.(message);

let peakRss = process.memoryUsage.rss();
setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 20).unref();

async function main(): Promise<void> {
  const connection = await NativeConnection.connect({ address });
  const model = { apiKey: 'bench-key', baseURL: modelUrl };
  const store = new ConfigStore(parseConfig(JSON.parse(configJson)));
  let run: Promise<void>;
  let shutdown: () => void;
  if (side === 'deputy') {
    const worker = await createDeputyWorker({
      connection,
      taskQueue,
      childTaskQueue: `${taskQueue}-bg`,
      config: store,
      model,
      tools: [...builtinTools(), fetchPageTool],
    });
    run = worker.run();
    shutdown = () => worker.shutdown();
  } else {
    const worker = await Worker.create({
      connection,
      taskQueue,
      activities: createBaselineActivities(createOpenAIClient(model)),
      workflowBundle: await bundleBaselineWorkflows(),
    });
    run = worker.run();
    shutdown = () => worker.shutdown();
  }
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'config') store.set(parseConfig(message.config));
    if (message.type === 'reset-peak') peakRss = process.memoryUsage.rss();
    if (message.type === 'peak') send({ type: 'peak', rss: peakRss });
    if (message.type === 'cpu') {
      const { user, system } = process.cpuUsage();
      send({ type: 'cpu', micros: user + system });
    }
    if (message.type === 'stop') shutdown();
  });
  send({ type: 'ready' });
  await run;
  await connection.close();
  process.exit(0);
}

main().catch((err: unknown) => {
  console.error(`bench worker (${side}):`, err);
  process.exit(1);
});
