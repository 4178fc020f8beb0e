/**
 * `npm run test:cluster` : Deputy against Temporal Server on PostgreSQL with two `npm run worker`
 * processes behind one task queue. It brings the cluster up (scripts/cluster/harness.ts), starts both workers, runs the
 * demo's delegating task and checks the tree through visibility queries on Deputy's search attributes, then the
 * fail-over: a worker SIGKILLed while a tree runs (five times, alternating which), the other finishing every run with
 * the output of an undisturbed run; then one tenant's burst of runs beside two small tenants' against a provider held
 * to a few requests a second, on two fresh workers; last, a new version deployed under runs in flight, with Worker
 * Versioning and without. Everything it started is stopped, whether it passes or fails.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { DeputyClient } from '../src/client/client.js';
import { DEMO_SCRIPT, DEMO_TASK } from '../src/demo/script.js';
import { FLEET_MODEL_QUEUE, startCluster, type Cluster } from './cluster/harness.js';
import { workerStarter, writeClusterConfig } from './cluster/workers.js';
import { burstLine, burstProblems, fleetBurst } from '../src/testing/fleet-burst.js';
import { ScriptedModelServer } from '../src/testing/scripted-model.js';
import { forTask, toolResultCount, userSays } from '../src/testing/script.js';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig, readEnv } from '../src/config/load.js';
import { demoEvidence } from '../src/demo/evidence.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { bundleDeputyWorkflows } from '../src/worker/bundle.js';
import { checkDeploy } from './cluster/deploy.js';

const FAILOVERS = 5;
const SCOPES = ['tools.calc', 'tools.notes', 'run.delegate'];
const say = (line: string) => console.log(`[test:cluster +${Math.round(performance.now() / 1000)}s] ${line}`);

function check(ok: unknown, what: string): asserts ok {
  if (!ok) throw new Error(`FAILED: ${what}`);
  say(`ok: ${what}`);
}

/** What the checks share: the cluster's client, Deputy's client on the queue, the scripted model, the workers. */
interface Checks {
  client: Client;
  deputy: DeputyClient;
  model: ScriptedModelServer;
  queue: string;
  workers: ChildProcess[];
  startWorker: (n: number) => Promise<void>;
}

/** The demo's tree, undisturbed: its answer is the reference. */
async function checkTree({ client, deputy, queue }: Checks): Promise<void> {
  const reference = await deputy.startRun({ task: DEMO_TASK, scopes: SCOPES }, { workflowId: `cluster-ref-${queue}` });
  const expected = await deputy.result(reference.workflowId);
  check(expected.status === 'completed', `the demo's tree completes (${expected.output})`);
  let listed = 0;
  for (let i = 0; i < 50 && listed < 4; i++) {
    listed = 0;
    for await (const _ of client.workflow.list({ query: `DeputyRootId = "${reference.workflowId}"` })) listed++;
    if (listed < 4) await sleep(200);
  }
  check(listed === 4, `a visibility query on DeputyRootId lists the parent and its 3 children (${listed})`);
  let children = 0;
  for await (const _ of client.workflow.list({
    query: `DeputyParentId = "${reference.workflowId}" AND DeputyDepth = 1`,
  }))
    children++;
  check(children === 3, `DeputyParentId and DeputyDepth select the 3 children (${children})`);
}

/** Cancellation cascades: cancelling a parent mid-tree cancels its children (the server's parent-close policy). */
async function checkCancellation({ client, deputy, model, queue }: Checks): Promise<void> {
  const task = 'cluster: cancel me mid-tree';
  model.add(
    {
      when: forTask(task, 0),
      reply: {
        toolCalls: [
          { name: 'delegate', arguments: { briefs: [{ task_name: 'slow', message: 'slow part (cancel)' }] } },
        ],
      },
    },
    { when: userSays('slow part (cancel)'), reply: { hang: true } },
  );
  const id = `cluster-cancel-${queue}`;
  await deputy.startRun({ task, scopes: SCOPES }, { workflowId: id });
  await model.waitFor((requests) => requests.some(userSays('slow part (cancel)')), 30_000);
  await deputy.cancel(id);
  const result = await deputy.result(id);
  let childStatus = '';
  for (let i = 0; i < 100 && childStatus !== 'CANCELLED'; i++) {
    childStatus = (await client.workflow.getHandle(`${id}/slow-1`).describe()).status.name;
    if (childStatus !== 'CANCELLED') await sleep(100);
  }
  check(
    result.status === 'cancelled' && childStatus === 'CANCELLED',
    `cancelling the parent cancelled its child (${result.status}, ${childStatus})`,
  );
}

/** A conversation: messages are updates, answered in order; ending it is an update too. */
async function checkConversation({ deputy, model, queue }: Checks): Promise<void> {
  const task = 'cluster: a conversation';
  model.add(
    { when: forTask(task, 0), reply: { text: 'hello' } },
    { when: userSays('second message (cluster)'), reply: { text: 'second answer' } },
  );
  const id = `cluster-conversation-${queue}`;
  await deputy.startRun({ task, mode: 'conversation', scopes: SCOPES }, { workflowId: id });
  // Each message is sent once the previous answer is in: a message that arrives before the first model call is
  // read with the task in that same call (so the script would answer both with its first reply).
  const said = async (text: string) =>
    (await deputy.getState(id)).session.some((e) => e.type === 'message/assistant' && e.content === text);
  const until = async (text: string) => {
    for (let i = 0; i < 300 && !(await said(text)); i++) await sleep(100);
  };
  await until('hello');
  await deputy.sendMessage(id, 'second message (cluster)');
  await until('second answer');
  await deputy.endConversation(id, 'done');
  const result = await deputy.result(id);
  check(
    result.status === 'completed' && result.output === 'second answer',
    `a conversation takes a message by update and ends by update (${result.output})`,
  );
}

/** Continue-as-new: a 30-turn run goes on in new segments and ends with the answer its script gives. */
async function checkContinueAsNew({ client, deputy, model, queue }: Checks): Promise<void> {
  const task = 'cluster: a long run';
  const turns = 30;
  model.add(
    {
      when: (request) => forTask(task)(request) && toolResultCount(request) < turns,
      times: Infinity,
      reply: { toolCalls: [{ name: 'calculate', arguments: { operation: 'add', a: 1, b: 1 } }] },
    },
    { when: forTask(task, turns), times: Infinity, reply: { text: 'thirty turns done' } },
  );
  const id = `cluster-long-${queue}`;
  await deputy.startRun(
    { task, scopes: SCOPES, limits: { maxTurns: turns + 5, maxToolCalls: turns + 5 } },
    { workflowId: id },
  );
  const result = await deputy.result(id);
  let segments = 0;
  for (let i = 0; i < 50; i++) {
    segments = 0;
    for await (const _ of client.workflow.list({ query: `WorkflowId = "${id}"` })) segments++;
    if (segments > 1) break;
    await sleep(200);
  }
  check(
    result.status === 'completed' && result.output === 'thirty turns done' && segments > 1,
    `a ${turns}-turn run continued as new (${segments} segments) and completed (${result.output})`,
  );
}

/**
 * Fail-over: a worker killed mid-tree, five times (alternating which); the other finishes each run with the answer
 * of an undisturbed run of the same script.
 */
async function checkFailover({ deputy, model, queue, workers, startWorker }: Checks): Promise<void> {
  const tree = async (label: string, kill?: number) => {
    const task = `fail-over tree ${label}`;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const child = (name: string) => ({
      when: userSays(`${name} part of ${label}`),
      times: 3, // the call in flight at the kill is made again
      reply: async () => {
        await held;
        return { text: `${name} done` };
      },
    });
    model.add(
      {
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            {
              name: 'delegate',
              arguments: {
                briefs: [
                  { task_name: 'first', message: `first part of ${label}` },
                  { task_name: 'second', message: `second part of ${label}` },
                ],
              },
            },
          ],
        },
      },
      child('first'),
      child('second'),
      { when: forTask(task, 1), times: 2, reply: { text: 'combined: first done, second done' } },
    );
    const id = `cluster-${label}-${queue}`;
    await deputy.startRun({ task, scopes: SCOPES }, { workflowId: id });
    await model.waitFor(
      (requests) => ['first', 'second'].every((name) => requests.some(userSays(`${name} part of ${label}`))),
      60_000,
    );
    if (kill !== undefined) {
      process.kill(-workers[kill]!.pid!, 'SIGKILL');
      say(`killed worker ${kill} with ${label}'s children mid-call`);
    }
    release();
    const result = await deputy.result(id);
    if (kill !== undefined) await startWorker(kill);
    return result;
  };
  const undisturbed = await tree('reference');
  check(undisturbed.status === 'completed', `an undisturbed tree completes (${undisturbed.output})`);
  for (let i = 0; i < FAILOVERS; i++) {
    const result = await tree(`run-${i}`, i % 2);
    check(
      result.status === 'completed' && result.output === undisturbed.output,
      `fail-over ${i + 1}/${FAILOVERS}: the other worker finished the run with the same answer`,
    );
  }
}

/** The fleet's model queue's rate in the burst, in requests a second. */
const BURST_RATE = 4;

/**
 * One tenant's burst on the cluster: the workers so far stopped, two fresh ones whose model calls share a queue held
 * to `BURST_RATE` requests a second; tenant A's 40 runs beside B's and C's 5 each (src/testing/fleet-burst.ts).
 */
async function checkFairness(
  { client, model, queue, workers }: Checks,
  cluster: Cluster,
  configDir: string,
  evidence: string[],
) {
  for (const worker of workers.splice(0)) if (worker.pid) process.kill(-worker.pid, 'SIGKILL');
  const fleetQueue = `${queue}-fleet`;
  const modelCalls = { taskQueue: FLEET_MODEL_QUEUE, requestsPerSecond: BURST_RATE };
  const startWorker = workerStarter(
    cluster,
    model,
    fleetQueue,
    writeClusterConfig(configDir, evidence, modelCalls),
    workers,
  );
  await Promise.all([startWorker(0), startWorker(1)]);
  const figures = await fleetBurst(new DeputyClient(client, { taskQueue: fleetQueue }), model, `cluster-${fleetQueue}`);
  const problems = burstProblems(figures, BURST_RATE);
  check(problems.length === 0, `one tenant's burst: ${burstLine(figures)}${problems.map((p) => `; ${p}`).join('')}`);
}

/**
 * Delegation's evidence, recorded on the cluster the way the demo records its own (offline, its runs in the cluster's
 * records), for its workers to activate on.
 */
async function clusterEvidence(
  client: Client,
  cluster: Cluster,
  dir: string,
  stops: (() => unknown)[],
): Promise<string[]> {
  const native = await NativeConnection.connect({ address: cluster.address });
  stops.push(() => native.close());
  const config = loadConfig({ ...readEnv({}), configPath: join(PROJECT_ROOT, 'deputy.config.yaml') });
  const worker = { workflowBundle: await bundleDeputyWorkflows(), tracing: undefined };
  return demoEvidence({ client, connection: native, config, worker, dir, say });
}

async function main(): Promise<number> {
  let cluster: Cluster | undefined;
  let model: ScriptedModelServer | undefined;
  const workers: ChildProcess[] = [];
  let connection: Connection | undefined;
  let configDir: string | undefined;
  const stops: (() => unknown)[] = [];
  const stopAll = async () => {
    // Each step on its own: one that fails (a worker already gone) must not leave the others running.
    const attempt = async (step: () => unknown) => {
      try {
        await step();
      } catch {
        // already stopped
      }
    };
    for (const worker of workers) await attempt(() => worker.pid && process.kill(-worker.pid, 'SIGKILL'));
    await attempt(() => connection?.close());
    await attempt(() => model?.close());
    await attempt(() => cluster?.stop());
    for (const stop of stops) await attempt(stop);
    if (configDir) rmSync(configDir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void stopAll().then(() => process.exit(130)));
  try {
    let stopStarting: (() => Promise<void>) | undefined;
    stops.push(() => stopStarting?.());
    cluster = await startCluster(say, (stop) => (stopStarting = stop));
    model = await ScriptedModelServer.start(DEMO_SCRIPT, { quiet: true });
    const queue = `cluster-${Date.now()}`;
    configDir = mkdtempSync(join(tmpdir(), 'deputy-cluster-config-'));
    connection = await Connection.connect({ address: cluster.address });
    const client = new Client({ connection });
    const evidence = await clusterEvidence(client, cluster, configDir, stops);
    const startWorker = workerStarter(cluster, model, queue, writeClusterConfig(configDir, evidence), workers);
    await Promise.all([startWorker(0), startWorker(1)]);
    say('two workers ready on one task queue');
    const checks: Checks = {
      client,
      deputy: new DeputyClient(client, { taskQueue: queue }),
      model,
      queue,
      workers,
      startWorker,
    };
    for (const step of [checkTree, checkCancellation, checkConversation, checkContinueAsNew, checkFailover]) {
      await step(checks);
    }
    await checkFairness(checks, cluster, configDir, evidence);
    await checkDeploy(client, cluster, stops, { say, check });
    say(`PASSED on ${cluster.description}`);
    return 0;
  } catch (err) {
    console.error(`[test:cluster] ${(err as Error).message}`);
    return 1;
  } finally {
    await stopAll();
  }
}

void main().then((code) => process.exit(code));
