/**
 * The peer rows of `npm run bench`: what a team would pick instead of Deputy, the OpenAI Agents SDK on Temporal
 * (`temporalio.openai_agents`, the integration Temporal ships), driven by the same scripted model over HTTP
 * (`bench/peer/peer.py`, in the virtualenv `scripts/install-peer.sh` makes under `.deputy/`). The same long run (a
 * 2 KB tool result a turn) and the same parent + 3 children task (the peer's agents-as-tools, inside one workflow).
 * Without the virtualenv the rows are left out, said in one line.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { forTask, userSays, type ScriptRule } from '../src/testing/script.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import type { ScenarioResult } from './report.js';

const exec = promisify(execFile);
export const PEER_PYTHON = join(PROJECT_ROOT, '.deputy', 'peer-venv', 'bin', 'python');
const PEER_SCRIPT = join(PROJECT_ROOT, 'bench', 'peer', 'peer.py');
const TREE_TASK = 'peer tree: split the work';
const longTask = (turns: number) => `peer long run of ${turns} turns`;

/** What the peer's agents are told: the same turns Deputy's bench runs are told. */
export function peerRules(turnsList: readonly number[]): ScriptRule[] {
  const page = (k: number) => ({ toolCalls: [{ name: 'fetch_page', arguments: { page: k } }] });
  const long = turnsList.flatMap((turns) => [
    ...Array.from({ length: turns }, (_, k) => ({ when: forTask(longTask(turns), k), reply: page(k) })),
    { when: forTask(longTask(turns), turns), reply: { text: `read ${turns} pages` } },
  ]);
  const part = (n: number) => `part ${n} of the work`;
  const tree = [
    {
      when: forTask(TREE_TASK, 0),
      reply: { toolCalls: [1, 2, 3].map((n) => ({ name: `part_${n}`, arguments: { input: part(n) } })) },
    },
    ...[1, 2, 3].flatMap((n) => [
      { when: userSays(part(n), 0), reply: page(n) },
      { when: userSays(part(n), 1), reply: { text: `part ${n} done` } },
    ]),
    { when: forTask(TREE_TASK, 3), reply: { text: 'all parts done' } },
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
}

/** One peer run in a Python process of its own; its history's size as the server reports it. */
async function runPeer(client: Client, address: string, modelUrl: string, args: string[]): Promise<PeerRun> {
  const workflowId = `peer-${args[1]}-${args[1] === 'long' ? `${args[3]}-` : ''}${Date.now()}`;
  const base = ['--address', address, '--base-url', modelUrl, '--id', workflowId, ...args];
  let reported: Partial<PeerRun> = {};
  let ended: string | undefined;
  try {
    const { stdout } = await exec(PEER_PYTHON, [PEER_SCRIPT, ...base], { maxBuffer: 2 ** 26, timeout: 900_000 });
    reported = JSON.parse(stdout.trim().split('\n').at(-1)!) as Partial<PeerRun>;
    ended = reported.ended;
  } catch (err) {
    ended = `the peer failed: ${(err as Error).message.split('\n')[0]}`;
  }
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe();
  if (described.status.name !== 'COMPLETED') ended ??= described.status.name;
  const history = await handle.fetchHistory();
  const toolCalls = (history.events ?? []).filter(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'fetch_page',
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
    ...(ended !== undefined && {
      ended: `${described.status.name.toLowerCase()} after ${toolCalls} tool calls (${ended})`,
    }),
  };
}

/** Deputy's figures the peer rows set beside the peer's: the tree's and the long runs' bytes per turn. */
export interface DeputySide {
  tree: { bytes: number; events: number; medianMs: number };
  bytesPerTurn: Record<number, number>;
}

/** The peer rows: the tree side by side, and bytes per turn as the run grows (Deputy ≤ 0.1× the peer's). */
export async function benchPeer(
  client: Client,
  address: string,
  modelUrl: string,
  turnsList: readonly number[],
  deputy: DeputySide,
): Promise<ScenarioResult[]> {
  if (!existsSync(PEER_PYTHON)) {
    console.log('bench: peer rows left out: run scripts/install-peer.sh to install the OpenAI Agents SDK on Temporal');
    return [];
  }
  const tree = await runPeer(client, address, modelUrl, ['--mode', 'tree', '--task', TREE_TASK]);
  console.log(`bench: peer tree ${tree.bytes} bytes, ${tree.events} events, ${tree.wallMs} ms`);
  const long: Record<number, PeerRun & { bytesPerTurn: number }> = {};
  for (const turns of turnsList) {
    const run = await runPeer(client, address, modelUrl, [
      '--mode',
      'long',
      '--turns',
      `${turns}`,
      '--task',
      longTask(turns),
    ]);
    // A run the server ended early is measured by the turns it made.
    long[turns] = { ...run, bytesPerTurn: Math.round(run.bytes / Math.max(1, Math.min(turns, run.toolCalls))) };
    console.log(
      `bench: peer long ${turns} turns: ${run.bytes} bytes, ${long[turns].bytesPerTurn} bytes/turn${run.ended ? `, ${run.ended}` : ''}`,
    );
  }
  return [peerTreeResult(tree, deputy), peerGrowthResult(long, deputy, turnsList)];
}

function peerTreeResult(tree: PeerRun, deputy: DeputySide): ScenarioResult {
  return {
    id: 'peer-tree',
    title: 'Peer (OpenAI Agents SDK on Temporal): parent + 3 children, one tool call each',
    runs: 1,
    deputy: { ...deputy.tree },
    baseline: {
      bytes: tree.bytes,
      events: tree.events,
      medianMs: tree.wallMs,
      peakRssBytes: tree.peakRssBytes,
      replayMs: tree.replayMs,
      versions: tree.versions ?? {},
      drivenBy:
        'bench/peer/peer.py: Runner.run in a workflow, OpenAIAgentsPlugin, Chat Completions at the scripted model',
    },
    ratio: Math.round((deputy.tree.bytes / tree.bytes) * 100) / 100,
    target: null,
    met: null,
  };
}

function peerGrowthResult(
  long: Record<number, PeerRun & { bytesPerTurn: number }>,
  deputy: DeputySide,
  turnsList: readonly number[],
): ScenarioResult {
  const at = turnsList.includes(200) ? 200 : turnsList.at(-1)!;
  const ratio = (deputy.bytesPerTurn[at] ?? NaN) / long[at]!.bytesPerTurn;
  return {
    id: 'peer-growth',
    title: `Peer: history bytes per turn as a run grows (2 KB tool result a turn), ratio at ${at} turns`,
    runs: 1,
    deputy: { bytesPerTurn: deputy.bytesPerTurn },
    baseline: { long },
    ratio: Math.round(ratio * 1000) / 1000,
    target: { ratioAtMost: 0.1 },
    met: ratio <= 0.1,
  };
}
