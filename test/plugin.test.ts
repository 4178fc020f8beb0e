/**
 * A service that already runs a Temporal Worker — its own workflows and activities — adds Deputy with the plugin
 * (`deputy/worker`'s `deputyPlugin`, built on `@temporalio/plugin`), and both keep working on its one task queue.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RunState } from '../src/contract/run.js';
import { forTask, userSays } from '../src/testing/script.js';
import { deputyPlugin } from '../src/worker/index.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { createHarness, TEST_API_KEY, type Harness } from './support/harness.js';

let h: Harness;
let worker: Worker;
let running: Promise<void>;

beforeAll(async () => {
  h = await createHarness();
  // The service's worker as it was, plus one line: the plugin. Children run on the same queue.
  worker = await Worker.create({
    connection: h.connection,
    taskQueue: h.taskQueue,
    workflowsPath: fileURLToPath(new URL('./support/service-workflows.ts', import.meta.url)),
    activities: { greet: async (name: string) => `hello, ${name}` },
    plugins: [
      deputyPlugin({
        config: delegationConfig(),
        model: { apiKey: TEST_API_KEY, baseURL: h.model.url },
        client: h.client,
        childTaskQueue: h.taskQueue,
        tools: DELEGATION_TOOLS,
      }),
    ],
  });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await h?.close();
});

describe('deputy/worker plugin', () => {
  it("a service's own Worker runs a delegating agentRun beside its own workflows and activities", async () => {
    const task = 'plugin: delegate one look-up';
    h.model.add(
      { name: 'plugin child', when: userSays('plugin child'), reply: { text: 'child answered' } },
      { when: forTask(task, 0), reply: delegateReply({ briefs: [{ task_name: 'look', message: 'plugin child' }] }) },
      { when: forTask(task, 1), reply: { text: 'parent answered' } },
    );
    const run = await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: h.id('plugin') });
    expect(await h.deputy.result(run.workflowId)).toMatchObject({ status: 'completed', output: 'parent answered' });
    const state = RunState.parse(await h.deputy.getState(run.workflowId));
    expect(state.delegations.map((d) => [d.taskName, d.status])).toEqual([['look', 'completed']]);

    const greeting = await h.client.workflow.execute<(name: string) => Promise<string>>('greeting', {
      taskQueue: h.taskQueue,
      workflowId: h.id('greeting'),
      args: ['Ada'],
    });
    expect(greeting).toBe('hello, Ada');
  });

  it("50.9 children on the Worker's own queue: one warning at start that says what it costs and what to do", () => {
    const warned: unknown[] = [];
    const spy = vi.spyOn(console, 'warn').mockImplementation((line: unknown) => void warned.push(line));
    const plugin = (childTaskQueue: string) =>
      deputyPlugin({
        config: delegationConfig(),
        model: { apiKey: TEST_API_KEY, baseURL: h.model.url },
        client: h.client,
        childTaskQueue,
        tools: DELEGATION_TOOLS,
      });
    try {
      plugin('orders').configureWorker({ taskQueue: 'orders' });
      plugin('orders-children').configureWorker({ taskQueue: 'orders' });
    } finally {
      spy.mockRestore();
    }
    expect(warned).toEqual([
      'deputy: warning: children run on orders, the queue root runs and conversations are served from, so a burst of ' +
        'children can hold up interactive turns; give children a queue of their own (DEPUTY_BACKGROUND_TASK_QUEUE, or ' +
        "the plugin's childTaskQueue) and a worker that polls it",
    ]);
  });

  it('R8.1 a Worker whose runs send their model calls to a queue it does not poll says so at start, and what to do, the fleet’s queue and a provider’s', () => {
    const warned: unknown[] = [];
    const spy = vi.spyOn(console, 'warn').mockImplementation((line: unknown) => void warned.push(line));
    const provider = { baseUrl: h.model.url, models: ['test-model'], taskQueue: 'backup-calls' };
    const plugin = (taskQueue: string) =>
      deputyPlugin({
        config: { ...delegationConfig(), modelCalls: { taskQueue: 'model-calls' }, providers: { backup: provider } },
        model: { apiKey: TEST_API_KEY, baseURL: h.model.url },
        client: h.client,
        childTaskQueue: 'orders-children',
        tools: DELEGATION_TOOLS,
      }).configureWorker({ taskQueue });
    try {
      plugin('orders');
      plugin('model-calls');
    } finally {
      spy.mockRestore();
    }
    const unpolled = (queue: string, field: string) =>
      `deputy: warning: runs' model calls go to task queue ${queue} (${field} in the config), which this Worker ` +
      'does not poll; run `npm run worker` beside it (it polls that queue and sets its rate), or a Worker on ' +
      `${queue} with this plugin`;
    expect(warned).toEqual([
      unpolled('model-calls', 'modelCalls'),
      unpolled('backup-calls', 'providers.backup'),
      unpolled('backup-calls', 'providers.backup'),
    ]);
  });

  it('R6.10 deployment makes the Worker a pinned version of it, unless the Worker names its own; a Worker whose own deployment does not pin is told so', () => {
    const warned: unknown[] = [];
    const spy = vi.spyOn(console, 'warn').mockImplementation((line: unknown) => void warned.push(line));
    const plugin = (deployment?: { name: string; buildId: string }) =>
      deputyPlugin({
        config: delegationConfig(),
        model: { apiKey: TEST_API_KEY, baseURL: h.model.url },
        client: h.client,
        childTaskQueue: 'orders-children',
        tools: DELEGATION_TOOLS,
        deployment,
      });
    const own = {
      version: { deploymentName: 'orders', buildId: 'r7' },
      useWorkerVersioning: true as const,
      defaultVersioningBehavior: 'AUTO_UPGRADE' as const,
    };
    let configured;
    let unversioned;
    let theirs;
    try {
      configured = plugin({ name: 'orders', buildId: 'r8' }).configureWorker({ taskQueue: 'orders' });
      unversioned = plugin().configureWorker({ taskQueue: 'orders' });
      theirs = plugin({ name: 'orders', buildId: 'r8' }).configureWorker({
        taskQueue: 'orders',
        workerDeploymentOptions: own,
      });
    } finally {
      spy.mockRestore();
    }
    expect(configured.workerDeploymentOptions).toEqual({
      version: { deploymentName: 'orders', buildId: 'r8' },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    });
    expect(unversioned.workerDeploymentOptions).toBeUndefined();
    expect(theirs.workerDeploymentOptions).toEqual(own);
    expect(warned).toEqual([
      "deputy: this Worker's deployment runs workflows AUTO_UPGRADE; Deputy's runs must end on the version they start on: set workerDeploymentOptions.defaultVersioningBehavior to 'PINNED' (docs/versioning.md)",
    ]);
  });
});
