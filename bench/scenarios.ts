/** The delegation scenarios: one tree's overhead and history, a wide tree, and a watched tree against an unwatched one. */
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client } from '@temporalio/client';
import { type DeputyClient } from '../src/client/client.js';
import { compressedBytes } from './compressed.js';
import { STREAMED_CALL_SECONDS, TREE_BRIEFS, WIDE_ROUNDS, WIDE_WIDTH } from './script.js';
import { actionsOf } from './actions.js';
import { type ScenarioResult } from './report.js';
import { median, treeHistories } from './trees.js';
import { type Bench, OVERHEAD_RUNS, TARGETS, WATCH_RUNS, WIDE_RUNS, log, round } from './setup.js';

/** 1. Delegation overhead: one parent, three children of one model call each, a final call. */
export async function benchOverhead(bench: Bench): Promise<ScenarioResult[]> {
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
  log(`  tree history: deputy ${deputyTree.bytes} bytes, baseline ${baselineTree.bytes} bytes`);
  return out;
}

/** The same tree's history with the compressing codec on, against the bare tree's (which has nothing to compress). */
export async function compressedTreeResult(
  bench: Bench,
  deputyRoot: string,
  baselineRoot: string,
): Promise<ScenarioResult> {
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
export async function benchWide({ suffix, runDeputy, runBaseline, treeSize }: Bench): Promise<ScenarioResult[]> {
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
export async function watchFromStart(
  client: Client,
  deputy: DeputyClient,
  id: string,
  delays: number[],
): Promise<number> {
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
export function watchResults(
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
export async function benchWatch({
  client,
  deputy,
  deputyWorker,
  suffix,
  runDeputy,
}: Bench): Promise<ScenarioResult[]> {
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

/**
 * Billable actions: one delegating tree a side, counted by the server (heartbeats included) and from the histories,
 * and the heartbeats the server records for one model call that streams for STREAMED_CALL_SECONDS.
 */
export async function benchActions(bench: Bench): Promise<ScenarioResult[]> {
  const { client, suffix, runDeputy, runBaseline, actions } = bench;
  log('billable actions: one tree a side, one long streamed call');
  const fromHistories = async (root: string) =>
    actionsOf((await treeHistories(client, root)).map(({ history }) => history));
  const deputyRoot = `bench-actions-tree-${suffix}`;
  const deputy = await actions.during(() => runDeputy('tree-run actions', deputyRoot, 'tree done'));
  const baselineRoot = `base-actions-tree-${suffix}`;
  const baseline = await actions.during(() => runBaseline('baselineTree', [baselineRoot, TREE_BRIEFS], baselineRoot));
  const [deputyRecorded, baselineRecorded] = await Promise.all([
    fromHistories(deputyRoot),
    fromHistories(baselineRoot),
  ]);
  const treeRatio = deputy.actions.total / baseline.actions.total;
  const streamedId = `bench-streamed-${suffix}`;
  const streamed = await actions.during(() => runDeputy('streamed-call', streamedId));
  log(
    `  tree actions by type: ${JSON.stringify(deputy.actions.byKind)} against ${JSON.stringify(baseline.actions.byKind)}`,
  );
  log(`  recorded: ${JSON.stringify(deputyRecorded.byKind)} against ${JSON.stringify(baselineRecorded.byKind)}`);
  log(
    `  tree: ${deputy.actions.total} against ${baseline.actions.total} actions; a ${STREAMED_CALL_SECONDS} s streamed call: ${streamed.heartbeats} heartbeats`,
  );
  return [
    {
      id: 'tree-actions',
      title: 'Same tree: billable actions (the server’s `action` counter; from the histories in brackets)',
      runs: 1,
      deputy: { actions: deputy.actions.total, recorded: deputyRecorded.total, byType: deputy.actions.byKind },
      baseline: { actions: baseline.actions.total, recorded: baselineRecorded.total, byType: baseline.actions.byKind },
      ratio: round(treeRatio),
      target: { ratioAtMost: TARGETS.treeActions },
      met: treeRatio <= TARGETS.treeActions,
    },
    {
      id: 'streamed-call',
      title: `One model call streaming for ${STREAMED_CALL_SECONDS} s: heartbeats the server records`,
      runs: 1,
      deputy: { heartbeats: streamed.heartbeats, actions: streamed.actions.total, byType: streamed.actions.byKind },
      baseline: null,
      ratio: streamed.heartbeats,
      target: { atMost: TARGETS.streamedCallHeartbeats },
      met: streamed.heartbeats <= TARGETS.streamedCallHeartbeats,
    },
  ];
}
