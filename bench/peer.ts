/**
 * The peer rows of `npm run bench`: what a team would pick instead of Deputy, each driven by the same scripted model
 * over HTTP, the same long run (a 2 KB tool result a turn) and the same parent + 3 children task (subagents as tools,
 * inside one workflow):
 *
 * - Python: the OpenAI Agents SDK on Temporal (`temporalio.openai_agents`, the integration Temporal ships),
 *   `bench/peer/peer.py`, in the virtualenv `scripts/install-peer.sh` makes under `.deputy/`;
 * - TypeScript: Temporal's AI SDK plugin (`@temporalio/ai-sdk` with the AI SDK it names), `bench/ts-peer/peer.mjs`,
 *   with the packages `scripts/install-ts-peer.sh` installs under `bench/ts-peer/`.
 *
 * A peer that is not installed is left out, said in one line.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { forTask, userSays, type ScriptRule } from '../src/testing/script.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import type { ScenarioResult } from './report.js';
import { actionsOf } from './actions.js';
import { cacheShare, withPromptCache, type CacheShare } from './prompt-cache.js';
import type { ScriptedModelServer } from '../src/testing/scripted-model.js';

const exec = promisify(execFile);
export const PEER_PYTHON = join(PROJECT_ROOT, '.deputy', 'peer-venv', 'bin', 'python');
const TS_PEER = join(PROJECT_ROOT, 'bench', 'ts-peer');

/** One peer: how to run it, and what its rows are called. */
interface Peer {
  /** What its tasks start with: each peer has tasks of its own (a script rule answers once). */
  prefix: string;
  /** Prefix of its rows' ids. */
  id: string;
  label: string;
  command: string;
  script: string;
  installed: () => boolean;
  install: string;
  drivenBy: string;
}

const PEERS: Peer[] = [
  {
    prefix: 'peer',
    id: 'peer',
    label: 'OpenAI Agents SDK on Temporal',
    command: PEER_PYTHON,
    script: join(PROJECT_ROOT, 'bench', 'peer', 'peer.py'),
    installed: () => existsSync(PEER_PYTHON),
    install: 'scripts/install-peer.sh',
    drivenBy:
      'bench/peer/peer.py: Runner.run in a workflow, OpenAIAgentsPlugin, Chat Completions at the scripted model',
  },
  {
    prefix: 'ts peer',
    id: 'ts-peer',
    label: 'AI SDK plugin on Temporal, TypeScript',
    command: process.execPath,
    script: join(TS_PEER, 'peer.mjs'),
    installed: () => existsSync(join(TS_PEER, 'node_modules', '@temporalio', 'ai-sdk', 'package.json')),
    install: 'scripts/install-ts-peer.sh',
    drivenBy:
      'bench/ts-peer/peer.mjs: generateText in a workflow, AiSdkPlugin, @ai-sdk/openai-compatible (Chat Completions) at the scripted model',
  },
];

/** The page tool's activity, as each peer names it. */
const PAGE_ACTIVITIES = ['fetch_page', 'fetchPage'];

const treeTask = (peer: Peer) => `${peer.prefix} tree: split the work`;
const longTask = (peer: Peer, turns: number) => `${peer.prefix} long run of ${turns} turns`;

/** What the peers' agents are told: the same turns Deputy's bench runs are told. */
export function peerRules(turnsList: readonly number[]): ScriptRule[] {
  return PEERS.flatMap((peer) => rulesOf(peer, turnsList));
}

function rulesOf(peer: Peer, turnsList: readonly number[]): ScriptRule[] {
  const page = (k: number) => ({ toolCalls: [{ name: 'fetch_page', arguments: { page: k } }] });
  const long = turnsList.flatMap((turns) => [
    ...Array.from({ length: turns }, (_, k) => ({ when: forTask(longTask(peer, turns), k), reply: page(k) })),
    { when: forTask(longTask(peer, turns), turns), reply: { text: `read ${turns} pages` } },
  ]);
  const part = (n: number) => `${peer.prefix}: part ${n} of the work`;
  const tree = [
    {
      when: forTask(treeTask(peer), 0),
      reply: { toolCalls: [1, 2, 3].map((n) => ({ name: `part_${n}`, arguments: { input: part(n) } })) },
    },
    ...[1, 2, 3].flatMap((n) => [
      { when: userSays(part(n), 0), reply: page(n) },
      { when: userSays(part(n), 1), reply: { text: `part ${n} done` } },
    ]),
    { when: forTask(treeTask(peer), 3), reply: { text: 'all parts done' } },
  ];
  return [...long, ...tree];
}

interface PeerRun {
  workflowId: string;
  wallMs: number;
  replayMs: number;
  peakRssBytes: number;
  versions?: Record<string, string>;
  events: number;
  bytes: number;
  /** Why the run did not complete (the server's history limit), when it did not. */
  ended?: string;
  /** Tool calls it made (short of the turns asked when it did not complete). */
  toolCalls: number;
  /** Billable actions its history records (`bench/actions.ts`). */
  actions: number;
}

/** One peer run in a process of its own; its history's size as the server reports it. */
async function runPeer(
  peer: Peer,
  client: Client,
  address: string,
  modelUrl: string,
  args: string[],
): Promise<PeerRun> {
  const workflowId = `${peer.id}-${args[1]}-${args[1] === 'long' ? `${args[3]}-` : ''}${Date.now()}`;
  const base = ['--address', address, '--base-url', modelUrl, '--id', workflowId, ...args];
  let reported: Partial<PeerRun> = {};
  let ended: string | undefined;
  try {
    const { stdout } = await exec(peer.command, [peer.script, ...base], { maxBuffer: 2 ** 26, timeout: 900_000 });
    reported = JSON.parse(stdout.trim().split('\n').at(-1)!) as Partial<PeerRun>;
    ended = reported.ended;
  } catch (err) {
    // Its own last words say why (the command line alone does not).
    const said = (err as { stderr?: string }).stderr?.trim().split('\n').at(-1);
    ended = `the peer failed: ${said || (err as Error).message.split('\n')[0]}`;
  }
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe();
  if (described.status.name !== 'COMPLETED') ended ??= described.status.name;
  const history = await handle.fetchHistory();
  const toolCalls = (history.events ?? []).filter((e) =>
    PAGE_ACTIVITIES.includes(e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
  ).length;
  return {
    workflowId,
    wallMs: Math.round(reported.wallMs ?? NaN),
    replayMs: Math.round(reported.replayMs ?? NaN),
    peakRssBytes: reported.peakRssBytes ?? NaN,
    ...(reported.versions && { versions: reported.versions }),
    events: described.historyLength,
    bytes: described.historySize ?? NaN,
    toolCalls,
    actions: actionsOf([history]).total,
    ...(ended !== undefined && {
      ended: `${described.status.name.toLowerCase()} after ${toolCalls} tool calls (${ended})`,
    }),
  };
}

/** Deputy's figures the peer rows set beside the peer's: the tree's and the long runs' bytes per turn. */
export interface DeputySide {
  tree: { bytes: number; events: number; medianMs: number; actions: number };
  bytesPerTurn: Record<number, number>;
  actionsPerTurn: Record<number, number>;
  /** The share of its shortest long run's input a provider's cache served, compaction on and off. */
  cache: { compactionOn?: CacheShare | undefined; compactionOff?: CacheShare | undefined };
}

/** The peer's long runs by turn count, with their history bytes and billable actions a turn. */
type LongRuns = Record<number, PeerRun & { bytesPerTurn: number; actionsPerTurn: number }>;

/** The peer rows, each peer's: the tree side by side, bytes and actions per turn as the run grows. */
export async function benchPeer(
  client: Client,
  address: string,
  model: ScriptedModelServer,
  turnsList: readonly number[],
  deputy: DeputySide,
): Promise<ScenarioResult[]> {
  const modelUrl = model.url;
  const rows: ScenarioResult[] = [];
  for (const peer of PEERS) {
    if (!peer.installed()) {
      console.log(`bench: ${peer.label} rows left out: run ${peer.install} to install it`);
      continue;
    }
    rows.push(...(await peerRows(peer, { client, address, model, modelUrl, turnsList, deputy })));
  }
  return rows;
}

/** What every peer is run against: the server, the scripted model, the turn counts and Deputy's side. */
interface PeerBench {
  client: Client;
  address: string;
  model: ScriptedModelServer;
  modelUrl: string;
  turnsList: readonly number[];
  deputy: DeputySide;
}

async function peerRows(
  peer: Peer,
  { client, address, model, modelUrl, turnsList, deputy }: PeerBench,
): Promise<ScenarioResult[]> {
  const tree = await runPeer(peer, client, address, modelUrl, ['--mode', 'tree', '--task', treeTask(peer)]);
  console.log(
    `bench: ${peer.id} tree ${tree.bytes} bytes, ${tree.events} events, ${tree.wallMs} ms${tree.ended ? `, ${tree.ended}` : ''}`,
  );
  const long: LongRuns = {};
  let cache: CacheShare | undefined;
  for (const turns of turnsList) {
    const runLong = () =>
      runPeer(peer, client, address, modelUrl, [
        '--mode',
        'long',
        '--turns',
        `${turns}`,
        '--task',
        longTask(peer, turns),
      ]);
    // The shortest run is billed by a provider with a prompt cache, as Deputy's is.
    const cached = turns === turnsList[0];
    const run = cached ? await withPromptCache(model, runLong) : await runLong();
    if (cached) cache = cacheShare(model, longTask(peer, turns));
    // A run the server ended early is measured by the turns it made.
    const done = Math.max(1, Math.min(turns, run.toolCalls));
    long[turns] = {
      ...run,
      bytesPerTurn: Math.round(run.bytes / done),
      actionsPerTurn: Math.round((run.actions / done) * 100) / 100,
    };
    console.log(
      `bench: ${peer.id} long ${turns} turns: ${run.bytes} bytes, ${long[turns].bytesPerTurn} bytes/turn${run.ended ? `, ${run.ended}` : ''}`,
    );
  }
  return [
    peerTreeResult(peer, tree, deputy),
    peerPerTurnResult('growth', peer, long, deputy, turnsList),
    peerPerTurnResult('actions', peer, long, deputy, turnsList),
    {
      id: `${peer.id}-cache`,
      title: `Peer (${peer.label}): share of a ${turnsList[0]}-turn run's input a provider's prompt cache served`,
      runs: 1,
      deputy: deputy.cache,
      baseline: { ...cache },
      ratio: Math.round(((deputy.cache.compactionOn?.share ?? NaN) / (cache?.share ?? NaN)) * 100) / 100,
      target: null,
      met: null,
    },
  ];
}

function peerTreeResult(peer: Peer, tree: PeerRun, deputy: DeputySide): ScenarioResult {
  return {
    id: `${peer.id}-tree`,
    title: `Peer (${peer.label}): parent + 3 children, one tool call each`,
    runs: 1,
    deputy: { ...deputy.tree },
    baseline: {
      bytes: tree.bytes,
      events: tree.events,
      medianMs: tree.wallMs,
      actions: tree.actions,
      peakRssBytes: tree.peakRssBytes,
      replayMs: tree.replayMs,
      versions: tree.versions ?? {},
      ...(tree.ended && { ended: tree.ended }),
      drivenBy: peer.drivenBy,
    },
    ratio: Math.round((deputy.tree.bytes / tree.bytes) * 100) / 100,
    target: null,
    met: null,
  };
}

/** The turn that the peer rows compare at: 200 when the bench ran it. */
const comparedAt = (turnsList: readonly number[]) => (turnsList.includes(200) ? 200 : turnsList.at(-1)!);

/** The per-turn rows: history bytes a turn (at most 0.1× the peer's) and billable actions a turn (at most the peer's). */
const PER_TURN = {
  growth: {
    figure: 'bytesPerTurn',
    title: (label: string, at: number) =>
      `Peer (${label}): history bytes per turn as a run grows (2 KB tool result a turn), ratio at ${at} turns`,
    atMost: 0.1,
    digits: 3,
    // Every turn count of both sides.
    shown: (deputy: DeputySide, long: LongRuns) => ({
      deputy: { bytesPerTurn: deputy.bytesPerTurn },
      baseline: { long },
    }),
  },
  actions: {
    figure: 'actionsPerTurn',
    title: (label: string, at: number) => `Peer (${label}): billable actions a turn (from the histories), ${at} turns`,
    atMost: 1,
    digits: 2,
    // The compared turn's.
    shown: (deputy: DeputySide, long: LongRuns, at: number) => ({
      deputy: { actionsPerTurn: deputy.actionsPerTurn[at] ?? NaN },
      baseline: { actionsPerTurn: long[at]!.actionsPerTurn, actions: long[at]!.actions },
    }),
  },
} as const;

function peerPerTurnResult(
  row: keyof typeof PER_TURN,
  peer: Peer,
  long: LongRuns,
  deputy: DeputySide,
  turnsList: readonly number[],
): ScenarioResult {
  const { figure, title, atMost, digits, shown } = PER_TURN[row];
  const at = comparedAt(turnsList);
  const ratio = (deputy[figure][at] ?? NaN) / long[at]![figure];
  const scale = 10 ** digits;
  return {
    id: `${peer.id}-${row}`,
    title: title(peer.label, at),
    runs: 1,
    ...shown(deputy, long, at),
    ratio: Math.round(ratio * scale) / scale,
    target: { ratioAtMost: atMost },
    met: ratio <= atMost,
  };
}
