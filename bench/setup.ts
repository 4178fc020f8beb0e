/**
 * What every bench scenario shares: the repetitions (fewer with BENCH_QUICK=1), the targets, the dev server, the
 * scripted model, one worker process a side, and how a run is started and its tree's histories measured.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { DeputyClient } from '../src/client/client.js';
import { startDevServer } from '../src/testing/dev-server.js';
import { peerRules } from './peer.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { ScriptedModelServer } from '../src/testing/scripted-model.js';
import type { ParentMessage, ReplaySetName, WorkerMessage } from './ipc.js';
import { benchConfig, benchRules } from './script.js';
import { treeHistories } from './trees.js';
import { ServerActions } from './actions.js';
import { freePort } from '../src/testing/ports.js';

export const QUICK = process.env.BENCH_QUICK === '1';
/** BENCH_ONLY=throughput,replay runs only those scenarios (for profiling; results are not written). */
export const ONLY = process.env.BENCH_ONLY?.split(',');
export const wanted = (scenario: string) => !ONLY || ONLY.includes(scenario);
/** The targets, each a ratio against the baseline measured in the same run. */
export const TARGETS = {
  overhead: 1.15,
  throughput: 0.9,
  rss: 1.5,
  treeBytes: 2,
  perTurnBytes: 8 * 1024,
  growthFlat: 1.25,
  /** Replaying a delegating tree: plain `async`/`await` workflow code is worth a slower replay than bare Temporal's. */
  replayTree: 1.5,
  /** A watched tree costs its worker at most this much more CPU than an unwatched one. */
  watchCpu: 1.1,
  /** Billable actions of a delegating tree against the bare tree's. */
  treeActions: 1.3,
  /** Heartbeats the server records for one streamed model call of STREAMED_CALL_SECONDS. */
  streamedCallHeartbeats: 10,
};
/** HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT: fetch only a history's last event. */
export const CLOSE_EVENT = 2;
export const OVERHEAD_RUNS = QUICK ? 3 : 15;
export const WIDE_RUNS = QUICK ? 1 : 5;
export const WATCH_RUNS = QUICK ? 2 : 7;
/** Paired rounds of the throughput scenario, after a warm-up round per side. */
export const THROUGHPUT_ROUNDS = QUICK ? 2 : 6;
export const THROUGHPUT_RUNS = 40;
export const GROWTH_TURNS = QUICK ? [10, 20] : [50, 100, 200, 400];
export const REPLAY_TURNS = QUICK ? 20 : 200;
export const REPLAY_REPS = QUICK ? 2 : 15;
/**
 * Fresh replayer processes, one a side, each pair taking its share of the long run's pairs and all of the tree's: a
 * process's own luck (how its code was compiled, where its heap landed) lasts its whole life, so the tree's figure is
 * the median over several lives, not one.
 */
export const REPLAYER_LIVES = QUICK ? 1 : 3;
/**
 * The tree's histories are replayed this many times in one replayer, and the time divided: what a worker pays per
 * replayed tree, with the replayer's own start (loading the workflow bundle) spread over the passes.
 */
export const REPLAY_TREE_PASSES = QUICK ? 3 : 10;

Runtime.install({ logger: new DefaultLogger('WARN') });

export const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
export const log = (line: string) => console.log(`[bench +${Math.round(performance.now() / 1000)}s] ${line}`);

/** A benchmark worker process (bench/worker-main.ts). */
export class BenchWorker {
  private waiting: ((message: WorkerMessage) => void)[] = [];
  private readonly exited: Promise<never>;
  private constructor(private readonly child: ChildProcess) {
    child.on('message', (message: WorkerMessage) => this.waiting.shift()?.(message));
    this.exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`bench process ${child.spawnargs.join(' ')} exited with ${code}`))),
    );
    this.exited.catch(() => undefined);
  }

  static async start(
    side: 'deputy' | 'baseline',
    args: string[],
    script: 'worker-main.ts' | 'replayer-main.ts' = 'worker-main.ts',
  ): Promise<BenchWorker> {
    const child = fork(join(PROJECT_ROOT, 'bench', script), [side, ...args], {
      // BENCH_PROFILE=1: each worker writes a CPU profile to bench/profiles/ when it stops.
      execArgv: [
        '--import',
        'tsx',
        ...(process.env.BENCH_PROFILE === '1'
          ? ['--cpu-prof', `--cpu-prof-dir=${join(PROJECT_ROOT, 'bench', 'profiles')}`]
          : []),
      ],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const worker = new BenchWorker(child);
    await worker.reply();
    return worker;
  }

  /** The process's next message; it failing instead is an error, not a wait without end. */
  private reply(): Promise<WorkerMessage> {
    return Promise.race([this.next(), this.exited]);
  }

  private next(): Promise<WorkerMessage> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  send(message: ParentMessage): void {
    this.child.send(message);
  }

  async peakRss(): Promise<number> {
    const reply = this.next();
    this.send({ type: 'peak' });
    const message = await reply;
    return message.type === 'peak' ? message.rss : NaN;
  }

  /** The worker process's CPU time so far (user + system), in microseconds. */
  async cpuMicros(): Promise<number> {
    const reply = this.next();
    this.send({ type: 'cpu' });
    const message = await reply;
    return message.type === 'cpu' ? message.micros : NaN;
  }

  /** Milliseconds the replayer process took to replay its `set` `passes` times in one replayer. */
  async replay(set: ReplaySetName, passes: number): Promise<number> {
    const reply = this.reply();
    this.send({ type: 'replay', set, passes });
    const message = await reply;
    return message.type === 'replayed' ? message.ms : NaN;
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.send({ type: 'stop' });
    await exited;
  }
}

export interface TreeSize {
  workflows: number;
  events: number;
  bytes: number;
}

/** Ids of a workflow and all its descendants, found through their histories' child-started events. */
export async function treeIds(client: Client, root: string): Promise<string[]> {
  return (await treeHistories(client, root)).map(({ workflowId }) => workflowId);
}

/** Events and bytes of a whole tree's histories. */
export async function treeSize(client: Client, workflowId: string): Promise<TreeSize> {
  const descriptions = await Promise.all(
    (await treeIds(client, workflowId)).map((id) => client.workflow.getHandle(id).describe()),
  );
  return {
    workflows: descriptions.length,
    events: descriptions.reduce((sum, d) => sum + d.historyLength, 0),
    bytes: descriptions.reduce((sum, d) => sum + (d.historySize ?? 0), 0),
  };
}

/** Every continue-as-new segment of a run, followed from its first run: events and bytes summed. */
export async function segmentsSize(
  client: Client,
  workflowId: string,
  firstRunId: string,
): Promise<TreeSize & { runIds: string[] }> {
  const size = { workflows: 0, events: 0, bytes: 0, runIds: [] as string[] };
  for (let runId: string | undefined = firstRunId; runId;) {
    const description = await client.workflow.getHandle(workflowId, runId).describe();
    // Only the close event: it names the next segment when the run continued as new.
    const reply: Awaited<ReturnType<typeof client.workflowService.getWorkflowExecutionHistory>> =
      await client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId, runId },
        historyEventFilterType: CLOSE_EVENT,
      });
    size.workflows += 1;
    size.events += description.historyLength;
    size.bytes += description.historySize ?? 0;
    size.runIds.push(runId);
    runId =
      reply.history?.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return size;
}

/** Runs one side's workflow to its end: Deputy's through its client (checked answer), the baseline's directly. */
export function runners(client: Client, deputy: DeputyClient, baselineQueue: string) {
  const runDeputy = async (task: string, workflowId: string, output?: string) => {
    const handle = await deputy.startRun(
      { task, scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
      { workflowId },
    );
    const result = await deputy.result(workflowId);
    if (result.status !== 'completed') throw new Error(`${workflowId} ended ${result.status}: ${result.error ?? ''}`);
    if (output !== undefined && result.output !== output)
      throw new Error(`${workflowId} answered ${JSON.stringify(result.output)}, not ${JSON.stringify(output)}`);
    return handle.firstExecutionRunId;
  };
  const runBaseline = async (workflowType: string, args: unknown[], workflowId: string) => {
    const handle = await client.workflow.start(workflowType, { taskQueue: baselineQueue, workflowId, args });
    return handle.result() as Promise<string>;
  };
  return { runDeputy, runBaseline };
}

/** The dev server, the scripted model, both workers, and what every scenario uses to run and measure. */
export async function openBench() {
  // The server's metrics carry its `action` counter: what Temporal Cloud would bill, heartbeats included.
  const metricsPort = await freePort();
  const server = await startDevServer({ metricsPort });
  // The peer's rules are specific to its tasks; the bench's last rule answers anything else.
  const model = await ScriptedModelServer.start([...peerRules(GROWTH_TURNS), ...benchRules()], { quiet: true });
  // Histories of long runs without compaction pass gRPC's default 4 MB message limit.
  const connection = await Connection.connect({
    address: server.address,
    channelArgs: { 'grpc.max_receive_message_length': 256 * 2 ** 20 },
  });
  const client = new Client({ connection });
  const suffix = randomUUID().slice(0, 8);
  const deputyQueue = `bench-deputy-${suffix}`;
  const baselineQueue = `bench-baseline-${suffix}`;
  const deputy = new DeputyClient(client, { taskQueue: deputyQueue });
  log(`dev server ${server.address}, scripted model ${model.url}`);
  const [deputyWorker, baselineWorker] = await Promise.all([
    BenchWorker.start('deputy', [server.address, deputyQueue, model.url, JSON.stringify(benchConfig(true))]),
    BenchWorker.start('baseline', [server.address, baselineQueue, model.url, JSON.stringify(benchConfig(true))]),
  ]);
  log('workers ready');
  return {
    server,
    model,
    connection,
    client,
    suffix,
    deputyQueue,
    baselineQueue,
    deputy,
    deputyWorker,
    baselineWorker,
    ...runners(client, deputy, baselineQueue),
    treeIds: (root: string) => treeIds(client, root),
    treeSize: (workflowId: string) => treeSize(client, workflowId),
    segmentsSize: (workflowId: string, firstRunId: string) => segmentsSize(client, workflowId, firstRunId),
    /** The long runs of the growth scenario, replayed by the replay scenario. */
    growthIds: {} as Record<string, { workflowId: string; firstRunId: string }>,
    actions: new ServerActions(`http://127.0.0.1:${metricsPort}/metrics`),
  };
}
export type Bench = Awaited<ReturnType<typeof openBench>>;
