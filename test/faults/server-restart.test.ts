/**
 * Server restarted: a dev server persisted to SQLite (`--db-filename`) is stopped in the middle of delegating runs
 * and started again on the same port; the worker and the client reconnect and every run completes.
 */
import { mkdtempSync } from 'node:fs';
import { freePort } from '../../src/testing/ports.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { DeputyClient } from '../../src/client/client.js';
import { parseConfig } from '../../src/config/schema.js';
import { startDevServer, type DevServer } from '../../src/testing/dev-server.js';
import { ScriptedModelServer } from '../../src/testing/scripted-model.js';
import { createDeputyWorker, type DeputyWorker } from '../../src/worker/factory.js';
import { TEST_API_KEY } from '../support/harness.js';
import { FAULT_CONFIG, sleep, TREE_SCOPES, treeOutput, treeRules, treeTask } from './support.js';

const RUNS = 8;
const RESTARTS = 2;

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});

describe('server restarted', () => {
  it(`R1.1 the dev server stops ${RESTARTS} times in the middle of ${RUNS} delegating runs; every run completes`, async () => {
    const dbFilename = join(mkdtempSync(join(tmpdir(), 'deputy-restart-')), 'temporal.db');
    const port = await freePort();
    let server: DevServer = await startDevServer({ dbFilename, port });
    cleanup.push(() => server.env.teardown());
    const model = await ScriptedModelServer.start(
      treeRules('restart', () => 150),
      { quiet: true },
    );
    cleanup.push(() => model.close());

    const address = `127.0.0.1:${port}`;
    const connection = await NativeConnection.connect({ address });
    const clientConnection = await Connection.connect({ address });
    const client = new Client({ connection: clientConnection });
    const taskQueue = `restart-${Date.now()}`;
    const worker: DeputyWorker = await createDeputyWorker({
      connection,
      taskQueue,
      childTaskQueue: `${taskQueue}-bg`,
      config: parseConfig(FAULT_CONFIG),
      model: { apiKey: TEST_API_KEY, baseURL: model.url },
      client,
      workflowBundle: { codePath: inject('workflowBundlePath') },
      workerOptions: { shutdownGraceTime: '1 second' },
    });
    const running = worker.run();
    cleanup.push(async () => {
      worker.shutdown();
      await running;
      await clientConnection.close();
      await connection.close();
    });
    const deputy = new DeputyClient(client, { taskQueue });

    const ids: string[] = [];
    for (let n = 1; n <= RUNS; n++) {
      const id = `restart-${n}-${Date.now()}`;
      await deputy.startRun({ task: treeTask('restart', n), scopes: TREE_SCOPES }, { workflowId: id });
      ids.push(id);
    }
    for (let restart = 1; restart <= RESTARTS; restart++) {
      // Stop the server while runs are mid-way: some children started, some model calls answered.
      await model.waitFor((requests) => requests.length >= restart * RUNS, 60_000);
      // Each run makes 6 model calls: the runs are mid-way, not done.
      expect(model.requests.length).toBeLessThan(RUNS * 6);
      await server.env.teardown();
      await sleep(1500);
      server = await startDevServer({ dbFilename, port });
    }

    const results = await Promise.all(ids.map((id) => deputy.result(id)));
    results.forEach((result, i) =>
      expect(result, ids[i]).toMatchObject({ status: 'completed', output: treeOutput(i + 1) }),
    );
  });
});
