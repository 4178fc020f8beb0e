/**
 * `node --import tsx bench/server-cost.ts`: what one search-attribute upsert costs the embedded dev server, in CPU.
 * Rounds of WORKFLOWS concurrent bare workflows of STEPS workflow tasks, with and without an upsert in each task,
 * alternate (ROUNDS of each); the dev server's CPU time (Linux `/proc`) is read around each round. Prints the median
 * server CPU a workflow of each kind and their difference over the upserts: the cost the throughput scenario's
 * status changes put on the server, which persists everything through one SQLite connection.
 */
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startDevServer } from '../src/testing/dev-server.js';
import { QUIET_BUNDLER_LOGGER } from '../src/worker/bundle.js';
import { cpuMs, devServerPid } from './server-cpu.js';
import { median } from './trees.js';

Runtime.install({ logger: new DefaultLogger('WARN') });
const WORKFLOWS = Number(process.env.WORKFLOWS ?? 200);
const STEPS = Number(process.env.STEPS ?? 4);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const KINDS = ['timersOnly', 'timersAndUpserts'] as const;

const server = await startDevServer();
const pid = devServerPid(server.address);
if (pid === undefined) throw new Error('the dev server process was not found in /proc (Linux only)');
const client = new Client({ connection: await Connection.connect({ address: server.address }) });
const worker = await Worker.create({
  connection: await NativeConnection.connect({ address: server.address }),
  taskQueue: 'server-cost',
  workflowBundle: await bundleWorkflowCode({
    workflowsPath: fileURLToPath(new URL('./server-cost/workflows.ts', import.meta.url)),
    logger: QUIET_BUNDLER_LOGGER,
  }),
});

/** Server CPU milliseconds a workflow of `kind`, over one round of WORKFLOWS at once. */
async function round(kind: (typeof KINDS)[number], r: number): Promise<number> {
  const before = cpuMs(pid);
  await Promise.all(
    Array.from({ length: WORKFLOWS }, (_, i) =>
      client.workflow.execute(kind, { taskQueue: 'server-cost', workflowId: `${kind}-${r}-${i}`, args: [STEPS] }),
    ),
  );
  return (cpuMs(pid) - before) / WORKFLOWS;
}

const measured: Record<(typeof KINDS)[number], number[]> = { timersOnly: [], timersAndUpserts: [] };
await worker.runUntil(async () => {
  for (const kind of KINDS) await round(kind, -1); // warm-up
  for (let r = 0; r < ROUNDS; r++) for (const kind of KINDS) measured[kind].push(await round(kind, r));
});
const [timers, upserts] = [median(measured.timersOnly), median(measured.timersAndUpserts)];
console.log(`server CPU a workflow of ${STEPS} tasks (median of ${ROUNDS} rounds of ${WORKFLOWS}):`);
console.log(`  timers only ${timers.toFixed(2)} ms, timers and upserts ${upserts.toFixed(2)} ms`);
console.log(`  an upsert: ${((upserts - timers) / STEPS).toFixed(2)} ms of server CPU`);
await server.env.teardown();
