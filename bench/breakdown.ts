/**
 * `node --import tsx bench/breakdown.ts`: runs one benchmark tree (parent + 3 children) and one growth run, and prints
 * where their history bytes go, by event type and by activity, so changes to history size can be measured, and what
 * the inspection rules make every run record: its search attributes (at a child's start, in both start events, and in
 * each upsert) and the readable summaries of its workflows and activities.
 * LIST=1 lists each event of the root and its first child with its size; DUMP=<kind> prints matching events;
 * PERSONA=<characters> gives the preset a persona that long.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import proto from '@temporalio/proto';
const { temporal } = proto;
import { builtinTools } from '../activities/builtin-tools.js';
import { DeputyClient } from '../src/client/client.js';
import { parseConfig } from '../src/config/schema.js';
import { ConfigStore } from '../src/config/store.js';
import { startDevServer } from '../src/testing/dev-server.js';
import { fetchPageTool } from '../src/testing/pages.js';
import { ScriptedModelServer } from '../src/testing/scripted-model.js';
import { createDeputyWorker } from '../src/worker/factory.js';
import { benchConfig, benchRules, growthScript } from './script.js';
import { treeHistories } from './trees.js';

Runtime.install({ logger: new DefaultLogger('WARN') });
const TURNS = Number(process.env.TURNS ?? 20);

/** PERSONA=<characters>: the preset's persona that long (a large preset goes to children by reference). */
function withPersona(config: ReturnType<typeof benchConfig>): ReturnType<typeof benchConfig> {
  const chars = Number(process.env.PERSONA ?? 0);
  if (!chars) return config;
  const sentence = 'Keep every answer short and exact. ';
  const persona = sentence.repeat(Math.ceil(chars / sentence.length)).slice(0, chars);
  const presets = (config.presets as { persona: string }[]).map((preset) => ({ ...preset, persona }));
  return { ...config, presets };
}

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/** Bytes the inspection rules add besides the upsert events: search attributes a start event carries, summaries. */
function inspectionBytes(events: HistoryEvent[]) {
  const { SearchAttributes } = temporal.api.common.v1;
  const { UserMetadata } = temporal.api.sdk.v1;
  let startAttributes = 0;
  let summaries = 0;
  for (const event of events) {
    const attributes =
      event.startChildWorkflowExecutionInitiatedEventAttributes?.searchAttributes ??
      event.workflowExecutionStartedEventAttributes?.searchAttributes;
    if (attributes) startAttributes += SearchAttributes.encode(attributes).finish().length;
    if (event.userMetadata) summaries += UserMetadata.encode(event.userMetadata).finish().length;
  }
  return { startAttributes, summaries };
}

/** Prints where a root's tree's history bytes go: by event type (and activity), and what inspection adds. */
function printBreakdown(root: string, histories: Awaited<ReturnType<typeof treeHistories>>): void {
  const byKind = new Map<string, { n: number; bytes: number }>();
  let total = 0;
  for (const [i, { history }] of histories.entries()) {
    const scheduled = new Map<string, string>();
    for (const event of history.events ?? []) {
      const bytes = temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
      total += bytes;
      let kind = String(temporal.api.enums.v1.EventType[event.eventType ?? 0]).replace('EVENT_TYPE_', '');
      const sched = event.activityTaskScheduledEventAttributes;
      if (sched) scheduled.set(String(event.eventId), sched.activityType?.name ?? '?');
      const done = event.activityTaskCompletedEventAttributes ?? event.activityTaskStartedEventAttributes;
      if (sched) kind += ` ${sched.activityType?.name}`;
      if (done) kind += ` ${scheduled.get(String(done.scheduledEventId)) ?? '?'}`;
      if (process.env.LIST && i <= 1) console.log(`${String(bytes).padStart(6)}  ${i}  ${kind}`);
      const dump = process.env.DUMP;
      if (dump && kind.includes(dump) && (process.env.DUMP_ALL || i <= 1))
        console.log(kind, JSON.stringify(event).slice(0, 6000));
      const entry = byKind.get(kind) ?? { n: 0, bytes: 0 };
      entry.n += 1;
      entry.bytes += bytes;
      byKind.set(kind, entry);
    }
  }
  console.log(`\n${root}: ${histories.length} workflows, ${total} bytes`);
  const { startAttributes, summaries } = inspectionBytes(histories.flatMap(({ history }) => history.events ?? []));
  // The upsert events are counted with the others, above.
  const upserts = byKind.get('UPSERT_WORKFLOW_SEARCH_ATTRIBUTES')?.bytes ?? 0;
  console.log(
    `  for inspection: search attributes in start events ${startAttributes}, upsert events ${upserts}, ` +
      `summaries ${summaries} (${startAttributes + upserts + summaries} bytes in all)`,
  );
  for (const [kind, { n, bytes }] of [...byKind].sort((a, b) => b[1].bytes - a[1].bytes))
    console.log(`${String(bytes).padStart(9)}  ${String(n).padStart(4)}  ${kind}`);
}

async function main(): Promise<void> {
  const server = await startDevServer();
  const model = await ScriptedModelServer.start(benchRules(), { quiet: true });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  const queue = `breakdown-${randomUUID().slice(0, 8)}`;
  const store = new ConfigStore(parseConfig(withPersona(benchConfig(true, TURNS))));
  const worker = await createDeputyWorker({
    connection: await NativeConnection.connect({ address: server.address }),
    taskQueue: queue,
    childTaskQueue: `${queue}-bg`,
    config: store,
    model: { apiKey: 'k', baseURL: model.url },
    tools: [...builtinTools(), fetchPageTool],
  });
  const deputy = new DeputyClient(client, { taskQueue: queue });
  await worker.runUntil(async () => {
    const scopes = ['tools.calc', 'tools.notes', 'run.delegate'];
    await deputy.startRun({ task: 'tree-run 1', scopes }, { workflowId: `tree-${queue}` });
    await deputy.result(`tree-${queue}`);
    growthScript.start(TURNS);
    await deputy.startRun({ task: `growth-run on ${TURNS}`, scopes }, { workflowId: `growth-${queue}` });
    await deputy.result(`growth-${queue}`);
  });
  for (const root of [`tree-${queue}`, `growth-${queue}`]) printBreakdown(root, await treeHistories(client, root));
  await model.close();
  await server.env.teardown();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
