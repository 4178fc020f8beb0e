/**
 * The throughput scenario on the production shape: Temporal Server on PostgreSQL (`scripts/cluster/harness.ts`, the
 * cluster `npm run test:cluster` runs), two worker processes a side behind each side's task queue, the same scripted
 * model. Left out, said in one line, where the cluster cannot start (no Go toolchain to build the server, no
 * PostgreSQL).
 */
import { Client, Connection } from '@temporalio/client';
import { DeputyClient } from '../src/client/client.js';
import { startCluster, type Cluster } from '../scripts/cluster/harness.js';
import type { ScenarioResult } from './report.js';
import { benchConfig } from './script.js';
import { BenchWorker, type Bench, log, runners, THROUGHPUT_RUNS } from './setup.js';
import { throughputRounds, throughputRows } from './throughput.js';

const WORKERS_A_SIDE = 2;

export async function benchClusterThroughput(bench: Bench): Promise<ScenarioResult[]> {
  let cluster: Cluster;
  try {
    cluster = await startCluster((line) => log(line));
  } catch (err) {
    log(`cluster throughput left out: the cluster did not start (${(err as Error).message.split('\n')[0]})`);
    return [];
  }
  const workers: BenchWorker[] = [];
  const connection = await Connection.connect({ address: cluster.address });
  try {
    log(`throughput on the cluster (${cluster.description}): ${WORKERS_A_SIDE} workers a side`);
    const client = new Client({ connection });
    const suffix = `cluster-${bench.suffix}`;
    const deputyQueue = `bench-deputy-${suffix}`;
    const baselineQueue = `bench-baseline-${suffix}`;
    const config = JSON.stringify(benchConfig(true));
    const start = (side: 'deputy' | 'baseline', queue: string) =>
      BenchWorker.start(side, [cluster.address, queue, bench.model.url, config]);
    const started = await Promise.all([
      ...Array.from({ length: WORKERS_A_SIDE }, () => start('deputy', deputyQueue)),
      ...Array.from({ length: WORKERS_A_SIDE }, () => start('baseline', baselineQueue)),
    ]);
    workers.push(...started);
    const { runDeputy, runBaseline } = runners(
      client,
      new DeputyClient(client, { taskQueue: deputyQueue }),
      baselineQueue,
    );
    const rounds = await throughputRounds({
      label: 'cluster',
      suffix,
      serverPid: undefined,
      deputyWorkers: started.slice(0, WORKERS_A_SIDE),
      baselineWorkers: started.slice(WORKERS_A_SIDE),
      runDeputy,
      runBaseline,
    });
    const [row] = throughputRows(rounds, {
      id: 'throughput-cluster',
      title: `Same load on the cluster shape (${THROUGHPUT_RUNS} roots; ${cluster.description}, ${WORKERS_A_SIDE} workers a side)`,
    });
    return [row!];
  } finally {
    await Promise.allSettled(workers.map((worker) => worker.stop()));
    await connection.close();
    await cluster.stop();
  }
}
