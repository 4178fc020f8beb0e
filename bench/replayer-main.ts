/**
 * A replayer in its own process, one per side, so neither side's replays run in a process warmed (or worn) by the
 * other scenarios or by the other side's code: it fetches its histories, loads its side's workflow bundle, replays
 * each set once to warm up, then replays a set on each request and answers with the milliseconds it took.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import type { HistoryRef, ParentMessage, ReplaySetName, WorkerMessage } from './ipc.js';

const [side, address, codePath, setsJson] = process.argv.slice(2) as [string, string, string, string];
Runtime.install({ logger: new DefaultLogger('WARN') });
const send = (message: WorkerMessage) => process.send?.(message);

type Histories = { workflowId: string; history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> }[];

/** Milliseconds one replayer takes for `passes` passes over `set`, loading the bundle first. */
async function replayMs(set: Histories, passes: number): Promise<number> {
  const repeated = Array.from({ length: passes }, () => set).flat();
  const t0 = performance.now();
  for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath }, replayName: side }, repeated)) {
    if (result.error) throw result.error;
  }
  return performance.now() - t0;
}

async function main(): Promise<void> {
  // A long run's history without compaction passes gRPC's default 4 MB message limit.
  const connection = await Connection.connect({
    address,
    channelArgs: { 'grpc.max_receive_message_length': 256 * 2 ** 20 },
  });
  const client = new Client({ connection });
  const refs = JSON.parse(setsJson) as Record<ReplaySetName, HistoryRef[]>;
  const sets = {} as Record<ReplaySetName, Histories>;
  for (const name of Object.keys(refs) as ReplaySetName[]) {
    sets[name] = await Promise.all(
      refs[name].map(async ({ workflowId, runId }) => ({
        workflowId,
        history: await client.workflow.getHandle(workflowId, runId).fetchHistory(),
      })),
    );
    await replayMs(sets[name], 1);
  }
  await connection.close();
  let queue = Promise.resolve();
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'stop') process.exit(0);
    if (message.type !== 'replay') return;
    const { set, passes } = message;
    queue = queue
      .then(async () => {
        send({ type: 'replayed', ms: await replayMs(sets[set], passes) });
      })
      .catch((err: unknown) => {
        console.error(`bench replayer (${side}):`, err);
        process.exit(1);
      });
  });
  send({ type: 'ready' });
}

main().catch((err: unknown) => {
  console.error(`bench replayer (${side}):`, err);
  process.exit(1);
});
