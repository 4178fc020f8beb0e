/**
 * `npm run bench`: Deputy against bare Temporal on an embedded dev server, the scripted model answering at once.
 * Deputy and baseline runs alternate (A B A B …) so machine drift hits both sides; every figure is a median.
 * Writes bench/results.json and bench/results.md, and puts the table into docs/performance.md.
 *
 * BENCH_QUICK=1 runs every scenario with fewer repetitions and shorter runs (to check the harness, not to publish).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fork, type ChildProcess, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { format, resolveConfig } from 'prettier';
import { DeputyClient } from '../src/client/client.js';
import { startDevServer } from '../src/testing/dev-server.js';
import { benchPeer, peerRules } from './peer.js';
import { findTemporalCli, PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { ScriptedModelServer } from '../src/testing/scripted-model.js';
import { bundleDeputyWorkflows } from '../src/worker/bundle.js';
import { bundleBaselineWorkflows } from './baseline/bundle.js';
import { compressedBytes } from './compressed.js';
import type { HistoryRef, ParentMessage, ReplaySetName, WorkerMessage } from './ipc.js';
import { benchConfig, benchRules, growthScript, TREE_BRIEFS, WIDE_ROUNDS, WIDE_WIDTH } from './script.js';
import { renderTable, type ScenarioResult } from './report.js';
import { cpuMs, devServerPid } from './server-cpu.js';
import { median, treeHistories } from './trees.js';

const QUICK = process.env.BENCH_QUICK === '1';
/** BENCH_ONLY=throughput,replay runs only those scenarios (for profiling; results are not written). */
const ONLY = process.env.BENCH_ONLY?.split(',');
const wanted = (scenario: string) => !ONLY || ONLY.includes(scenario);
/** Issue 12's targets, each measured against the baseline in the same run. */
const TARGETS = {
  overhead: 1.15,
  throughput: 0.85,
  rss: 1.5,
  treeBytes: 2,
  perTurnBytes: 8 * 1024,
  growthFlat: 1.25,
  replayTree: 1.3,
  /** Issue 16: a watched tree costs its worker at most this much more CPU than an unwatched one. */
  watchCpu: 1.1,
};
/** HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT: fetch only a history's last event. */
const CLOSE_EVENT = 2;
const OVERHEAD_RUNS = QUICK ? 3 : 15;
const WIDE_RUNS = QUICK ? 1 : 5;
const WATCH_RUNS = QUICK ? 2 : 7;
/** Paired rounds of the throughput scenario, after a warm-up round per side. */
const THROUGHPUT_ROUNDS = QUICK ? 2 : 6;
const THROUGHPUT_RUNS = 40;
const GROWTH_TURNS = QUICK ? [10, 20] : [50, 100, 200, 400];
const REPLAY_TURNS = QUICK ? 20 : 200;
const REPLAY_REPS = QUICK ? 2 : 15;
/**
 * Fresh replayer processes, one a side, each pair taking its share of the long run's pairs and all of the tree's: a
 * process's own luck (how its code was compiled, where its heap landed) lasts its whole life, so the tree's figure is
 * the median over several lives, not one.
 */
const REPLAYER_LIVES = QUICK ? 1 : 3;
/**
 * The tree's histories are replayed this many times in one replayer, and the time divided: what a worker pays per
 * replayed tree, with the replayer's own start (loading the workflow bundle) spread over the passes.
 */
const REPLAY_TREE_PASSES = QUICK ? 3 : 10;

Runtime.install({ logger: new DefaultLogger('WARN') });

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
const log = (line: string) => console.log(`[bench +${Math.round(performance.now() / 1000)}s] ${line}`);

/** A benchmark worker process (bench/worker-main.ts). */
class BenchWorker {
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

interface TreeSize {
  workflows: number;
  events: number;
  bytes: number;
}

/** Ids of a workflow and all its descendants, found through their histories' child-started events. */
async function treeIds(client: Client, root: string): Promise<string[]> {
  return (await treeHistories(client, root)).map(({ workflowId }) => workflowId);
}

/** Events and bytes of a whole tree's histories. */
async function treeSize(client: Client, workflowId: string): Promise<TreeSize> {
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
async function segmentsSize(
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
function runners(client: Client, deputy: DeputyClient, baselineQueue: string) {
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
async function openBench() {
  const server = await startDevServer();
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
  };
}
type Bench = Awaited<ReturnType<typeof openBench>>;

/** 1. Delegation overhead: one parent, three children of one model call each, a final call. */
async function benchOverhead(bench: Bench): Promise<ScenarioResult[]> {
  const { suffix, runDeputy, runBaseline, treeSize } = bench;
  const out: ScenarioResult[] = [];
  log(`delegation overhead: ${OVERHEAD_RUNS} runs a side, alternating`);
  const deputyMs: number[] = [];
  const baselineMs: number[] = [];
  let lastDeputy = '';
  let lastBaseline = '';
  // One warm-up pair, not counted: the first runs pay for worker caches and connections.
  await runDeputy('tree-run warmup', `bench-tree-warmup-${suffix}`);
  await runBaseline('baselineTree', [`base-tree-warmup-${suffix}`, TREE_BRIEFS], `base-tree-warmup-${suffix}`);
  for (let i = 0; i < OVERHEAD_RUNS; i++) {
    lastDeputy = `bench-tree-${i}-${suffix}`;
    let t0 = performance.now();
    await runDeputy(`tree-run ${i}`, lastDeputy, 'tree done');
    deputyMs.push(performance.now() - t0);
    lastBaseline = `base-tree-${i}-${suffix}`;
    t0 = performance.now();
    await runBaseline('baselineTree', [lastBaseline, TREE_BRIEFS], lastBaseline);
    baselineMs.push(performance.now() - t0);
  }
  const [deputyTree, baselineTree] = await Promise.all([treeSize(lastDeputy), treeSize(lastBaseline)]);
  const ratio = median(deputyMs) / median(baselineMs);
  out.push({
    id: 'delegation-overhead',
    title: 'Delegation overhead: parent + 3 children, one model call each',
    runs: OVERHEAD_RUNS,
    deputy: { medianMs: round(median(deputyMs)), ...deputyTree },
    baseline: { medianMs: round(median(baselineMs)), ...baselineTree },
    ratio: round(ratio),
    target: { ratioAtMost: TARGETS.overhead },
    met: ratio <= TARGETS.overhead,
  });
  const bytesRatio = deputyTree.bytes / baselineTree.bytes;
  out.push({
    id: 'tree-history',
    title: 'Same tree: history of all 4 workflows',
    runs: 1,
    deputy: { ...deputyTree },
    baseline: { ...baselineTree },
    ratio: round(bytesRatio),
    target: { ratioAtMost: TARGETS.treeBytes },
    met: bytesRatio <= TARGETS.treeBytes,
  });
  out.push(await compressedTreeResult(bench, lastDeputy, lastBaseline));
  log(`  deputy ${round(median(deputyMs))} ms, baseline ${round(median(baselineMs))} ms, ratio ${round(ratio)}`);
  return out;
}

/** The same tree's history with the compressing codec on, against the bare tree's (which has nothing to compress). */
async function compressedTreeResult(bench: Bench, deputyRoot: string, baselineRoot: string): Promise<ScenarioResult> {
  const [deputy, baseline] = await Promise.all(
    [deputyRoot, baselineRoot].map(async (root) => compressedBytes(bench.client, await bench.treeIds(root))),
  );
  const ratio = deputy!.compressed / baseline!.plain;
  return {
    id: 'tree-history-compressed',
    title: 'Same tree, payloads compressed (DEPUTY_COMPRESS=1, off by default): events as recorded',
    runs: 1,
    deputy: { bytes: deputy!.compressed, uncompressedBytes: deputy!.plain },
    baseline: { bytes: baseline!.plain },
    ratio: round(ratio),
    target: null,
    met: null,
  };
}

/** 1b. A wide tree: one parent, 8 invocations of 3 children (24), a final call. */
async function benchWide({ suffix, runDeputy, runBaseline, treeSize }: Bench): Promise<ScenarioResult[]> {
  const out: ScenarioResult[] = [];
  log(`wide tree: ${WIDE_ROUNDS} x ${WIDE_WIDTH} children, ${WIDE_RUNS} runs a side, alternating`);
  const deputyMs: number[] = [];
  const baselineMs: number[] = [];
  let lastDeputy = '';
  let lastBaseline = '';
  for (let i = 0; i < WIDE_RUNS; i++) {
    lastDeputy = `bench-wide-${i}-${suffix}`;
    let t0 = performance.now();
    await runDeputy(`wide-run ${i}`, lastDeputy, 'wide done');
    deputyMs.push(performance.now() - t0);
    lastBaseline = `base-wide-${i}-${suffix}`;
    t0 = performance.now();
    await runBaseline('baselineWide', [lastBaseline, WIDE_ROUNDS, WIDE_WIDTH], lastBaseline);
    baselineMs.push(performance.now() - t0);
  }
  const [deputyTree, baselineTree] = await Promise.all([treeSize(lastDeputy), treeSize(lastBaseline)]);
  out.push({
    id: 'wide-tree',
    title: `Wide tree: parent + ${WIDE_ROUNDS * WIDE_WIDTH} children in ${WIDE_ROUNDS} invocations of ${WIDE_WIDTH}`,
    runs: WIDE_RUNS,
    deputy: { medianMs: round(median(deputyMs)), ...deputyTree },
    baseline: { medianMs: round(median(baselineMs)), ...baselineTree },
    ratio: round(median(deputyMs) / median(baselineMs)),
    target: null,
    met: null,
  });
  log(
    `  deputy ${round(median(deputyMs))} ms ${deputyTree.bytes} bytes, baseline ${round(median(baselineMs))} ms ${baselineTree.bytes} bytes`,
  );
  return out;
}

/** Follows a run from its start, as a service that starts a run and follows it does: each child event's delay. */
async function watchFromStart(client: Client, deputy: DeputyClient, id: string, delays: number[]): Promise<number> {
  const started = () =>
    client.workflow
      .getHandle(id)
      .describe()
      .then(
        () => true,
        () => false,
      );
  while (!(await started())) await sleep(5);
  let events = 0;
  for await (const event of deputy.watch(id)) {
    events++;
    if (event.parent !== null) delays.push(Date.now() - Date.parse(event.at));
  }
  return events;
}

/** The watch scenario's two rows: worker CPU watched vs not, and the delay from a child's event to the watcher. */
function watchResults(
  wall: { watched: number[]; plain: number[] },
  cpu: { watched: number[]; plain: number[] },
  delays: number[],
  watchedEvents: number,
): ScenarioResult[] {
  const cpuRatio = median(cpu.watched) / median(cpu.plain);
  const p95 = [...delays].sort((a, b) => a - b)[Math.floor(delays.length * 0.95)] ?? NaN;
  log(
    `  wall ${round(median(wall.watched))} vs ${round(median(wall.plain))} ms, worker CPU ${round(median(cpu.watched))} vs ${round(median(cpu.plain))} ms (${round(cpuRatio)}), delay median ${round(median(delays))} ms p95 ${round(p95)} ms`,
  );
  return [
    {
      id: 'watch-cost',
      title: `Wide tree (${WIDE_ROUNDS * WIDE_WIDTH} children) watched from its start vs not watched`,
      runs: WATCH_RUNS,
      deputy: { medianMs: round(median(wall.watched)), workerCpuMs: round(median(cpu.watched)) },
      baseline: { medianMs: round(median(wall.plain)), workerCpuMs: round(median(cpu.plain)) },
      ratio: round(cpuRatio),
      target: { ratioAtMost: TARGETS.watchCpu },
      met: cpuRatio <= TARGETS.watchCpu,
    },
    {
      id: 'watch-delay',
      title: "Watched: from a child's event (server time) to the watcher",
      runs: WATCH_RUNS,
      deputy: { medianMs: round(median(delays)), p95Ms: round(p95), events: Math.round(watchedEvents / WATCH_RUNS) },
      baseline: null,
      ratio: round(median(wall.watched) / median(wall.plain)),
      target: null,
      met: null,
    },
  ];
}

/**
 * 1c. The wide tree (24 children) watched from its start vs not watched, alternating: wall time and the Deputy
 * worker's CPU time, and how long an event of a child takes to reach the watcher.
 */
async function benchWatch({ client, deputy, deputyWorker, suffix, runDeputy }: Bench): Promise<ScenarioResult[]> {
  log(`watched wide tree: ${WATCH_RUNS} runs a side, alternating`);
  const wall = { watched: [] as number[], plain: [] as number[] };
  const cpu = { watched: [] as number[], plain: [] as number[] };
  const delays: number[] = [];
  let watchedEvents = 0;
  for (let i = 0; i < WATCH_RUNS; i++) {
    for (const watched of [false, true]) {
      const id = `bench-watch-${watched ? 'on' : 'off'}-${i}-${suffix}`;
      const cpu0 = await deputyWorker.cpuMicros();
      const t0 = performance.now();
      const running = runDeputy(`wide-run w${i}`, id, 'wide done');
      const watching = watched ? watchFromStart(client, deputy, id, delays) : undefined;
      await running;
      const ms = performance.now() - t0;
      const used = (await deputyWorker.cpuMicros()) - cpu0;
      watchedEvents += (await watching) ?? 0;
      wall[watched ? 'watched' : 'plain'].push(ms);
      cpu[watched ? 'watched' : 'plain'].push(used / 1000);
    }
  }
  return watchResults(wall, cpu, delays, watchedEvents);
}

/** What one round of the throughput scenario measured on one side. */
interface Round {
  /** Runs a minute. */
  rate: number;
  /** The worker's peak RSS, bytes. */
  rss: number;
  /** CPU milliseconds the round cost the dev server and the side's worker. */
  serverCpuMs: number;
  workerCpuMs: number;
}

/** One round of the throughput scenario on one side: its rate, its worker's peak RSS, the CPU it cost. */
async function throughputRound(worker: BenchWorker, serverPid: number | undefined, runs: () => Promise<unknown>[]) {
  worker.send({ type: 'reset-peak' });
  const [server0, worker0] = [cpuMs(serverPid), await worker.cpuMicros()];
  const t0 = performance.now();
  await Promise.all(runs());
  const ms = performance.now() - t0;
  const measured: Round = {
    rate: (THROUGHPUT_RUNS * 60_000) / ms,
    rss: await worker.peakRss(),
    serverCpuMs: cpuMs(serverPid) - server0,
    workerCpuMs: ((await worker.cpuMicros()) - worker0) / 1000,
  };
  return measured;
}

/** A ratio row of the throughput scenario: Deputy's median against the baseline's. */
function throughputResult(
  id: string,
  title: string,
  deputy: Record<string, number>,
  baseline: Record<string, number>,
  ratio: number,
  target: ScenarioResult['target'],
  met: boolean,
): ScenarioResult {
  return { id, title, runs: THROUGHPUT_ROUNDS, deputy, baseline, ratio: round(ratio), target, met };
}

/**
 * 2. Throughput: 40 concurrent roots delegating two children each; runs a minute and worker peak RSS. A warm-up round
 * per side, then paired rounds, the side going first alternating; the figure is the median of the rounds' ratios, so a
 * slow moment of the machine weighs on one pair, not on one side. Before the long runs of history growth, which leave
 * the Deputy worker's heap large, so both workers start this scenario in the same state.
 */
async function benchThroughput({
  server,
  deputyWorker,
  baselineWorker,
  suffix,
  runDeputy,
  runBaseline,
}: Bench): Promise<ScenarioResult[]> {
  log(`throughput: ${THROUGHPUT_RUNS} concurrent runs, a warm-up and ${THROUGHPUT_ROUNDS} paired rounds`);
  const serverPid = devServerPid(server.address);
  const each = (run: (i: number) => Promise<unknown>) => () =>
    Array.from({ length: THROUGHPUT_RUNS }, (_, i) => run(i));
  const side = {
    deputy: (r: string) =>
      throughputRound(
        deputyWorker,
        serverPid,
        each((i) => runDeputy(`tp-run ${r}-${i}`, `bench-tp-${r}-${i}-${suffix}`)),
      ),
    baseline: (r: string) =>
      throughputRound(
        baselineWorker,
        serverPid,
        each((i) =>
          runBaseline(
            'baselineTree',
            [`base-tp-${r}-${i}-${suffix}`, TREE_BRIEFS.slice(0, 2)],
            `base-tp-${r}-${i}-${suffix}`,
          ),
        ),
      ),
  };
  await side.deputy('warm');
  await side.baseline('warm');
  const rounds = { deputy: [] as Round[], baseline: [] as Round[] };
  for (let r = 0; r < THROUGHPUT_ROUNDS; r++) {
    const order = r % 2 === 0 ? (['deputy', 'baseline'] as const) : (['baseline', 'deputy'] as const);
    for (const name of order) rounds[name].push(await side[name](String(r)));
    const [deputy, baseline] = [rounds.deputy.at(-1)!, rounds.baseline.at(-1)!];
    log(
      `  round ${r + 1} (${order[0]} first): deputy ${round(deputy.rate, 0)}/min, baseline ${round(baseline.rate, 0)}/min, ${round(deputy.rate / baseline.rate)}; ` +
        `server CPU a run ${round(deputy.serverCpuMs / THROUGHPUT_RUNS)} vs ${round(baseline.serverCpuMs / THROUGHPUT_RUNS)} ms, ` +
        `worker ${round(deputy.workerCpuMs / THROUGHPUT_RUNS)} vs ${round(baseline.workerCpuMs / THROUGHPUT_RUNS)} ms`,
    );
  }
  return throughputRows(rounds);
}

/** The throughput scenario's rows: the median of the rounds' ratios (with their spread), the CPU a run, peak RSS. */
function throughputRows(rounds: { deputy: Round[]; baseline: Round[] }): ScenarioResult[] {
  const ratios = rounds.deputy.map((deputy, r) => deputy.rate / rounds.baseline[r]!.rate);
  const ratio = median(ratios);
  const of = (side: Round[], key: keyof Round) => median(side.map((r) => r[key]));
  const rssRatio = of(rounds.deputy, 'rss') / of(rounds.baseline, 'rss');
  const mib = (side: Round[]) => ({ peakRssMiB: round(of(side, 'rss') / 2 ** 20, 1) });
  // CPU a run: what the side's rounds cost the dev server and the worker, over the runs they made.
  const perRun = (side: Round[], key: 'serverCpuMs' | 'workerCpuMs') =>
    round(side.reduce((n, r) => n + r[key], 0) / (side.length * THROUGHPUT_RUNS), 1);
  const cpu = (side: Round[]) => ({
    serverCpuMsPerRun: perRun(side, 'serverCpuMs'),
    workerCpuMsPerRun: perRun(side, 'workerCpuMs'),
  });
  return [
    throughputResult(
      'throughput',
      `Throughput: ${THROUGHPUT_RUNS} concurrent roots, 2 children each`,
      {
        runsPerMinute: round(of(rounds.deputy, 'rate'), 1),
        ratioMin: round(Math.min(...ratios)),
        ratioMax: round(Math.max(...ratios)),
        ...cpu(rounds.deputy),
      },
      { runsPerMinute: round(of(rounds.baseline, 'rate'), 1), ...cpu(rounds.baseline) },
      ratio,
      { ratioAtLeast: TARGETS.throughput },
      ratio >= TARGETS.throughput,
    ),
    throughputResult(
      'throughput-rss',
      'Same load: worker peak RSS',
      mib(rounds.deputy),
      mib(rounds.baseline),
      rssRatio,
      { ratioAtMost: TARGETS.rss },
      rssRatio <= TARGETS.rss,
    ),
  ];
}

/** 3. History growth: N turns of a 2 KB page, compaction on and off; its long runs are the replay scenario's. */
async function benchGrowth({
  deputyWorker,
  suffix,
  runDeputy,
  segmentsSize,
  growthIds,
}: Bench): Promise<ScenarioResult[]> {
  const out: ScenarioResult[] = [];
  const figures: Record<
    string,
    Record<number, { bytes: number; events: number; segments: number; bytesPerTurn: number }>
  > = { on: {}, off: {} };
  for (const turns of GROWTH_TURNS) {
    for (const compaction of ['on', 'off'] as const) {
      deputyWorker.send({ type: 'config', config: benchConfig(compaction === 'on', turns) });
      const workflowId = `bench-growth-${compaction}-${turns}-${suffix}`;
      growthScript.start(turns);
      const t0 = performance.now();
      const firstRunId = await runDeputy(`growth-run ${compaction} ${turns}`, workflowId, `read ${turns} pages`);
      const size = await segmentsSize(workflowId, firstRunId);
      figures[compaction]![turns] = {
        bytes: size.bytes,
        events: size.events,
        segments: size.workflows,
        bytesPerTurn: Math.round(size.bytes / turns),
      };
      growthIds[`${compaction}-${turns}`] = { workflowId, firstRunId };
      log(
        `history growth: ${turns} turns, compaction ${compaction}: ${size.bytes} bytes in ${size.workflows} segment(s), ${Math.round(size.bytes / turns)} bytes/turn (${Math.round(performance.now() - t0)} ms)`,
      );
    }
  }
  deputyWorker.send({ type: 'config', config: benchConfig(true) });
  const first = GROWTH_TURNS[0]!;
  const last = GROWTH_TURNS.at(-1)!;
  const ratio = figures.on![last]!.bytesPerTurn / figures.on![first]!.bytesPerTurn;
  const worst = Math.max(...GROWTH_TURNS.map((turns) => figures.on![turns]!.bytesPerTurn));
  out.push({
    id: 'history-growth',
    title: `History growth: bytes per turn, 2 KB tool result a turn, ${last} vs ${first} turns`,
    runs: 1,
    deputy: { compactionOn: figures.on, compactionOff: figures.off, worstBytesPerTurn: worst },
    baseline: null,
    ratio: round(ratio),
    target: { ratioAtMost: TARGETS.growthFlat, bytesPerTurnAtMost: TARGETS.perTurnBytes },
    met: ratio <= TARGETS.growthFlat && worst <= TARGETS.perTurnBytes,
  });
  return out;
}

/** 4. Replay: a long run's histories and a delegating tree's, against the baseline's. */
type ReplaySets = Record<ReplaySetName, HistoryRef[]>;

/** The histories the replay scenario replays: the long runs' segments and the overhead scenario's first trees. */
async function replayedHistories({ suffix, runBaseline, treeIds, segmentsSize, growthIds }: Bench) {
  const loopId = `base-loop-${REPLAY_TURNS}-${suffix}`;
  await runBaseline('baselineLoop', [loopId, REPLAY_TURNS], loopId);
  const deputyLongId = growthIds[`on-${REPLAY_TURNS}`] ?? growthIds[`on-${GROWTH_TURNS.at(-1)}`]!;
  const { runIds } = await segmentsSize(deputyLongId.workflowId, deputyLongId.firstRunId);
  const tree = async (root: string) => (await treeIds(root)).map((workflowId) => ({ workflowId }));
  const deputy: ReplaySets = {
    long: runIds.map((runId) => ({ workflowId: deputyLongId.workflowId, runId })),
    tree: await tree(`bench-tree-0-${suffix}`),
  };
  const baseline: ReplaySets = { long: [{ workflowId: loopId }], tree: await tree(`base-tree-0-${suffix}`) };
  return { deputy, baseline };
}

/** How many events the histories of a set hold. */
async function eventCount(client: Client, refs: HistoryRef[]): Promise<number> {
  const histories = await Promise.all(
    refs.map(({ workflowId, runId }) => client.workflow.getHandle(workflowId, runId).fetchHistory()),
  );
  return histories.reduce((n, history) => n + (history.events?.length ?? 0), 0);
}

/** What every replayer (and every worker) loads: the workflow bundle's code. */
function bundleResult(deputyBundle: { code: string }, baselineBundle: { code: string }): ScenarioResult {
  const [deputy, baseline] = [deputyBundle, baselineBundle].map((bundle) => Buffer.byteLength(bundle.code));
  log(`  workflow bundle: deputy ${deputy} bytes, baseline ${baseline} bytes`);
  return {
    id: 'workflow-bundle',
    title: 'Workflow bundle (the code every worker and replayer loads)',
    runs: 1,
    deputy: { bytes: deputy },
    baseline: { bytes: baseline },
    ratio: round(deputy! / baseline!),
    target: null,
    met: null,
  };
}

/** Each side's workflow bundle, as its replayers load it from a file. */
async function replayedBundles() {
  const [deputyBundle, baselineBundle] = await Promise.all([bundleDeputyWorkflows(), bundleBaselineWorkflows()]);
  const dir = join(PROJECT_ROOT, '.deputy', 'bench');
  mkdirSync(dir, { recursive: true });
  const codePaths = { deputy: join(dir, 'deputy-workflows.js'), baseline: join(dir, 'baseline-workflows.js') };
  writeFileSync(codePaths.deputy, deputyBundle.code);
  writeFileSync(codePaths.baseline, baselineBundle.code);
  return { codePaths, result: bundleResult(deputyBundle, baselineBundle) };
}

/** One replayer process a side, its bundle and its histories loaded and warmed up. */
async function startReplayers(
  bench: Bench,
  sets: { deputy: ReplaySets; baseline: ReplaySets },
  codePaths: Record<'deputy' | 'baseline', string>,
) {
  const start = (side: 'deputy' | 'baseline') =>
    BenchWorker.start(side, [bench.server.address, codePaths[side], JSON.stringify(sets[side])], 'replayer-main.ts');
  // One at a time: neither side warms up while the other does.
  const deputy = await start('deputy');
  const baseline = await start('baseline');
  return { deputy, baseline };
}

/** The milliseconds of each side's replays of a set, paired: the i-th of one side beside the i-th of the other. */
type Paired = { deputy: number[]; baseline: number[] };

/** `pairs` paired replays of `set`, the side going first alternating, in one life of the two replayers. */
async function replayPairs(replayers: Replayers, set: ReplaySetName, pairs: number, into: Paired): Promise<void> {
  const passes = set === 'tree' ? REPLAY_TREE_PASSES : 1;
  // Each pair's two replays run back to back, so what slows the machine for a while weighs on both; the figure is
  // the median of the pairs' ratios, as in the throughput scenario.
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 === 0 ? (['deputy', 'baseline'] as const) : (['baseline', 'deputy'] as const);
    for (const side of order) into[side].push((await replayers[side].replay(set, passes)) / passes);
  }
}

type Replayers = Awaited<ReturnType<typeof startReplayers>>;

/** One set's row: the median of the pairs' ratios, with their quartiles. */
async function replayRow(
  bench: Bench,
  sets: Record<'deputy' | 'baseline', ReplaySets>,
  set: ReplaySetName,
  ms: Paired,
) {
  const tree = set === 'tree';
  const label = tree ? 'delegating tree' : `${REPLAY_TURNS}-turn run`;
  const ratios = ms.deputy.map((deputy, i) => deputy / ms.baseline[i]!);
  const ratio = median(ratios);
  const sorted = [...ratios].sort((x, y) => x - y);
  const quartile = (q: number) => round(sorted[Math.round(q * (sorted.length - 1))]!);
  const [deputyEvents, baselineEvents] = await Promise.all(
    [sets.deputy[set], sets.baseline[set]].map((refs) => eventCount(bench.client, refs)),
  );
  const [deputyMs, baselineMs] = [round(median(ms.deputy)), round(median(ms.baseline))];
  log(
    `  ${label}: deputy ${deputyMs} ms, baseline ${baselineMs} ms; ratio ${round(ratio)} (pairs' quartiles ${quartile(0.25)}–${quartile(0.75)})`,
  );
  return {
    id: `replay-${set}`,
    title: `Replay: ${label}${tree ? ` (a pass of ${REPLAY_TREE_PASSES} in one replayer)` : ''}`,
    runs: ratios.length,
    deputy: {
      medianMs: deputyMs,
      histories: sets.deputy[set].length,
      events: deputyEvents,
      ratioQ1: quartile(0.25),
      ratioQ3: quartile(0.75),
    },
    baseline: { medianMs: baselineMs, histories: sets.baseline[set].length, events: baselineEvents },
    ratio: round(ratio),
    target: tree ? { ratioAtMost: TARGETS.replayTree } : null,
    met: tree ? ratio <= TARGETS.replayTree : null,
  } satisfies ScenarioResult;
}

async function benchReplay(bench: Bench): Promise<ScenarioResult[]> {
  const longPairs = Math.ceil(REPLAY_REPS / REPLAYER_LIVES);
  log(
    `replay: ${REPLAYER_LIVES} lives of a replayer process a side; in each, ${longPairs} paired replays of the long run and ${REPLAY_REPS} of the tree, the side going first alternating`,
  );
  const sets = await replayedHistories(bench);
  const bundles = await replayedBundles();
  const ms: Record<ReplaySetName, Paired> = { long: { deputy: [], baseline: [] }, tree: { deputy: [], baseline: [] } };
  for (let life = 0; life < REPLAYER_LIVES; life++) {
    const replayers = await startReplayers(bench, sets, bundles.codePaths);
    await replayPairs(replayers, 'long', longPairs, ms.long);
    await replayPairs(replayers, 'tree', REPLAY_REPS, ms.tree);
    await Promise.all([replayers.deputy.stop(), replayers.baseline.stop()]);
  }
  return [bundles.result, await replayRow(bench, sets, 'long', ms.long), await replayRow(bench, sets, 'tree', ms.tree)];
}

/** 5. The peer (OpenAI Agents SDK on Temporal) beside Deputy's tree and long runs measured above. */
async function peerRows(bench: Bench, results: ScenarioResult[]): Promise<ScenarioResult[]> {
  const of = (id: string) => results.find((r) => r.id === id)?.deputy;
  const tree = of('tree-history') as { bytes: number; events: number } | undefined;
  const wall = of('delegation-overhead') as { medianMs: number } | undefined;
  const growth = of('history-growth')?.compactionOn as Record<number, { bytesPerTurn: number }> | undefined;
  const bytesPerTurn = Object.fromEntries(Object.entries(growth ?? {}).map(([t, f]) => [Number(t), f.bytesPerTurn]));
  return benchPeer(bench.client, bench.server.address, bench.model.url, GROWTH_TURNS, {
    tree: { bytes: tree?.bytes ?? NaN, events: tree?.events ?? NaN, medianMs: wall?.medianMs ?? NaN },
    bytesPerTurn,
  });
}

async function main(): Promise<void> {
  const started = new Date();
  const bench = await openBench();
  const results: ScenarioResult[] = [];
  try {
    // The replay scenario replays the overhead scenario's trees and the growth scenario's long runs.
    if (wanted('overhead') || wanted('replay')) results.push(...(await benchOverhead(bench)));
    if (wanted('wide')) results.push(...(await benchWide(bench)));
    if (wanted('watch')) results.push(...(await benchWatch(bench)));
    if (wanted('throughput')) results.push(...(await benchThroughput(bench)));
    // History growth: N turns of a 2 KB page, compaction on and off.
    if (wanted('growth') || wanted('replay')) results.push(...(await benchGrowth(bench)));
    if (wanted('replay')) results.push(...(await benchReplay(bench)));
    if (wanted('peer')) results.push(...(await peerRows(bench, results)));
  } finally {
    // A failed scenario stops the workers, the model and the server too: nothing is left running.
    await Promise.allSettled([bench.deputyWorker.stop(), bench.baselineWorker.stop()]);
    await bench.model.close();
    await bench.connection.close();
    await bench.server.env.teardown();
  }

  const report = {
    date: started.toISOString().slice(0, 10),
    quick: QUICK,
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryGiB: round(totalmem() / 2 ** 30, 1),
    },
    versions: versions(),
    scenarios: results,
  };
  const table = renderTable(report);
  console.log(`\n${table}`);
  if (QUICK || ONLY) {
    console.log('BENCH_QUICK=1 or BENCH_ONLY: results not written');
    return;
  }
  await writeFormatted(join(PROJECT_ROOT, 'bench', 'results.json'), JSON.stringify(report, null, 2));
  await writeFormatted(join(PROJECT_ROOT, 'bench', 'results.md'), table);
  await updatePerformancePage(table);
  console.log('wrote bench/results.json, bench/results.md and the table in docs/performance.md');
}

function versions() {
  const pkg = (name: string) =>
    (JSON.parse(readFileSync(join(PROJECT_ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
      .version;
  const cli = findTemporalCli();
  return {
    deputy: (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    node: process.version,
    temporalSdk: pkg('@temporalio/worker'),
    temporalCli: cli ? execFileSync(cli, ['--version'], { encoding: 'utf8' }).trim() : 'downloaded by the SDK',
    openai: pkg('openai'),
  };
}

const START = '<!-- bench:start -->';
const END = '<!-- bench:end -->';

/** Writes a file formatted as the project's Prettier config wants it (CI checks formatting). */
async function writeFormatted(path: string, text: string): Promise<void> {
  const options = await resolveConfig(path);
  writeFileSync(path, await format(text, { ...options, filepath: path }));
}

/** Replaces the table between the bench markers of the performance page. */
async function updatePerformancePage(table: string): Promise<void> {
  const path = join(PROJECT_ROOT, 'docs', 'performance.md');
  const readme = readFileSync(path, 'utf8');
  const from = readme.indexOf(START);
  const to = readme.indexOf(END);
  if (from < 0 || to < from) throw new Error(`docs/performance.md has no ${START} … ${END} markers`);
  await writeFormatted(path, `${readme.slice(0, from + START.length)}\n${table}\n${readme.slice(to)}`);
}

main().catch((err: unknown) => {
  console.error('bench failed:', err);
  process.exit(1);
});
