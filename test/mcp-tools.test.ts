/**
 * R6.7 tools from MCP servers no one here wrote, installed from the registry by `npm ci`: the reference filesystem
 * server (stdio), the memory server (stdio, stateful) and the "everything" server (Streamable HTTP, behind a proxy
 * that records every message it carries, so a cancellation can be seen arriving at the server).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtinTools } from '../activities/builtin-tools.js';
import { listMcpTools } from '../activities/mcp.js';
import { createRunTool } from '../activities/run-tool.js';
import { pinnedToolKey } from '../src/contract/tools.js';
import { parseConfig } from '../src/config/load.js';
import { ConfigStore } from '../src/config/store.js';
import { forTask, offeredTools, toolMessages, userSays } from '../src/testing/scripted-model.js';
import { freePort } from '../src/testing/ports.js';
import { delegateReply } from './support/delegation.js';
import { createHarness, testConfig, type Harness } from './support/harness.js';
import { scheduledActivities } from './support/history.js';

const serverScript = (name: string) => resolve(`node_modules/@modelcontextprotocol/server-${name}/dist/index.js`);

/** A scratch directory the filesystem server is given, with a note and a 3 MB file in it. */
const scratch = mkdtempSync(join(tmpdir(), 'deputy-mcp-'));
mkdirSync(join(scratch, 'files'));
writeFileSync(join(scratch, 'files', 'note.txt'), 'The launch code word is PERIWINKLE.\n');
writeFileSync(join(scratch, 'files', 'big.txt'), 'lorem ipsum dolor sit amet '.repeat(120_000));
const memoryFile = join(scratch, 'memory.jsonl');

/** Every JSON-RPC message a client sends through it, in order. */
class RecordingProxy {
  readonly sent: { method?: string; params?: Record<string, unknown>; id?: unknown }[] = [];
  #server?: Server;
  url = '';

  async start(target: string): Promise<void> {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        if (body.length > 0) {
          const parsed = JSON.parse(body.toString('utf8')) as unknown;
          this.sent.push(...((Array.isArray(parsed) ? parsed : [parsed]) as RecordingProxy['sent']));
        }
        const out = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (reply) => {
          res.writeHead(reply.statusCode ?? 502, reply.headers);
          reply.pipe(res);
        });
        out.on('error', () => res.destroy());
        out.end(body);
      });
    });
    await new Promise<void>((ok) => this.#server!.listen(0, '127.0.0.1', ok));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/mcp`;
  }

  async close(): Promise<void> {
    this.#server?.closeAllConnections();
    await new Promise((ok) => this.#server?.close(ok));
  }
}

/** The "everything" server over Streamable HTTP on a free port, answering once it listens. */
async function startEverything(): Promise<{ process: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, [serverScript('everything'), 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((ok, fail) => {
    let text = '';
    child.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('listening')) ok();
    });
    child.on('exit', (code) => fail(new Error(`everything server exited (${code}): ${text}`)));
  });
  return { process: child, url: `http://127.0.0.1:${port}` };
}

/** Every payload recorded in a workflow's history, decoded. */
async function recordedPayloads(workflowId: string): Promise<unknown[]> {
  const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
  const found: unknown[] = [];
  const visit = (node: unknown) => {
    if (typeof node !== 'object' || node === null) return;
    if ('payloads' in node && Array.isArray(node.payloads)) {
      for (const payload of node.payloads as Payload[]) found.push(defaultPayloadConverter.fromPayload(payload));
      return;
    }
    for (const value of Object.values(node)) visit(value);
  };
  visit(history.events);
  return found;
}

/** The activities a workflow scheduled, in order, with the queue each was scheduled on. */
const h = {} as Harness;
const proxy = new RecordingProxy();
let everything: ChildProcess;

const mcpServers = () => ({
  files: {
    command: process.execPath,
    args: [serverScript('filesystem'), join(scratch, 'files')],
    scopes: ['tools.files'],
    tools: ['read_text_file', 'list_directory'],
  },
  memory: {
    command: process.execPath,
    args: [serverScript('memory')],
    env: { MEMORY_FILE_PATH: memoryFile },
    stateful: true,
    prefix: 'mem_',
    tools: ['create_entities', 'read_graph'],
  },
  everything: {
    url: proxy.url,
    scopes: ['tools.everything'],
    prefix: 'ev_',
    tools: ['echo', 'trigger-long-running-operation', 'get-tiny-image', 'get-structured-content'],
  },
  gone: { command: process.execPath, args: ['-e', 'process.exit(3)'] },
  dying: { command: process.execPath, args: ['--import', 'tsx', resolve('test/support/dying-mcp-server.ts')] },
});

const config = (files: string[] = ['read_text_file', 'list_directory']) =>
  testConfig({
    presets: [
      {
        id: 'assistant',
        persona: 'You use MCP tools.',
        tools: [
          'calculate',
          'files_read_text_file',
          'files_list_directory',
          'mem_create_entities',
          'mem_read_graph',
          'ev_echo',
          'ev_trigger-long-running-operation',
          'ev_get-tiny-image',
          'ev_get-structured-content',
          'gone_anything',
          'dying_crash',
          'files_get_file_info',
        ],
      },
    ],
    defaultScopes: ['tools.calc', 'tools.files', 'tools.everything'],
    grantableScopes: ['tools.calc', 'tools.files', 'tools.everything', 'run.delegate'],
    delegation: {
      enabled: true,
      activation: 'unconditional',
      childDefaults: { maxTurns: 4, maxTokens: 40_000, maxCostUsd: 0.2 },
    },
    mcpServers: { ...mcpServers(), files: { ...mcpServers().files, tools: files } },
  });

const logged: string[] = [];
const log = console.log;
/** The worker's config, which a test reloads. */
let store: ConfigStore;

beforeAll(async () => {
  const started = await startEverything();
  everything = started.process;
  await proxy.start(started.url);
  store = new ConfigStore(config());
  Object.assign(h, await createHarness());
  console.log = (...args: unknown[]) => void logged.push(args.join(' '));
  await h.startWorker({ config: store, tools: builtinTools() });
}, 60_000);

afterAll(async () => {
  console.log = log;
  await h.close?.();
  await proxy.close();
  everything?.kill();
  rmSync(scratch, { recursive: true, force: true });
});

const SCOPES = ['tools.calc', 'tools.files', 'tools.everything', 'run.delegate'];

describe('R6.7 MCP servers as tool sources', () => {
  it('R6.7 the worker says what each server offers, and which did not answer', () => {
    expect(logged).toContainEqual('deputy: MCP server "files": 2 tools (files_read_text_file, files_list_directory)');
    expect(logged).toContainEqual('deputy: MCP server "memory": 2 tools (mem_create_entities, mem_read_graph)');
    expect(logged.some((line) => line.startsWith('deputy: MCP server "gone" did not answer:'))).toBe(true);
    expect(logged.find((line) => line.includes('"everything":'))).toMatch(/: 4 tools \(ev_echo, /);
  });

  it('R6.7 a run reads a file through the filesystem server; the composition records what it was offered', async () => {
    const task = 'r6.7 read the note';
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [{ name: 'files_read_text_file', arguments: { path: join(scratch, 'files', 'note.txt') } }],
        },
      },
      { name: `${task}:2`, when: forTask(task, 1), reply: { text: 'the word is PERIWINKLE' } },
    );
    const workflowId = h.id('mcp-read');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    const result = await h.deputy.result(workflowId);
    expect(result).toMatchObject({ status: 'completed', output: 'the word is PERIWINKLE' });
    const first = h.model.requests.find((r) => r.rule === `${task}:1`)!;
    expect(offeredTools(first)).toEqual(expect.arrayContaining(['files_read_text_file', 'files_list_directory']));
    expect(offeredTools(first)).not.toContain('gone_anything');
    const spec = first.body.tools!.find((t) => t.function.name === 'files_read_text_file')!.function;
    expect(spec.parameters).toMatchObject({ type: 'object', required: ['path'] });
    const [read] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    expect(read).toContain('The launch code word is PERIWINKLE.');
    // What the run was offered is in its recorded composition, description and schema included.
    const composition = (await recordedPayloads(workflowId)).find(
      (value): value is { tools: { name: string; description?: string; parameters?: unknown }[] } =>
        typeof value === 'object' && value !== null && 'presetRevision' in value,
    );
    expect(composition?.tools.find((tool) => tool.name === 'files_read_text_file')).toMatchObject({
      description: expect.stringMatching(/^Read the complete contents of a file/) as unknown,
      parameters: { type: 'object', required: ['path'] },
    });
  });

  it('R6.7 a 3 MB file read through MCP reaches the model bounded; an image is named, not inlined', async () => {
    const task = 'r6.7 read the big file';
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'files_read_text_file', arguments: { path: join(scratch, 'files', 'big.txt') } },
            { name: 'ev_get-tiny-image', arguments: {} },
          ],
        },
      },
      { name: `${task}:2`, when: forTask(task, 2), reply: { text: 'read' } },
    );
    const workflowId = h.id('mcp-big');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'read' });
    const results = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    const big = results.find((text) => text.includes('lorem'));
    const image = results.find((text) => !text.includes('lorem'));
    expect(big!.startsWith('lorem ipsum dolor sit amet')).toBe(true);
    expect(big).toMatch(/\[truncated: 3\.1 MB → 20 KB\]$/);
    expect(image).toMatch(/\[image image\/png, \d+ bytes, not shown\]/);
    expect(image).not.toMatch(/iVBOR/);
  });

  it('R6.7 an error result and a refused call are tool errors the model reads; the run goes on', async () => {
    const task = 'r6.7 bad calls';
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            { name: 'ev_echo', arguments: {} },
            { name: 'files_read_text_file', arguments: { path: '/etc/passwd' } },
          ],
        },
      },
      { name: `${task}:2`, when: forTask(task, 2), reply: { text: 'noted the errors' } },
    );
    const workflowId = h.id('mcp-errors');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'noted the errors' });
    // Results join the session as they arrive: find each by its server.
    const results = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    expect(results).toHaveLength(2);
    const echo = results.find((text) => text.includes('"everything"'));
    const passwd = results.find((text) => text.includes('"files"'));
    expect(echo).toMatch(/^MCP server "everything", tool "echo": /);
    expect(passwd).toMatch(/^MCP server "files", tool "read_text_file": .*(denied|outside)/i);
    expect(passwd).not.toContain('root:');
  });

  it('49.10 a server that dies on every call is a tool error the model reads within seconds, after its retry policy', async () => {
    const task = '49.10 dying server';
    h.model.add(
      { name: `${task}:1`, when: forTask(task, 0), reply: { toolCalls: [{ name: 'dying_crash', arguments: {} }] } },
      { name: `${task}:2`, when: forTask(task, 1), reply: { text: 'the tool is down' } },
    );
    const workflowId = h.id('mcp-dying');
    const t0 = Date.now();
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'the tool is down' });
    const elapsed = Date.now() - t0;
    const [error] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:2`)!);
    expect(error).toMatch(/^tool "dying_crash" failed: /);
    // The default policy: three attempts, 1 s and 2 s apart; the run's own backoff would take minutes.
    const { events } = await h.client.workflow.getHandle(workflowId).fetchHistory();
    const scheduled = events!.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool');
    const attempts = events!
      .filter((e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === Number(scheduled?.eventId))
      .map((e) => e.activityTaskStartedEventAttributes?.attempt);
    expect(attempts).toEqual([3]);
    expect(scheduled?.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts).toBe(3);
    expect(elapsed).toBeLessThan(60_000);
  });

  it('R6.7 a long tool reports progress as heartbeats; cancelling the run cancels the request at the server', async () => {
    const task = 'r6.7 long operation';
    h.model.add({
      name: `${task}:1`,
      when: forTask(task, 0),
      reply: { toolCalls: [{ name: 'ev_trigger-long-running-operation', arguments: { duration: 60, steps: 60 } }] },
    });
    const workflowId = h.id('mcp-long');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    let details: unknown;
    for (let i = 0; i < 100 && details === undefined; i++) {
      await new Promise((ok) => setTimeout(ok, 100));
      const described = await h.client.workflow.getHandle(workflowId).describe();
      const pending = described.raw.pendingActivities?.find((a) => a.activityType?.name === 'runTool');
      const payload = pending?.heartbeatDetails?.payloads?.[0];
      const decoded = payload
        ? defaultPayloadConverter.fromPayload<{ progress?: number } | undefined>(payload)
        : undefined;
      if (decoded?.progress !== undefined && decoded.progress >= 2) details = decoded;
    }
    expect(details).toMatchObject({ progress: expect.any(Number) as unknown, total: 60 });
    const call = proxy.sent.find(
      (m) => m.method === 'tools/call' && m.params?.name === 'trigger-long-running-operation',
    );
    expect(call).toBeDefined();
    const cancelledAt = Date.now();
    await h.deputy.cancel(workflowId);
    expect((await h.deputy.result(workflowId)).status).toBe('cancelled');
    expect(Date.now() - cancelledAt).toBeLessThan(10_000);
    const cancelled = proxy.sent.find(
      (m) => m.method === 'notifications/cancelled' && m.params?.requestId === call!.id,
    );
    expect(cancelled).toBeDefined();
  });

  it('R6.7 a stateful server keeps state across the calls of a run, all sent to the worker that holds its session', async () => {
    const task = 'r6.7 remember';
    const read = { toolCalls: [{ name: 'mem_read_graph', arguments: {} }] };
    h.model.add(
      {
        name: `${task}:1`,
        when: forTask(task, 0),
        reply: {
          toolCalls: [
            {
              name: 'mem_create_entities',
              arguments: { entities: [{ name: 'Periwinkle', entityType: 'codeword', observations: ['launch'] }] },
            },
          ],
        },
      },
      { name: `${task}:read`, when: forTask(task, 1), reply: read },
      { name: `${task}:done`, when: forTask(task, 2), reply: { text: 'remembered' } },
    );
    const workflowId = h.id('mcp-memory');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'remembered' });
    const [, graph] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:done`)!);
    expect(graph).toContain('"name": "Periwinkle"');
    const scheduled = await scheduledActivities(h.client, workflowId);
    expect(scheduled.filter((a) => a.type === 'openMcpSession')).toHaveLength(1);
    const calls = scheduled.filter((a) => a.type === 'runTool');
    expect(calls.map((c) => c.taskQueue)).toEqual([calls[0]!.taskQueue, calls[0]!.taskQueue]);
    expect(calls[0]!.taskQueue).toMatch(new RegExp(`^${h.taskQueue}-mcp-`));
    expect(readFileSync(memoryFile, 'utf8').match(/"name":"Periwinkle"/g)).toHaveLength(1);
  });

  it('R6.7 R2.3 a child narrowed to one MCP tool is not offered the other, and a call to it is refused', async () => {
    const task = 'r6.7 narrowed child';
    h.model.add(
      {
        name: `${task}:parent`,
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [{ task_name: 'reader', message: 'mcp narrowed reader', allowed_tools: ['files_read_text_file'] }],
        }),
      },
      {
        name: `${task}:child`,
        when: userSays('mcp narrowed reader', 0),
        reply: { toolCalls: [{ name: 'files_list_directory', arguments: { path: join(scratch, 'files') } }] },
      },
      { name: `${task}:child-2`, when: userSays('mcp narrowed reader', 1), reply: { text: 'could not list' } },
      { name: `${task}:parent-2`, when: forTask(task, 1), reply: { text: 'done' } },
    );
    const workflowId = h.id('mcp-narrow');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId });
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed', output: 'done' });
    const child = h.model.requests.find((r) => r.rule === `${task}:child`)!;
    expect(offeredTools(child)).toContain('files_read_text_file');
    expect(offeredTools(child)).not.toContain('files_list_directory');
    const [refused] = toolMessages(h.model.requests.find((r) => r.rule === `${task}:child-2`)!);
    expect(refused).toMatch(/files_list_directory/);
    expect(refused).not.toContain('note.txt');
  });
});

describe('R6.7 MCP servers follow the config', () => {
  it('R6.7 after a reload the worker lists the servers again: a tool now allowed is offered to new runs', async () => {
    const task = 'r6.7 after reload';
    h.model.add({ name: task, when: forTask(task, 0), times: Infinity, reply: { text: 'seen' } });
    const before = h.id('mcp-before');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId: before });
    await h.deputy.result(before);
    const offered = () => offeredTools(h.model.requests.filter((r) => r.rule === task).at(-1)!);
    expect(offered()).not.toContain('files_get_file_info');
    logged.length = 0;
    store.set(config(['read_text_file', 'list_directory', 'get_file_info']));
    await expect
      .poll(() => logged.find((line) => line.includes('MCP server "files"')), { timeout: 20_000 })
      .toBe('deputy: MCP server "files": 3 tools (files_read_text_file, files_list_directory, files_get_file_info)');
    const after = h.id('mcp-after');
    await h.deputy.startRun({ task, scopes: SCOPES }, { workflowId: after });
    await h.deputy.result(after);
    expect(offered()).toContain('files_get_file_info');
  });

  it('R6.7 50.6 a live run and the child inheriting its preset keep the source they were offered after a reload drops the tool', async () => {
    // A run offered the tool, which a reload stops offering before the run calls it: the run keeps its source's
    // revision (the server's entry as it was), and so does a child that inherits its preset after the reload.
    store.set(config(['read_text_file', 'list_directory', 'get_file_info']));
    await expect
      .poll(() => logged.some((line) => line.includes('MCP server "files": 3 tools')), { timeout: 20_000 })
      .toBe(true);
    const kept = 'r6.7 kept after reload';
    const note = join(scratch, 'files', 'note.txt');
    let reach!: () => void;
    const reached = new Promise<void>((ok) => (reach = ok));
    let release!: () => void;
    const released = new Promise<void>((ok) => (release = ok));
    h.model.add(
      {
        name: kept,
        when: forTask(kept, 0),
        reply: async () => {
          reach();
          await released;
          return { toolCalls: [{ name: 'files_get_file_info', arguments: { path: note } }] };
        },
      },
      {
        name: `${kept}:2`,
        when: forTask(kept, 1),
        reply: delegateReply({ briefs: [{ task_name: 'heir', message: 'mcp inherited file info' }] }),
      },
      {
        name: `${kept}:child`,
        when: userSays('mcp inherited file info', 0),
        reply: { toolCalls: [{ name: 'files_get_file_info', arguments: { path: note } }] },
      },
      { name: `${kept}:child-2`, when: userSays('mcp inherited file info', 1), reply: { text: 'the child saw it' } },
      { name: `${kept}:3`, when: forTask(kept, 2), reply: { text: 'it is kept' } },
    );
    const keptId = h.id('mcp-kept');
    await h.deputy.startRun({ task: kept, scopes: SCOPES }, { workflowId: keptId });
    await reached;
    logged.length = 0;
    store.set(config());
    await expect
      .poll(() => logged.some((line) => line.includes('MCP server "files": 2 tools')), { timeout: 20_000 })
      .toBe(true);
    release();
    expect(await h.deputy.result(keptId)).toMatchObject({ status: 'completed', output: 'it is kept' });
    const [info] = toolMessages(h.model.requests.find((r) => r.rule === `${kept}:2`)!);
    expect(info).toMatch(/size: 36/);
    const child = h.model.requests.find((r) => r.rule === `${kept}:child`)!;
    expect(offeredTools(child)).toContain('files_get_file_info');
    const [childInfo] = toolMessages(h.model.requests.find((r) => r.rule === `${kept}:child-2`)!);
    expect(childInfo).toMatch(/size: 36/);
    // A run started after the reload is not offered it.
    const fresh = 'r6.7 fresh after reload';
    h.model.add({ name: fresh, when: forTask(fresh, 0), reply: { text: 'fresh' } });
    const freshId = h.id('mcp-fresh');
    await h.deputy.startRun({ task: fresh, scopes: SCOPES }, { workflowId: freshId });
    await h.deputy.result(freshId);
    expect(offeredTools(h.model.requests.find((r) => r.rule === fresh)!)).not.toContain('files_get_file_info');
  });
});

describe('R6.7 50.6 a pinned source this worker does not know', () => {
  it('R6.7 50.6 a call pinned to a revision this worker does not have is a tool error naming the revision', async () => {
    const [calc] = builtinTools();
    const tools = new Map([['files_get_file_info', { ...calc!, name: 'files_get_file_info', source: 'aaaaaaaaaaaa' }]]);
    const runTool = createRunTool(tools);
    const call = { id: 'c1', name: 'files_get_file_info', arguments: '{}' };
    const input = { grant: 'g', runId: 'r', call, allowedTools: [call.name], scopes: ['tools.calc'] };
    expect(await runTool({ ...input, source: 'bbbbbbbbbbbb' })).toEqual({
      isError: true,
      content:
        'tool "files_get_file_info" is no longer offered by its source (revision bbbbbbbbbbbb is not configured on this worker); use the other tools',
    });
    // Pinned to the revision it has now, or to one it keeps under the pinned key, the tool is found (and reads the
    // arguments, which these are not).
    const bad = { ...input, call: { ...call, arguments: 'not json' } };
    const found = /^arguments for "files_get_file_info" are not valid JSON/;
    expect((await runTool({ ...bad, source: 'aaaaaaaaaaaa' })).content).toMatch(found);
    tools.set(pinnedToolKey(call.name, 'bbbbbbbbbbbb'), tools.get(call.name)!);
    expect((await runTool({ ...bad, source: 'bbbbbbbbbbbb' })).content).toMatch(found);
  });
});

describe('R6.7 MCP server config', () => {
  it('R6.7 bad server entries are refused at start, one line each', () => {
    expect(() =>
      parseConfig({
        mcpServers: {
          'bad name!': { command: 'x' },
          nowhere: { url: 'ftp://example.com/mcp' },
          both: { command: 'x', url: 'http://example.com' },
        },
      }),
    ).toThrow(/mcpServers/);
  });

  it('R6.7 a secret comes from the environment; one that is not set is a line naming it, not a crash', async () => {
    const listing = await listMcpTools(
      {
        echo: parseConfig({
          mcpServers: { echo: { url: proxy.url, headers: { authorization: { env: 'NOPE_TOKEN' } } } },
        }).mcpServers.echo!,
      },
      { env: {} },
    );
    expect(listing.tools).toEqual([]);
    expect(listing.lines).toEqual([
      'MCP server "echo" did not answer: MCP server "echo" needs NOPE_TOKEN, which is not set',
    ]);
  });
});
