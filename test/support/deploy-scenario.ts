/**
 * Deploying a new Deputy under runs in flight, as an operator does it with the Temporal CLI: workers of version A
 * run a task tree and a conversation; version B, whose runs make other commands, is deployed and made current; the
 * tree ends on A, the conversation moves to B at its next quiet moment, new runs start on B, A drains and stops.
 * Without versioning, the same deploy breaks both runs with non-determinism errors. Run on the tests' dev server and
 * on the cluster (`npm run test:cluster`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { DeputyClient } from '../../src/client/client.js';
import type { DeputyConfig } from '../../src/config/schema.js';
import type { RunState } from '../../src/contract/run.js';
import type { ToolDefinition } from '../../src/contract/tools.js';
import { forTask, userSays } from '../../src/testing/script.js';
import type { ScriptedModelServer } from '../../src/testing/scripted-model.js';
import { createDeputyWorker } from '../../src/worker/factory.js';
import { delegateReply, PARENT_SCOPES } from './delegation.js';
import { deputyCli, makeCurrent, taskRecord } from './deploy-tools.js';

export { deputyCli, makeCurrent, taskRecord, temporalCli } from './deploy-tools.js';

/** What the scenario runs against. */
export interface DeployWorld {
  address: string;
  namespace?: string;
  connection: NativeConnection;
  client: Client;
  model: ScriptedModelServer;
  /** A fresh task queue: the deployment is named after it. */
  taskQueue: string;
  bundleA: NonNullable<WorkerOptions['workflowBundle']>;
  bundleB: NonNullable<WorkerOptions['workflowBundle']>;
  config: DeputyConfig;
  tools: ToolDefinition[];
  modelKey: string;
  say?: (line: string) => void;
}

/** Runs in flight when B is deployed: a task tree whose first child waits to answer, and a conversation. */
async function startInFlight(world: DeployWorld, deputy: DeputyClient, tag: string) {
  const task = `deploy tree ${tag}`;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const brief = (name: string) => ({ briefs: [{ task_name: name, message: `deploy child ${name} ${tag}` }] });
  world.model.add(
    { when: forTask(task, 0), reply: { toolCalls: [{ name: 'delegate', arguments: brief('first') }] } },
    // The second child starts after B is current: it still runs on A, its parent's version.
    { when: forTask(task, 1), reply: { toolCalls: [{ name: 'delegate', arguments: brief('second') }] } },
    { when: forTask(task, 2), reply: { text: `tree ${tag} done` } },
    {
      when: userSays(`deploy child first ${tag}`),
      reply: async () => {
        await released;
        return { text: 'first part' };
      },
    },
    { when: userSays(`deploy child second ${tag}`), reply: { text: 'second part' } },
    { when: userSays(`deploy chat ${tag}`), times: 5, reply: (r) => ({ text: `heard ${r.body.messages.length}` }) },
  );
  const tree = (
    await deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: `${tag}-tree-${world.taskQueue}` })
  ).workflowId;
  const chat = (
    await deputy.startRun(
      { task: `deploy chat ${tag}: hello`, mode: 'conversation', limits: { maxTurns: 10 } },
      { workflowId: `${tag}-chat-${world.taskQueue}` },
    )
  ).workflowId;
  const first = brief('first').briefs[0]!.message;
  await world.model.waitFor((rs) => rs.some((r) => r.body.messages.some((m) => m.content?.includes(first))));
  await until(async () => (await deputy.getState(chat)).status === 'waiting_for_user', 'the conversation waits');
  return { tree, chat, release };
}

/** A conversation whose background child is still working when B is current: it may not move until the child ends. */
async function busyConversation(world: DeployWorld, deputy: DeputyClient) {
  const task = 'deploy busy: start one in the background';
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  world.model.add(
    {
      when: forTask(task, 0),
      reply: delegateReply({ briefs: [{ task_name: 'bg', message: 'deploy bg child', wait: false }] }),
    },
    { when: forTask(task, 1), times: 3, reply: { text: 'noted' } },
    {
      when: userSays('deploy bg child'),
      reply: async () => {
        await released;
        return { text: 'background part' };
      },
    },
  );
  const id = `busy-${world.taskQueue}`;
  await deputy.startRun({ task, mode: 'conversation', scopes: PARENT_SCOPES }, { workflowId: id });
  await until(async () => {
    const state = await deputy.getState(id);
    return state.status === 'waiting_for_user' && state.delegations[0]?.status === 'running';
  }, 'the busy conversation waits with its child live');
  return { id, child: `${id}/bg-1`, release };
}

async function until(check: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(100);
  }
}

function worker(world: DeployWorld, bundle: DeployWorld['bundleA'], deployment?: { name: string; buildId: string }) {
  return createDeputyWorker({
    connection: world.connection,
    namespace: world.namespace,
    taskQueue: world.taskQueue,
    childTaskQueue: `${world.taskQueue}-bg`,
    config: world.config,
    tools: world.tools,
    model: { apiKey: world.modelKey, baseURL: world.model.url },
    client: world.client,
    workflowBundle: bundle,
    deployment,
    workerOptions: { shutdownGraceTime: '1 second' },
  });
}

/** The workers a scenario starts: each stops once, and whatever is still running stops when the scenario ends. */
function fleet(world: DeployWorld) {
  const stops: (() => Promise<void>)[] = [];
  return {
    async start(bundle: DeployWorld['bundleA'], deployment?: { name: string; buildId: string }) {
      const w = await worker(world, bundle, deployment);
      const running = w.run();
      let stopped: Promise<void> | undefined;
      const stop = () => (stopped ??= (async () => (w.shutdown(), await running))());
      stops.push(stop);
      return { stop };
    },
    async stopAll() {
      await Promise.allSettled(stops.map((stop) => stop()));
    },
  };
}

/** What the versioned deploy did to each run. */
export interface VersionedFindings {
  /** Runs whose histories version a recorded (for the replay gate). */
  recordedOnA: { workflowId: string; runId?: string }[];
  /** What `deputy versions --move` and, once the runs on a ended, `deputy versions` printed. */
  cli: { move: string; drained: string };
  /** A conversation with a live background child when b became current: its version then, and after. */
  busy: {
    whileChildLive: string | null;
    after: RunState['version'] | null;
    childBuildIds: string[];
    failures: string[];
  };
  /** The conversation's `run/moved` events, as a watch tells them. */
  watched: string[];
  tree: { status: string; buildIds: string[]; childBuildIds: string[]; failures: string[] };
  chatBefore: RunState;
  chatAfter: RunState;
  chatRuns: number;
  chatFailures: string[];
  fresh: { status: string; buildIds: string[] };
}

/** The deploy with Worker Versioning: A pinned, B current, the conversation moved, A drained. */
export async function versionedDeploy(world: DeployWorld): Promise<VersionedFindings> {
  const name = `deputy-${world.taskQueue}`;
  const deputy = new DeputyClient(world.client, { taskQueue: world.taskQueue });
  const workers = fleet(world);
  try {
    return await versionedSteps(world, deputy, workers, name);
  } finally {
    await workers.stopAll();
  }
}

async function versionedSteps(
  world: DeployWorld,
  deputy: DeputyClient,
  workers: ReturnType<typeof fleet>,
  name: string,
): Promise<VersionedFindings> {
  const say = world.say ?? (() => undefined);
  const a = await workers.start(world.bundleA, { name, buildId: 'a' });
  await makeCurrent(world, name, 'a');
  say(`version a of ${name} is current`);
  const { tree, chat, release } = await startInFlight(world, deputy, 'v');
  const chatBefore = await deputy.getState(chat);
  const busy = await busyConversation(world, deputy);
  const b = await workers.start(world.bundleB, { name, buildId: 'b' });
  await makeCurrent(world, name, 'b');
  say('version b is current; the tree and the conversation are on a');
  release();
  const treeResult = await deputy.result(tree);
  const children = (await deputy.getState(tree)).delegations.map((entry) => entry.childWorkflowId);
  // The operator asks waiting conversations to look: this one moves at once, as it waits with nothing in flight.
  const chatOnA = (await world.client.workflow.getHandle(chat).describe()).runId;
  let move = '';
  await until(async () => {
    move = (await deputyCli(world, ['versions', name, '--move'])).stdout;
    return move.includes('asked 2 waiting conversation(s) to move to b');
  }, 'deputy versions --move finds the conversation waiting on a').catch((err: Error) => {
    throw new Error(`${err.message}; it said:\n${move}`);
  });
  await until(async () => (await deputy.getState(chat)).version?.current === `${name}:b`, 'the conversation is on b');
  // The busy one was asked too, and stays: its child is live. Once the child ends, it takes its turn and then moves.
  await sleep(1000);
  const busyWhileLive = (await deputy.getState(busy.id)).version?.current ?? null;
  busy.release();
  await until(async () => (await deputy.getState(busy.id)).version?.current === `${name}:b`, 'the busy one moves');
  await deputy.sendMessage(chat, `deploy chat v: again`);
  await until(
    async () => (await deputy.getState(chat)).session.filter((e) => e.type === 'message/assistant').length === 2,
    'the conversation answers on b',
  );
  const chatAfter = await deputy.getState(chat);
  const fresh = await deputy.startRun({ task: 'deploy chat v: a new run' }, { workflowId: `v-new-${world.taskQueue}` });
  const freshResult = await deputy.result(fresh.workflowId);
  say('the tree ended on a, the conversation moved to b, a new run ran on b; a drains and stops');
  let drained = '';
  await until(async () => {
    drained = (await deputyCli(world, ['versions', name])).stdout;
    return drained.includes('a: no open run is pinned to it; its workers may stop');
  }, 'deputy versions says a is drained');
  await a.stop();
  await deputy.endConversation(chat);
  await deputy.result(chat);
  const busyAfter = await deputy.getState(busy.id);
  await deputy.endConversation(busy.id);
  await deputy.result(busy.id);
  const busyRecords = [await taskRecord(world.client, busy.child), ...(await chatRunRecords(world.client, busy.id))];
  const moves: string[] = [];
  for await (const event of deputy.watch(chat)) {
    if (event.type === 'run/moved') moves.push(`${event.from} → ${event.to}`);
  }
  await b.stop();
  const childRecords = await Promise.all(children.map((id) => taskRecord(world.client, id)));
  const treeRecord = await taskRecord(world.client, tree);
  const chatRecords = await chatRunRecords(world.client, chat);
  return {
    recordedOnA: [...[tree, ...children].map((workflowId) => ({ workflowId })), { workflowId: chat, runId: chatOnA }],
    cli: { move, drained },
    busy: {
      whileChildLive: busyWhileLive,
      after: busyAfter.version ?? null,
      childBuildIds: busyRecords[0]!.buildIds,
      failures: busyRecords.flatMap((r) => r.failures),
    },
    watched: moves,
    tree: {
      status: treeResult.status,
      buildIds: treeRecord.buildIds,
      childBuildIds: [...new Set(childRecords.flatMap((r) => r.buildIds))],
      failures: [...treeRecord.failures, ...childRecords.flatMap((r) => r.failures)],
    },
    chatBefore,
    chatAfter,
    chatRuns: chatRecords.length,
    chatFailures: chatRecords.flatMap((r) => r.failures),
    fresh: { status: freshResult.status, buildIds: (await taskRecord(world.client, fresh.workflowId)).buildIds },
  };
}

/** Every run of a conversation's chain: their task records, oldest first. */
async function chatRunRecords(client: Client, workflowId: string) {
  const runs: { runId: string; start: number }[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
    runs.push({ runId: info.runId, start: info.startTime.getTime() });
  }
  runs.sort((x, y) => x.start - y.start);
  return Promise.all(runs.map(({ runId }) => taskRecord(client, workflowId, runId)));
}

/** The same deploy without versioning: B's workers take A's runs and cannot replay them. */
export async function unversionedDeploy(world: DeployWorld): Promise<{ tree: string[]; chat: string[] }> {
  const deputy = new DeputyClient(world.client, { taskQueue: world.taskQueue });
  const workers = fleet(world);
  try {
    return await unversionedSteps(world, deputy, workers);
  } finally {
    await workers.stopAll();
  }
}

async function unversionedSteps(world: DeployWorld, deputy: DeputyClient, workers: ReturnType<typeof fleet>) {
  const a = await workers.start(world.bundleA);
  const { tree, chat, release } = await startInFlight(world, deputy, 'u');
  await a.stop();
  const b = await workers.start(world.bundleB);
  release();
  // The update is never accepted: the run cannot get past its history on B.
  void deputy.sendMessage(chat, 'deploy chat u: again').catch(() => undefined);
  // The tree's parent waits on its child, so the child is the run of the tree that B's worker replays first.
  const child = `${tree}/first-1`;
  const failed = async (id: string) => (await taskRecord(world.client, id)).failures;
  await until(async () => (await failed(child)).length > 0 && (await failed(chat)).length > 0, 'both runs fail a task');
  const found = { tree: await failed(child), chat: await failed(chat) };
  await Promise.all([tree, chat].map((id) => world.client.workflow.getHandle(id).terminate('deploy test over')));
  await b.stop();
  return found;
}
