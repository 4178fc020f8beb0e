/**
 * Per-file test harness: a real Temporal client and worker on the shared dev server, a fresh task queue, and a
 * scripted model server that the real `openai` client talks to.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, type WorkerOptions } from '@temporalio/worker';
import { testLogger } from './logs.js';
import { afterAll, beforeAll, inject } from 'vitest';
import { DeputyClient } from '../../src/client/client.js';
import { parseConfig, type DeputyConfig } from '../../src/config/schema.js';
import type { ConfigStore } from '../../src/config/store.js';
import { ScriptedModelServer } from '../../src/testing/scripted-model.js';
import { type ScriptRule } from '../../src/testing/script.js';
import type { HookFunction } from '../../src/contract/hooks.js';
import type { ToolDefinition } from '../../src/contract/tools.js';
import type { McpOptions } from '../../activities/mcp.js';
import { createDeputyWorker, type DeputyWorker } from '../../src/worker/factory.js';

try {
  Runtime.install({ logger: testLogger() });
} catch {
  // Already installed in this process by an earlier test file.
}

/** API key the tests give the worker; it must never show up in history. */
export const TEST_API_KEY = 'sk-test-DO-NOT-LEAK-4f9c2e7a';

/**
 * A config for tests: a priced `test-model` ($1 in / $2 out per million tokens), generous limits, and the scopes the
 * tests' runs ask for (delegation among them) grantable to a caller.
 */
export function testConfig(overrides: Record<string, unknown> = {}): DeputyConfig {
  return parseConfig({
    model: 'test-model',
    grantableScopes: ['tools.calc', 'tools.notes', 'skills.write', 'run.delegate'],
    prices: { 'test-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } },
    limits: {
      maxTurns: 10,
      maxTokens: 100_000,
      maxCostUsd: 1,
      maxToolCalls: 20,
      maxDurationSeconds: 600,
      synthesisReserve: false,
    },
    ...overrides,
  });
}

/** A worker running in the background of a test. */
export interface RunningWorker {
  worker: DeputyWorker;
  /** Shuts the worker down and waits for it. */
  stop(): Promise<void>;
}

/** Everything a test file needs. */
export interface Harness {
  connection: NativeConnection;
  client: Client;
  deputy: DeputyClient;
  model: ScriptedModelServer;
  taskQueue: string;
  /** Starts a worker on this harness's task queue. */
  startWorker(options?: {
    config?: DeputyConfig | ConfigStore;
    tools?: ToolDefinition[];
    hookFunctions?: Record<string, HookFunction>;
    workerOptions?: Partial<WorkerOptions>;
    /** Give the worker no Temporal client (follow-ups then fail inside the worker). @default true */
    withClient?: boolean;
    /** A workflow bundle of the test's own (tracing needs its interceptors bundled). @default the shared bundle */
    workflowBundle?: WorkerOptions['workflowBundle'];
    /** Another model endpoint (a real server). @default the scripted model */
    modelBaseURL?: string;
    /** Where the config's MCP servers read `{ env }` values. @default this process's environment */
    mcp?: McpOptions;
  }): Promise<RunningWorker>;
  /** Stops every worker started so far (their in-flight activities are cancelled after the grace time). */
  stopWorkers(): Promise<void>;
  /** The options of the last `startWorker` call, to start an identical worker again. */
  lastWorkerOptions(): Parameters<Harness['startWorker']>[0];
  /** A fresh, readable workflow id. */
  id(prefix: string): string;
  close(): Promise<void>;
}

/** Connects to the shared dev server and starts a scripted model. */
export async function createHarness(
  rules: ScriptRule[] = [],
  /** A task queue of its own choosing (the docs' commands name `deputy`). @default a fresh one */
  options: { taskQueue?: string } = {},
): Promise<Harness> {
  const address = inject('temporalAddress');
  const workflowBundlePath = inject('workflowBundlePath');
  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  const client = new Client({ connection: clientConnection });
  const taskQueue = options.taskQueue ?? `test-${randomUUID()}`;
  const model = await ScriptedModelServer.start(rules, { quiet: true });
  const workers: RunningWorker[] = [];
  let lastOptions: Parameters<Harness['startWorker']>[0] = {};

  return {
    connection,
    client,
    deputy: new DeputyClient(client, { taskQueue }),
    model,
    taskQueue,
    async startWorker(options = {}) {
      lastOptions = options;
      const worker = await createDeputyWorker({
        connection,
        taskQueue,
        childTaskQueue: `${taskQueue}-bg`,
        config: options.config ?? testConfig(),
        model: { apiKey: TEST_API_KEY, baseURL: options.modelBaseURL ?? model.url },
        tools: options.tools,
        ...(options.mcp && { mcp: options.mcp }),
        hookFunctions: options.hookFunctions,
        ...(options.withClient !== false && { client }),
        workflowBundle: options.workflowBundle ?? { codePath: workflowBundlePath },
        workerOptions: { shutdownGraceTime: '1 second', ...options.workerOptions },
      });
      const running = worker.run();
      const handle: RunningWorker = {
        worker,
        async stop() {
          worker.shutdown();
          await running;
        },
      };
      workers.push(handle);
      return handle;
    },
    async stopWorkers() {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
    },
    lastWorkerOptions: () => lastOptions,
    id: (prefix) => `${prefix}-${randomUUID().slice(0, 8)}`,
    async close() {
      await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
      await model.close();
      await clientConnection.close();
      await connection.close();
    },
  };
}

/** Registers `beforeAll`/`afterAll` for a test file: a harness with one worker started (filled in before the tests run). */
export function useHarness(
  worker: Parameters<Harness['startWorker']>[0] | (() => Promise<Parameters<Harness['startWorker']>[0]>) = {},
): Harness {
  const harness = {} as Harness;
  beforeAll(async () => {
    Object.assign(harness, await createHarness());
    await harness.startWorker(typeof worker === 'function' ? await worker() : worker);
  });
  afterAll(async () => {
    await harness.close?.();
  });
  return harness;
}
