/** Profiling aid: records one benchmark tree on each side, then replays each side's histories PASSES times. */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { builtinTools } from '../activities/builtin-tools.js';
import { DeputyClient } from '../src/client/client.js';
import { parseConfig } from '../src/config/load.js';
import { ConfigStore } from '../src/config/store.js';
import { startDevServer } from '../src/testing/dev-server.js';
import { fetchPageTool } from '../src/testing/pages.js';
import { ScriptedModelServer } from '../src/testing/scripted-model.js';
import { bundleDeputyWorkflows, createDeputyWorker, createOpenAIClient } from '../src/worker/factory.js';
import { createBaselineActivities } from './baseline/activities.js';
import { bundleBaselineWorkflows } from './baseline/bundle.js';
import { benchConfig, benchRules, TREE_BRIEFS } from './script.js';

Runtime.install({ logger: new DefaultLogger('WARN') });
const PASSES = Number(process.env.PASSES ?? 40);
const SIDE = process.env.SIDE ?? 'deputy';

const server = await startDevServer();
const model = await ScriptedModelServer.start(benchRules(), { quiet: true });
const client = new Client({ connection: await Connection.connect({ address: server.address }) });
const queue = `rc-${randomUUID().slice(0, 8)}`;
const connection = await NativeConnection.connect({ address: server.address });
const modelOptions = { apiKey: 'k', baseURL: model.url };
let root: string;
let bundle;
if (SIDE === 'deputy') {
  bundle = await bundleDeputyWorkflows();
  const worker = await createDeputyWorker({
    connection,
    taskQueue: queue,
    childTaskQueue: `${queue}-bg`,
    config: new ConfigStore(parseConfig(benchConfig(true))),
    model: modelOptions,
    tools: [...builtinTools(), fetchPageTool],
    workflowBundle: bundle,
  });
  const deputy = new DeputyClient(client, { taskQueue: queue });
  root = `tree-${queue}`;
  await worker.runUntil(async () => {
    await deputy.startRun(
      { task: 'tree-run 1', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
      { workflowId: root },
    );
    await deputy.result(root);
  });
} else {
  bundle = await bundleBaselineWorkflows();
  const worker = await Worker.create({
    connection,
    taskQueue: queue,
    activities: createBaselineActivities(createOpenAIClient(modelOptions)),
    workflowBundle: bundle,
  });
  root = `base-${queue}`;
  await worker.runUntil(
    client.workflow.execute('baselineTree', { taskQueue: queue, workflowId: root, args: [root, TREE_BRIEFS] }),
  );
}
const ids = [root];
const histories: {
  workflowId: string;
  history: Awaited<ReturnType<ReturnType<typeof client.workflow.getHandle>['fetchHistory']>>;
}[] = [];
for (let i = 0; i < ids.length; i++) {
  const history = await client.workflow.getHandle(ids[i]!).fetchHistory();
  for (const e of history.events ?? []) {
    const id = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
    if (id) ids.push(id);
  }
  histories.push({ workflowId: ids[i]!, history });
}
if (process.env.COUNT) {
  const { temporal } = (await import('@temporalio/proto')).default;
  for (const { workflowId, history } of histories) {
    const bytes = (history.events ?? []).reduce(
      (n, e) => n + temporal.api.history.v1.HistoryEvent.encode(e).finish().length,
      0,
    );
    console.log(`${SIDE} ${workflowId}: ${history.events?.length ?? 0} events, ${bytes} bytes`);
  }
  const counts = new Map<string, number>();
  for (const { history } of histories)
    for (const e of history.events ?? []) counts.set(String(e.eventType), (counts.get(String(e.eventType)) ?? 0) + 1);
  console.log(
    SIDE,
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k}:${v}`)
      .join(' '),
  );
}
const set = Array.from({ length: PASSES }, () => histories).flat();
if (process.env.PROMISES) {
  // How many promises workflow code creates in one replay of the tree (the SDK captures a stack for each).
  const { promiseHooks } = await import('node:v8');
  const stacks = new Map<string, number>();
  let count = 0;
  const stop = promiseHooks.onInit((promise: Promise<unknown>) => {
    if (promise.constructor === Promise) return;
    count++;
    if (process.env.PROMISES === 'stacks') {
      const stack = (new Error().stack ?? '')
        .split('\n')
        .slice(2, Number(process.env.DEPTH ?? 6))
        .join(' | ');
      stacks.set(stack, (stacks.get(stack) ?? 0) + 1);
    }
  }) as () => void;
  for await (const r of Worker.runReplayHistories({ workflowBundle: bundle, replayName: 'p' }, histories))
    if (r.error) throw r.error;
  stop();
  console.log(`${SIDE}: ${count} workflow promises in one replay of the tree`);
  for (const [stack, n] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 200)) console.log(n, stack);
}
for (const label of ['warm', 'measured']) {
  const t0 = performance.now();
  for await (const r of Worker.runReplayHistories({ workflowBundle: bundle, replayName: 'p' }, set))
    if (r.error) throw r.error;
  console.log(
    `${SIDE} ${label}: ${set.length} histories in ${Math.round(performance.now() - t0)} ms: ${((performance.now() - t0) / PASSES).toFixed(2)} ms a tree`,
  );
}
await model.close();
await server.env.teardown();
process.exit(0);
