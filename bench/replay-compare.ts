/**
 * Profiling aid: records one benchmark tree on a side (SIDE=deputy or baseline), then replays its histories PASSES
 * times in one replayer. SIDE=both records both trees and alternates the two sides, REPS rounds for each number of
 * trees in PASSES (a list, e.g. `1,10,40`): the ratio for each, and, with two or more, what a replayer's own start
 * costs each side and what each further tree costs (a straight line fitted through the medians).
 * A change to workflow code, measured: `WRITE_BUNDLE=<file>` (in a checkout without the change) writes its workflow
 * bundle; `SIDE=ab BUNDLE_A=<file>` (with the change) records one Deputy tree and replays it REPS times in pairs,
 * that bundle and this checkout's, the first of a pair alternating: the median of the pairs' ratios, this over that.
 * CPU=1 counts the process's CPU time instead of the time that passed (less moved by what else the machine does).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkflowBundle } from '@temporalio/worker';
import { builtinTools } from '../activities/builtin-tools.js';
import { DeputyClient } from '../src/client/client.js';
import { parseConfig } from '../src/config/schema.js';
import { ConfigStore } from '../src/config/store.js';
import { startDevServer } from '../src/testing/dev-server.js';
import { fetchPageTool } from '../src/testing/pages.js';
import { ScriptedModelServer } from '../src/testing/scripted-model.js';
import { bundleDeputyWorkflows } from '../src/worker/bundle.js';
import { createDeputyWorker, createOpenAIClient } from '../src/worker/factory.js';
import { createBaselineActivities } from './baseline/activities.js';
import { bundleBaselineWorkflows } from './baseline/bundle.js';
import { benchConfig, benchRules, TREE_BRIEFS } from './script.js';
import { median, treeHistories, type History } from './trees.js';

Runtime.install({ logger: new DefaultLogger('WARN') });
const PASSES = (process.env.PASSES ?? '40').split(',').map(Number);
const REPS = Number(process.env.REPS ?? 7);
const SIDE = process.env.SIDE ?? 'deputy';

type Side = 'deputy' | 'baseline';
type Histories = { workflowId: string; history: History }[];
interface Recorded {
  bundle: WorkflowBundle;
  histories: Histories;
}

const server = await startDevServer();
const model = await ScriptedModelServer.start(benchRules(), { quiet: true });
const client = new Client({ connection: await Connection.connect({ address: server.address }) });
const connection = await NativeConnection.connect({ address: server.address });
const modelOptions = { apiKey: 'k', baseURL: model.url };

/** Runs one tree on Deputy's worker; its root's workflow id. */
async function runDeputyTree(queue: string, bundle: WorkflowBundle): Promise<string> {
  const worker = await createDeputyWorker({
    connection,
    taskQueue: queue,
    childTaskQueue: `${queue}-bg`,
    config: new ConfigStore(parseConfig(benchConfig(true))),
    model: modelOptions,
    tools: [...builtinTools(), fetchPageTool],
    workflowBundle: bundle,
  });
  const deputy = new DeputyClient(client, { taskQueue: queue });
  const root = `tree-${queue}`;
  await worker.runUntil(async () => {
    await deputy.startRun(
      { task: 'tree-run 1', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
      { workflowId: root },
    );
    await deputy.result(root);
  });
  return root;
}

/** Runs one tree on the bare Temporal worker; its root's workflow id. */
async function runBaselineTree(queue: string, bundle: WorkflowBundle): Promise<string> {
  const activities = createBaselineActivities(createOpenAIClient(modelOptions));
  const worker = await Worker.create({ connection, taskQueue: queue, activities, workflowBundle: bundle });
  const root = `base-${queue}`;
  await worker.runUntil(
    client.workflow.execute('baselineTree', { taskQueue: queue, workflowId: root, args: [root, TREE_BRIEFS] }),
  );
  return root;
}

/** One tree recorded on `side`, with the bundle that ran it. */
async function record(side: Side): Promise<Recorded> {
  const queue = `rc-${randomUUID().slice(0, 8)}`;
  const bundle = side === 'deputy' ? await bundleDeputyWorkflows() : await bundleBaselineWorkflows();
  const root = side === 'deputy' ? await runDeputyTree(queue, bundle) : await runBaselineTree(queue, bundle);
  return { bundle, histories: await treeHistories(client, root) };
}

/** Each history's events and bytes, and how many events of each type the tree holds. */
async function printCounts(side: Side, histories: Histories): Promise<void> {
  const { temporal } = (await import('@temporalio/proto')).default;
  const counts = new Map<string, number>();
  for (const { workflowId, history } of histories) {
    const events = history.events ?? [];
    const bytes = events.reduce((n, e) => n + temporal.api.history.v1.HistoryEvent.encode(e).finish().length, 0);
    console.log(`${side} ${workflowId}: ${events.length} events, ${bytes} bytes`);
    for (const e of events) counts.set(String(e.eventType), (counts.get(String(e.eventType)) ?? 0) + 1);
  }
  const byType = [...counts].sort((a, b) => b[1] - a[1]).map(([type, n]) => `${type}:${n}`);
  console.log(side, byType.join(' '));
}

/** How many promises workflow code creates in one replay of the tree (the SDK captures a stack for each). */
async function printPromises(side: Side, { bundle, histories }: Recorded): Promise<void> {
  const { promiseHooks } = await import('node:v8');
  const stacks = new Map<string, number>();
  let count = 0;
  const stop = promiseHooks.onInit((promise: Promise<unknown>) => {
    if (promise.constructor === Promise) return;
    count++;
    if (process.env.PROMISES !== 'stacks') return;
    const stack = (new Error().stack ?? '')
      .split('\n')
      .slice(2, Number(process.env.DEPTH ?? 6))
      .join(' | ');
    stacks.set(stack, (stacks.get(stack) ?? 0) + 1);
  }) as () => void;
  await replayMs(bundle, histories, 1);
  stop();
  console.log(`${side}: ${count} workflow promises in one replay of the tree`);
  for (const [stack, n] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 200)) console.log(n, stack);
}

/** Milliseconds one replayer takes for `passes` passes over the tree, its own start included (CPU=1: of CPU). */
async function replayMs(bundle: WorkflowBundle, histories: Histories, passes: number): Promise<number> {
  const set = Array.from({ length: passes }, () => histories).flat();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  for await (const r of Worker.runReplayHistories({ workflowBundle: bundle, replayName: 'p' }, set))
    if (r.error) throw r.error;
  if (process.env.CPU) {
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000;
  }
  return performance.now() - t0;
}

/** One side: a warm-up, then the measured passes. */
async function measureOne(side: Side, { bundle, histories }: Recorded): Promise<void> {
  const passes = PASSES[0]!;
  for (const label of ['warm', 'measured']) {
    const ms = await replayMs(bundle, histories, passes);
    const each = (ms / passes).toFixed(2);
    console.log(`${side} ${label}: ${passes * histories.length} histories in ${Math.round(ms)} ms: ${each} ms a tree`);
  }
}

/** This checkout's bundle against BUNDLE_A's on one tree, in pairs: the median and quartiles of the pairs' ratios. */
async function measureAB(): Promise<void> {
  const { bundle: b, histories } = await record('deputy');
  const a: WorkflowBundle = { code: readFileSync(process.env.BUNDLE_A!, 'utf8') };
  const passes = PASSES[0]!;
  for (const bundle of [a, b]) await replayMs(bundle, histories, 2);
  const ratios: number[] = [];
  for (let i = 0; i < REPS; i++) {
    const order = i % 2 === 0 ? [a, b] : [b, a];
    const ms = new Map<WorkflowBundle, number>();
    for (const bundle of order) ms.set(bundle, await replayMs(bundle, histories, passes));
    ratios.push(ms.get(b)! / ms.get(a)!);
  }
  const sorted = [...ratios].sort((x, y) => x - y);
  const q = (f: number) => sorted[Math.floor(f * (sorted.length - 1))]!.toFixed(3);
  console.log(
    `${REPS} pairs of ${passes} trees: this bundle / BUNDLE_A ${median(ratios).toFixed(3)} (${q(0.25)}–${q(0.75)})`,
  );
}

/** Both sides, alternating, REPS rounds for each number of trees a replayer replays. */
async function measureBoth(sides: Record<Side, Recorded>): Promise<void> {
  const medians: Record<Side, number[]> = { deputy: [], baseline: [] };
  for (const side of ['deputy', 'baseline'] as const) await replayMs(sides[side].bundle, sides[side].histories, 2);
  for (const passes of PASSES) {
    const rounds: Record<Side, number[]> = { deputy: [], baseline: [] };
    for (let i = 0; i < REPS; i++) {
      for (const side of ['deputy', 'baseline'] as const)
        rounds[side].push(await replayMs(sides[side].bundle, sides[side].histories, passes));
    }
    const [deputy, baseline] = [median(rounds.deputy), median(rounds.baseline)];
    medians.deputy.push(deputy);
    medians.baseline.push(baseline);
    const perTree = (ms: number) => (ms / passes).toFixed(2);
    console.log(
      `${passes} trees a replayer: deputy ${perTree(deputy)}, baseline ${perTree(baseline)} ms a tree: ${(deputy / baseline).toFixed(2)}x`,
    );
  }
  if (PASSES.length >= 2) printFit(medians);
}

/** A straight line through (trees, median ms) a side: the replayer's own start and each further tree. */
function printFit(medians: Record<Side, number[]>): void {
  const fit = (ys: number[]) => {
    const n = PASSES.length;
    const mx = PASSES.reduce((a, b) => a + b, 0) / n;
    const my = ys.reduce((a, b) => a + b, 0) / n;
    const slope =
      PASSES.reduce((s, x, i) => s + (x - mx) * (ys[i]! - my), 0) / PASSES.reduce((s, x) => s + (x - mx) ** 2, 0);
    return { start: my - slope * mx, perTree: slope };
  };
  const [deputy, baseline] = [fit(medians.deputy), fit(medians.baseline)];
  console.log(
    `fitted: a replayer's start ${deputy.start.toFixed(1)} vs ${baseline.start.toFixed(1)} ms; ` +
      `each further tree ${deputy.perTree.toFixed(2)} vs ${baseline.perTree.toFixed(2)} ms: ${(deputy.perTree / baseline.perTree).toFixed(2)}x`,
  );
}

async function main(): Promise<void> {
  if (process.env.WRITE_BUNDLE) {
    writeFileSync(process.env.WRITE_BUNDLE, (await bundleDeputyWorkflows()).code);
    return;
  }
  if (SIDE === 'ab') return measureAB();
  if (SIDE === 'both') {
    await measureBoth({ deputy: await record('deputy'), baseline: await record('baseline') });
    return;
  }
  const side = SIDE === 'baseline' ? 'baseline' : 'deputy';
  const recorded = await record(side);
  if (process.env.COUNT) await printCounts(side, recorded.histories);
  if (process.env.PROMISES) await printPromises(side, recorded);
  await measureOne(side, recorded);
}

await main();
await model.close();
await server.env.teardown();
process.exit(0);
