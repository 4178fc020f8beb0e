/**
 * `npm run bench`: Deputy against bare Temporal on an embedded dev server, the scripted model answering at once.
 * Deputy and baseline runs alternate (A B A B …) so machine drift hits both sides; every figure is a median.
 * Writes bench/results.json and bench/results.md, and puts the table into docs/performance.md.
 *
 * BENCH_QUICK=1 runs every scenario with fewer repetitions and shorter runs (to check the harness, not to publish).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { format, resolveConfig } from 'prettier';
import { benchPeer, type DeputySide } from './peer.js';
import { findTemporalCli, PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { renderTable, type ScenarioResult } from './report.js';

import { benchReplay } from './replay.js';
import { benchActions, benchOverhead, benchWatch, benchWide } from './scenarios.js';
import { type Bench, GROWTH_TURNS, ONLY, QUICK, openBench, round, wanted } from './setup.js';
import { benchGrowth, benchThroughput } from './throughput.js';
import { benchClusterThroughput } from './cluster.js';

async function peerRows(bench: Bench, results: ScenarioResult[]): Promise<ScenarioResult[]> {
  const of = (id: string) => results.find((r) => r.id === id)?.deputy;
  const tree = of('tree-history') as { bytes: number; events: number } | undefined;
  const wall = of('delegation-overhead') as { medianMs: number } | undefined;
  const growth = of('history-growth')?.compactionOn as
    Record<number, { bytesPerTurn: number; actionsPerTurn: number }> | undefined;
  const perTurn = (figure: 'bytesPerTurn' | 'actionsPerTurn') =>
    Object.fromEntries(Object.entries(growth ?? {}).map(([t, f]) => [Number(t), f[figure]]));
  const actions = (of('tree-actions') as { actions?: number } | undefined)?.actions ?? NaN;
  const cache = (of('prompt-cache') ?? {}) as DeputySide['cache'];
  return benchPeer(bench.client, bench.server.address, bench.model, GROWTH_TURNS, {
    tree: { bytes: tree?.bytes ?? NaN, events: tree?.events ?? NaN, medianMs: wall?.medianMs ?? NaN, actions },
    bytesPerTurn: perTurn('bytesPerTurn'),
    actionsPerTurn: perTurn('actionsPerTurn'),
    cache,
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
    if (wanted('actions')) results.push(...(await benchActions(bench)));
    if (wanted('throughput')) results.push(...(await benchThroughput(bench)));
    if (wanted('cluster')) results.push(...(await benchClusterThroughput(bench)));
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
