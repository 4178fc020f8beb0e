// The TypeScript peer of `npm run bench`: Temporal's AI SDK plugin (@temporalio/ai-sdk) driven by the same scripted
// model over HTTP (Chat Completions) as Deputy.
//
//   node bench/ts-peer/peer.mjs --address HOST:PORT --base-url URL --mode long --turns 100 --task T --id ID
//   node bench/ts-peer/peer.mjs ... --mode tree --task T --id ID
//
// Runs one workflow on a worker of its own and prints one JSON line: the workflow id, its wall time, the worker's
// peak RSS and its replay time (or why it ended). The bench reads its history from the same server.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';

const RESULT_BYTES = 2000;
const here = (path) => fileURLToPath(new URL(path, import.meta.url));

/** A page of 2,000 bytes (the tool result of every turn). */
async function fetchPage(page) {
  const head = `page ${page}: `;
  return head + 'x'.repeat(RESULT_BYTES - head.length);
}

const { values: args } = parseArgs({
  options: {
    address: { type: 'string' },
    'base-url': { type: 'string' },
    mode: { type: 'string' },
    turns: { type: 'string', default: '0' },
    task: { type: 'string' },
    id: { type: 'string', default: `ts-peer-${randomUUID()}` },
  },
});

Runtime.install({ logger: new DefaultLogger('WARN') });
const modelProvider = createOpenAICompatible({ name: 'bench', baseURL: args['base-url'], apiKey: 'bench' });
const plugin = new AiSdkPlugin({ modelProvider });
const connection = await NativeConnection.connect({ address: args.address });
// A long run's history passes gRPC's default 4 MB message limit.
const client = new Client({
  connection: await Connection.connect({
    address: args.address,
    channelArgs: { 'grpc.max_receive_message_length': 256 * 2 ** 20 },
  }),
});
const taskQueue = `ts-peer-${randomUUID()}`;
const worker = await Worker.create({
  connection,
  taskQueue,
  workflowsPath: here('./workflows.mjs'),
  activities: { fetchPage },
  plugins: [plugin],
});
const started = performance.now();
const [type, workflowArgs] =
  args.mode === 'long' ? ['peerLongRun', [args.task, Number(args.turns)]] : ['peerTree', [args.task]];
let output;
try {
  output = await worker.runUntil(client.workflow.execute(type, { taskQueue, workflowId: args.id, args: workflowArgs }));
} catch (err) {
  // The server ended it (its history past the size limit), or the plugin failed: say so and stop.
  const cause = err.cause ?? err;
  console.log(JSON.stringify({ workflowId: args.id, ended: `${cause.name}: ${cause.message}` }));
  process.exit(0);
}
const wallMs = performance.now() - started;
const history = await client.workflow.getHandle(args.id).fetchHistory();
const replayStarted = performance.now();
await Worker.runReplayHistory({ workflowsPath: here('./workflows.mjs'), plugins: [plugin] }, history, args.id);
const replayMs = performance.now() - replayStarted;
const version = (name) => JSON.parse(readFileSync(here(`./node_modules/${name}/package.json`), 'utf8')).version;
console.log(
  JSON.stringify({
    workflowId: args.id,
    output,
    wallMs,
    replayMs,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    versions: { '@temporalio/ai-sdk': version('@temporalio/ai-sdk'), ai: version('ai'), node: process.versions.node },
  }),
);
process.exit(0);
