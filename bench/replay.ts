/** The replay scenario: a long run's and a delegating tree's histories replayed by each side's workflow code. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Client } from '@temporalio/client';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { bundleDeputyWorkflows } from '../src/worker/bundle.js';
import { bundleBaselineWorkflows } from './baseline/bundle.js';
import type { HistoryRef, ReplaySetName } from './ipc.js';
import { type ScenarioResult } from './report.js';
import { median } from './trees.js';
import {
  type Bench,
  BenchWorker,
  GROWTH_TURNS,
  REPLAYER_LIVES,
  REPLAY_REPS,
  REPLAY_TREE_PASSES,
  REPLAY_TURNS,
  TARGETS,
  log,
  round,
} from './setup.js';

export type ReplaySets = Record<ReplaySetName, HistoryRef[]>;

/** The histories the replay scenario replays: the long runs' segments and the overhead scenario's first trees. */
export async function replayedHistories({ suffix, runBaseline, treeIds, segmentsSize, growthIds }: Bench) {
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
export async function eventCount(client: Client, refs: HistoryRef[]): Promise<number> {
  const histories = await Promise.all(
    refs.map(({ workflowId, runId }) => client.workflow.getHandle(workflowId, runId).fetchHistory()),
  );
  return histories.reduce((n, history) => n + (history.events?.length ?? 0), 0);
}

/** What every replayer (and every worker) loads: the workflow bundle's code. */
export function bundleResult(deputyBundle: { code: string }, baselineBundle: { code: string }): ScenarioResult {
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
export async function replayedBundles() {
  const [deputyBundle, baselineBundle] = await Promise.all([bundleDeputyWorkflows(), bundleBaselineWorkflows()]);
  const dir = join(PROJECT_ROOT, '.deputy', 'bench');
  mkdirSync(dir, { recursive: true });
  const codePaths = { deputy: join(dir, 'deputy-workflows.js'), baseline: join(dir, 'baseline-workflows.js') };
  writeFileSync(codePaths.deputy, deputyBundle.code);
  writeFileSync(codePaths.baseline, baselineBundle.code);
  return { codePaths, result: bundleResult(deputyBundle, baselineBundle) };
}

/** One replayer process a side, its bundle and its histories loaded and warmed up. */
export async function startReplayers(
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
export type Paired = { deputy: number[]; baseline: number[] };

/** `pairs` paired replays of `set`, the side going first alternating, in one life of the two replayers. */
export async function replayPairs(
  replayers: Replayers,
  set: ReplaySetName,
  pairs: number,
  into: Paired,
): Promise<void> {
  const passes = set === 'tree' ? REPLAY_TREE_PASSES : 1;
  // Each pair's two replays run back to back, so what slows the machine for a while weighs on both; the figure is
  // the median of the pairs' ratios, as in the throughput scenario.
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 === 0 ? (['deputy', 'baseline'] as const) : (['baseline', 'deputy'] as const);
    for (const side of order) into[side].push((await replayers[side].replay(set, passes)) / passes);
  }
}

export type Replayers = Awaited<ReturnType<typeof startReplayers>>;

/** One set's row: the median of the pairs' ratios, with their quartiles. */
export async function replayRow(
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

export async function benchReplay(bench: Bench): Promise<ScenarioResult[]> {
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
