/** The load scenarios: runs started together (rate, memory, CPU a run) and a long run's history growth. */
import { benchConfig, growthScript, TREE_BRIEFS } from './script.js';
import { type ScenarioResult } from './report.js';
import { cpuMs, devServerPid } from './server-cpu.js';
import { median } from './trees.js';
import { actionsOf } from './actions.js';
import { cacheShare, withPromptCache, type CacheShare } from './prompt-cache.js';
import {
  type Bench,
  type BenchWorker,
  GROWTH_TURNS,
  TARGETS,
  THROUGHPUT_ROUNDS,
  THROUGHPUT_RUNS,
  log,
  round,
} from './setup.js';

/** What one round of the throughput scenario measured on one side. */
export interface Round {
  /** Runs a minute. */
  rate: number;
  /** The worker's peak RSS, bytes. */
  rss: number;
  /** CPU milliseconds the round cost the dev server and the side's worker. */
  serverCpuMs: number;
  workerCpuMs: number;
}

/** One round of the throughput scenario on one side: its rate, its workers' peak RSS, the CPU it cost. */
export async function throughputRound(
  workers: BenchWorker[],
  serverPid: number | undefined,
  runs: () => Promise<unknown>[],
) {
  for (const worker of workers) worker.send({ type: 'reset-peak' });
  const cpu = async () => (await Promise.all(workers.map((w) => w.cpuMicros()))).reduce((a, b) => a + b, 0);
  const [server0, worker0] = [cpuMs(serverPid), await cpu()];
  const t0 = performance.now();
  await Promise.all(runs());
  const ms = performance.now() - t0;
  const measured: Round = {
    rate: (THROUGHPUT_RUNS * 60_000) / ms,
    rss: Math.max(...(await Promise.all(workers.map((w) => w.peakRss())))),
    serverCpuMs: cpuMs(serverPid) - server0,
    workerCpuMs: ((await cpu()) - worker0) / 1000,
  };
  return measured;
}

/** Where a throughput scenario runs: each side's workers and runners, the server's process when it is local. */
export interface ThroughputSetting {
  label: string;
  suffix: string;
  serverPid: number | undefined;
  deputyWorkers: BenchWorker[];
  baselineWorkers: BenchWorker[];
  runDeputy: Bench['runDeputy'];
  runBaseline: Bench['runBaseline'];
}

/**
 * A warm-up round per side, then paired rounds, the side going first alternating; the figure is the median of the
 * rounds' ratios, so a slow moment of the machine weighs on one pair, not on one side.
 */
export async function throughputRounds(setting: ThroughputSetting): Promise<{ deputy: Round[]; baseline: Round[] }> {
  const { label, suffix, serverPid, runDeputy, runBaseline } = setting;
  const each = (run: (i: number) => Promise<unknown>) => () =>
    Array.from({ length: THROUGHPUT_RUNS }, (_, i) => run(i));
  const side = {
    deputy: (r: string) =>
      throughputRound(
        setting.deputyWorkers,
        serverPid,
        each((i) => runDeputy(`tp-run ${r}-${i}`, `bench-tp-${r}-${i}-${suffix}`)),
      ),
    baseline: (r: string) =>
      throughputRound(
        setting.baselineWorkers,
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
      `  ${label} round ${r + 1} (${order[0]} first): deputy ${round(deputy.rate, 0)}/min, baseline ${round(baseline.rate, 0)}/min, ${round(deputy.rate / baseline.rate)}; ` +
        `server CPU a run ${round(deputy.serverCpuMs / THROUGHPUT_RUNS)} vs ${round(baseline.serverCpuMs / THROUGHPUT_RUNS)} ms, ` +
        `worker ${round(deputy.workerCpuMs / THROUGHPUT_RUNS)} vs ${round(baseline.workerCpuMs / THROUGHPUT_RUNS)} ms`,
    );
  }
  return rounds;
}

/** A ratio row of the throughput scenario: Deputy's median against the baseline's. */
export function throughputResult(
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
 * 2. Throughput: 40 concurrent roots delegating two children each, on the dev server; runs a minute and worker peak
 * RSS. Before the long runs of history growth, which leave the Deputy worker's heap large, so both workers start this
 * scenario in the same state.
 */
export async function benchThroughput(bench: Bench): Promise<ScenarioResult[]> {
  log(`throughput: ${THROUGHPUT_RUNS} concurrent runs, a warm-up and ${THROUGHPUT_ROUNDS} paired rounds`);
  const rounds = await throughputRounds({
    label: 'dev server',
    suffix: bench.suffix,
    serverPid: devServerPid(bench.server.address),
    deputyWorkers: [bench.deputyWorker],
    baselineWorkers: [bench.baselineWorker],
    runDeputy: bench.runDeputy,
    runBaseline: bench.runBaseline,
  });
  return throughputRows(rounds);
}

/** The throughput scenario's rows: the median of the rounds' ratios (with their spread), the CPU a run, peak RSS. */
export function throughputRows(
  rounds: { deputy: Round[]; baseline: Round[] },
  where: { id: string; title: string } = {
    id: 'throughput',
    title: `Throughput: ${THROUGHPUT_RUNS} concurrent roots, 2 children each`,
  },
): ScenarioResult[] {
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
      where.id,
      where.title,
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
export async function benchGrowth(bench: Bench): Promise<ScenarioResult[]> {
  const { client, deputyWorker, suffix, segmentsSize, growthIds } = bench;
  const out: ScenarioResult[] = [];
  const figures: Record<
    string,
    Record<number, { bytes: number; events: number; segments: number; bytesPerTurn: number; actionsPerTurn: number }>
  > = { on: {}, off: {} };
  const shares: Partial<Record<'on' | 'off', CacheShare>> = {};
  for (const turns of GROWTH_TURNS) {
    for (const compaction of ['on', 'off'] as const) {
      deputyWorker.send({ type: 'config', config: benchConfig(compaction === 'on', turns) });
      const workflowId = `bench-growth-${compaction}-${turns}-${suffix}`;
      growthScript.start(turns);
      const t0 = performance.now();
      const cached = (share: CacheShare) => (shares[compaction] = share);
      const firstRunId = await growthRun(bench, `growth-run ${compaction} ${turns}`, workflowId, turns, cached);
      const size = await segmentsSize(workflowId, firstRunId);
      const histories = await Promise.all(
        size.runIds.map((runId) => client.workflow.getHandle(workflowId, runId).fetchHistory()),
      );
      figures[compaction]![turns] = {
        bytes: size.bytes,
        events: size.events,
        segments: size.workflows,
        bytesPerTurn: Math.round(size.bytes / turns),
        actionsPerTurn: round(actionsOf(histories).total / turns),
      };
      log(`  actions: ${JSON.stringify(actionsOf(histories).byKind)}`);
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
  out.push(cacheResult(shares, first));
  return out;
}

/** One long run of `turns` pages; the shortest is also billed by a provider with a prompt cache, for its share served. */
async function growthRun(
  { model, runDeputy }: Bench,
  task: string,
  workflowId: string,
  turns: number,
  cached: (share: CacheShare) => void,
): Promise<string> {
  const run = () => runDeputy(task, workflowId, `read ${turns} pages`);
  if (turns !== GROWTH_TURNS[0]) return run();
  const firstRunId = await withPromptCache(model, run);
  cached(cacheShare(model, task));
  return firstRunId;
}

/** The prompt-cache row: the share of the shortest long run's input the cache served, compaction on and off. */
function cacheResult(shares: Partial<Record<'on' | 'off', CacheShare>>, turns: number): ScenarioResult {
  return {
    id: 'prompt-cache',
    title: `Prompt cache: share of a ${turns}-turn run's input a provider's cache served (OpenAI's rule, 2 KB tool result a turn)`,
    runs: 1,
    deputy: { compactionOn: shares.on, compactionOff: shares.off },
    baseline: null,
    ratio: shares.on?.share ?? NaN,
    target: null,
    met: null,
  };
}

/** 4. Replay: a long run's histories and a delegating tree's, against the baseline's. */
