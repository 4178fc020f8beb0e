/**
 * R6.7 under a crash: the worker process (`npm run worker`) keeps a stateful connection to the reference memory MCP
 * server; it is SIGKILLed between two calls of one run (after the first completed, while the model decides the
 * second). A fresh worker (its own connection to a fresh server process) finishes the run: the state the first call
 * stored is read by the second, and the call that completed is not made again.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forTask, toolMessages } from '../../src/testing/scripted-model.js';
import { createHarness, type Harness } from '../support/harness.js';
import type { WorkerProcess } from '../support/worker-process.js';
import { FAULT_CONFIG, startFaultWorker, writeConfig } from './support.js';

const TASK = 'mcp kill: remember the code word';
const memoryFile = join(mkdtempSync(join(tmpdir(), 'deputy-mcp-kill-')), 'memory.jsonl');
const configPath = writeConfig({
  ...FAULT_CONFIG,
  presets: [{ id: 'assistant', persona: 'You remember.', tools: ['mem_create_entities', 'mem_read_graph'] }],
  mcpServers: {
    memory: {
      command: process.execPath,
      args: [resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js')],
      env: { MEMORY_FILE_PATH: memoryFile },
      stateful: true,
      prefix: 'mem_',
      tools: ['create_entities', 'read_graph'],
    },
  },
});

let h: Harness;
let worker: WorkerProcess | undefined;
/** The model's second turn is held (and then hangs) until the worker that made the first call is dead. */
let reachSecond!: () => void;
const secondReached = new Promise<void>((ok) => (reachSecond = ok));
let releaseSecond!: () => void;
const secondReleased = new Promise<void>((ok) => (releaseSecond = ok));
let held = true;

beforeAll(async () => {
  h = await createHarness();
  h.model.add(
    {
      name: 'create',
      when: forTask(TASK, 0),
      reply: {
        toolCalls: [
          {
            name: 'mem_create_entities',
            arguments: { entities: [{ name: 'Periwinkle', entityType: 'codeword', observations: ['launch'] }] },
          },
        ],
      },
    },
    {
      name: 'read',
      when: forTask(TASK, 1),
      times: Infinity,
      reply: async () => {
        if (held) {
          held = false;
          reachSecond();
          await secondReleased;
          return { hang: true };
        }
        return { toolCalls: [{ name: 'mem_read_graph', arguments: {} }] };
      },
    },
    { name: 'done', when: forTask(TASK, 2), reply: { text: 'remembered' } },
  );
});

afterAll(async () => {
  worker?.kill();
  await h?.close();
});

describe('R6.7 a worker SIGKILL between two calls to a stateful MCP server', () => {
  it('R6.7 R1.1 killed after the first call completed: a fresh worker finishes, the state is read, nothing completed runs twice', async () => {
    worker = await startFaultWorker(h, configPath);
    expect(worker.output()).toContain('MCP server "memory": 2 tools (mem_create_entities, mem_read_graph)');
    const id = h.id('mcp-kill');
    await h.deputy.startRun({ task: TASK }, { workflowId: id });
    await secondReached;
    worker.kill('SIGKILL');
    await worker.exited;
    releaseSecond();
    worker = await startFaultWorker(h, configPath);
    const result = await h.deputy.result(id);
    expect(result).toMatchObject({ status: 'completed', output: 'remembered' });
    const [created, graph] = toolMessages(h.model.requests.find((r) => r.rule === 'done')!);
    expect(created).toContain('Periwinkle');
    expect(graph).toContain('"name": "Periwinkle"');
    const history = await h.client.workflow.getHandle(id).fetchHistory();
    const calls = (history.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool',
    );
    expect(calls).toHaveLength(2);
    expect(readFileSync(memoryFile, 'utf8').match(/"name":"Periwinkle"/g)).toHaveLength(1);
  });
});
