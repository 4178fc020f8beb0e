/**
 * R6.7 under crashes, with the reference memory MCP server and worker processes (`npm run worker`) that are
 * SIGKILLed. A server whose state is its file (stateless, connected per call): a worker killed between two calls of
 * one run, a fresh worker finishes it, the state is read and the call that completed is not made again. A stateful
 * server (its state held by the worker's connection): with two workers on the queue every call of a run goes to the
 * worker holding its session, and when that worker is killed the next call is a tool error naming the lost session.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import {
  forTask,
  toolMessages,
  type RecordedRequest,
  type ScriptReply,
  type ScriptRule,
} from '../../src/testing/script.js';
import { createHarness, type Harness } from '../support/harness.js';
import { scheduledActivities } from '../support/history.js';
import type { WorkerProcess } from '../support/worker-process.js';
import { FAULT_CONFIG, startFaultWorker, writeConfig } from './support.js';

const dir = mkdtempSync(join(tmpdir(), 'deputy-mcp-kill-'));
const sharedFile = join(dir, 'shared.jsonl');
const memory = resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const CONFIG = {
  ...FAULT_CONFIG,
  presets: [
    {
      id: 'assistant',
      persona: 'You remember.',
      tools: ['file_create_entities', 'file_read_graph', 'held_create_entities', 'held_read_graph'],
    },
  ],
  mcpServers: {
    // Its graph is in one file every worker's server reads: no session to keep.
    file: {
      command: process.execPath,
      args: [memory],
      env: { MEMORY_FILE_PATH: sharedFile },
      tools: ['create_entities', 'read_graph'],
    },
    // Each worker's server keeps its graph in a file of its own: state only the session's worker can see.
    held: {
      command: process.execPath,
      args: [memory],
      env: { MEMORY_FILE_PATH: { env: 'MEMORY_FILE' } },
      stateful: true,
      sessionStartSeconds: 2,
      tools: ['create_entities', 'read_graph'],
    },
  },
};
const configPath = writeConfig(CONFIG);
const fileOf = (name: string) => join(dir, `${name}.jsonl`);

let h: Harness;
const spawned: WorkerProcess[] = [];

/** A worker process on the harness's queues whose stateful memory server keeps its graph in `fileOf(name)`. */
async function workerProcess(name: string): Promise<WorkerProcess> {
  const worker = await startFaultWorker(h, configPath, { MEMORY_FILE: fileOf(name) });
  spawned.push(worker);
  return worker;
}

const kill = async (worker: WorkerProcess) => {
  worker.kill('SIGKILL');
  await worker.exited;
};

/**
 * A turn whose first ask is held until `release()` (`reached` resolves when it arrives) and never answered: its worker
 * is killed meanwhile. The ask that follows (the call retried on another worker) gets `reply`.
 */
function heldTurn(reply: ScriptRule['reply']) {
  let reach!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((ok) => (reach = ok));
  const released = new Promise<void>((ok) => (release = ok));
  let held = true;
  const rule = {
    times: Infinity,
    reply: async (request: RecordedRequest): Promise<ScriptReply> => {
      if (!held) return typeof reply === 'function' ? reply(request) : reply;
      held = false;
      reach();
      await released;
      return { hang: true };
    },
  };
  return { reached, release, rule };
}

const create = (tool: string) => ({
  toolCalls: [
    { name: tool, arguments: { entities: [{ name: 'Periwinkle', entityType: 'codeword', observations: ['launch'] }] } },
  ],
});
const call = (tool: string) => ({ toolCalls: [{ name: tool, arguments: {} }] });

beforeAll(async () => {
  h = await createHarness();
});

afterAll(async () => {
  for (const worker of spawned) worker.kill();
  await h?.close();
});

const script = (task: string, rules: Omit<ScriptRule, 'name'>[]) =>
  h.model.add(...rules.map((rule, n) => ({ ...rule, name: `${task}:${n}` })));

describe('R6.7 MCP servers when workers crash', () => {
  it("R6.7 R1.1 state in the server's file: killed between two calls, a fresh worker finishes; read back, nothing completed runs twice", async () => {
    const task = 'mcp kill: remember in the file';
    const second = heldTurn(call('file_read_graph'));
    script(task, [
      { when: forTask(task, 0), reply: create('file_create_entities') },
      { when: forTask(task, 1), ...second.rule },
      { when: forTask(task, 2), reply: { text: 'remembered' } },
    ]);
    const worker = await workerProcess('first');
    const id = h.id('mcp-kill');
    await h.deputy.startRun({ task }, { workflowId: id });
    await second.reached;
    await kill(worker);
    second.release();
    await workerProcess('second');
    expect(await h.deputy.result(id)).toMatchObject({ status: 'completed', output: 'remembered' });
    const [created, graph] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    expect(created).toContain('Periwinkle');
    expect(graph).toContain('"name": "Periwinkle"');
    expect((await scheduledActivities(h.client, id)).filter((a) => a.type === 'runTool')).toHaveLength(2);
    expect(readFileSync(sharedFile, 'utf8').match(/"name":"Periwinkle"/g)).toHaveLength(1);
  });

  it('R6.7 a stateful server with two workers on the queue: every call of a run goes to the worker holding its session', async () => {
    for (const worker of spawned.splice(0)) await kill(worker);
    const task = 'mcp kill: remember in the session';
    script(task, [
      { when: forTask(task, 0), reply: create('held_create_entities') },
      ...[1, 2, 3, 4].map((n) => ({ when: forTask(task, n), reply: call('held_read_graph') })),
      { when: forTask(task, 5), reply: { text: 'remembered' } },
    ]);
    await Promise.all([workerProcess('a'), workerProcess('b')]);
    const id = h.id('mcp-pinned');
    await h.deputy.startRun({ task }, { workflowId: id });
    expect(await h.deputy.result(id)).toMatchObject({ status: 'completed', output: 'remembered' });
    const [, ...reads] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:5`)!);
    expect(reads).toHaveLength(4);
    for (const graph of reads) expect(graph).toContain('"name": "Periwinkle"');
    const calls = (await scheduledActivities(h.client, id)).filter((a) => a.type === 'runTool');
    expect(new Set(calls.map((c) => c.taskQueue)).size).toBe(1);
    expect(calls[0]!.taskQueue).toMatch(new RegExp(`^${h.taskQueue}-mcp-`));
    const holding = ['a', 'b'].filter(
      (name) => existsSync(fileOf(name)) && readFileSync(fileOf(name), 'utf8').includes('Periwinkle'),
    );
    expect(holding).toHaveLength(1);
  });

  it("R6.7 the worker holding a run's session is killed: the next call is a tool error naming the lost session; the run finishes", async () => {
    for (const worker of spawned.splice(0)) await kill(worker);
    const task = 'mcp kill: lose the session';
    const second = heldTurn(call('held_read_graph'));
    script(task, [
      { when: forTask(task, 0), reply: create('held_create_entities') },
      { when: forTask(task, 1), ...second.rule },
      { when: forTask(task, 2), reply: { text: 'noted the loss' } },
    ]);
    const holder = await workerProcess('holder');
    const id = h.id('mcp-lost');
    await h.deputy.startRun({ task }, { workflowId: id });
    await second.reached;
    await kill(holder);
    // Another worker (in this process) takes the run over; the session's worker is gone.
    await h.startWorker({
      config: parseConfig(CONFIG),
      mcp: { env: { ...process.env, MEMORY_FILE: fileOf('other') } },
    });
    second.release();
    expect(await h.deputy.result(id)).toMatchObject({ status: 'completed', output: 'noted the loss' });
    const [, lost] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    expect(lost).toBe(
      `tool "held_read_graph" failed: the worker that held this run's session with MCP server "held" is gone: what the server kept for this run is lost; a new call opens a new session`,
    );
  });
});
