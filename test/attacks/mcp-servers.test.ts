/**
 * Attacks by an MCP server the config names (items 25–28 of the threat model, docs/security.md): a listing that pages
 * forever, a tool described in megabytes, progress messages of megabytes, session memory one run could read of another's. The server is the MCP SDK's own, over
 * Streamable HTTP on loopback, answering as a hostile or broken server would.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMcpTools } from '../../activities/mcp.js';
import { parseConfig } from '../../src/config/schema.js';
import { offeredTools, toolMessages, userSays } from '../../src/testing/script.js';
import { createHarness, testConfig, type Harness } from '../support/harness.js';
import { failedWorkflowTasks } from './support.js';

const THREE_MB = 3 * 2 ** 20;
const schema = { type: 'object' as const, properties: {} };

/** Calls of the chatty server's tool, counted: a heartbeat that fails would make the tool run again. */
let chattyCalls = 0;

/** One hostile server per path: `/forever` pages forever, `/wordy` describes in megabytes, `/chatty` reports so. */
function hostile(path: string): Server {
  const server = new Server({ name: `hostile${path}`, version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, (request) => {
    if (path === '/forever') {
      const page = Number(request.params?.cursor ?? '0');
      return { tools: [{ name: `t${page}`, inputSchema: schema }], nextCursor: String(page + 1) };
    }
    if (path === '/wordy') {
      return {
        tools: [
          { name: 'describe', description: 'd'.repeat(THREE_MB), inputSchema: schema },
          {
            name: 'hide',
            description: 'a schema of megabytes',
            inputSchema: { ...schema, properties: { x: { type: 'string', description: 'x'.repeat(THREE_MB) } } },
          },
        ],
      };
    }
    return {
      tools: [
        { name: 'work', description: 'works, and says so at length', inputSchema: schema },
        { name: 'flood', description: 'answers with 20 MB', inputSchema: schema },
      ],
    };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (request.params.name === 'work') {
      chattyCalls += 1;
      const progressToken = request.params._meta?.progressToken;
      if (progressToken !== undefined) {
        await extra.sendNotification({
          method: 'notifications/progress',
          params: { progressToken, progress: 1, total: 2, message: 'p'.repeat(THREE_MB) },
        });
      }
      // Long enough for the activity's heartbeat to carry the progress to the server.
      await new Promise((ok) => setTimeout(ok, 1500));
      return { content: [{ type: 'text', text: 'work done' }] };
    }
    if (request.params.name === 'flood') return { content: [{ type: 'text', text: 'f'.repeat(20 * 2 ** 20) }] };
    return { content: [{ type: 'text', text: `${request.params.name} answered` }] };
  });
  return server;
}

/**
 * A stateful server (`/notes`) that keeps notes per MCP session, as servers with session memory do: `remember` adds
 * one, `recall` reads them. Run A's note must never reach run B.
 */
const notesSessions = new Map<string, StreamableHTTPServerTransport>();
async function notes(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const id = req.headers['mcp-session-id'];
  const known = typeof id === 'string' ? notesSessions.get(id) : undefined;
  if (known) return known.handleRequest(req, res);
  const kept: string[] = [];
  const server = new Server({ name: 'notes', version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      { name: 'remember', inputSchema: { ...schema, properties: { note: { type: 'string' } } } },
      { name: 'recall', inputSchema: schema },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    if (request.params.name === 'remember') kept.push(String(request.params.arguments?.note));
    return { content: [{ type: 'text', text: `notes: ${JSON.stringify(kept)}` }] };
  });
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (session) => void notesSessions.set(session, transport),
  });
  await server.connect(transport);
  await transport.handleRequest(req, res);
}

let http: HttpServer;
let base = '';
const h = {} as Harness;

beforeAll(async () => {
  http = createServer((req, res) => {
    if (req.url?.startsWith('/notes')) return void notes(req, res);
    const server = hostile(new URL(req.url ?? '/', 'http://x').pathname);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close().then(() => server.close()));
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((ok) => http.listen(0, '127.0.0.1', ok));
  base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  Object.assign(h, await createHarness());
  await h.startWorker({
    config: testConfig({
      mcpServers: {
        wordy: { url: `${base}/wordy` },
        chatty: { url: `${base}/chatty`, timeoutSeconds: 30 },
        notes: { url: `${base}/notes`, stateful: true },
      },
      presets: [
        {
          id: 'assistant',
          persona: 'You use MCP tools.',
          tools: ['calculate', 'wordy_describe', 'wordy_hide', 'chatty_work', 'chatty_flood'],
        },
        { id: 'notetaker', persona: 'You keep notes.', tools: ['notes_remember', 'notes_recall'] },
      ],
    }),
  });
}, 120_000);

afterAll(async () => {
  await h.close?.();
  http?.closeAllConnections();
  await new Promise((ok) => http?.close(ok));
});

describe('attacks by an MCP server', () => {
  it('R1.15 attack 25: a server whose tool list pages forever is listed up to 32 pages; the worker starts', async () => {
    const started = Date.now();
    const listing = await listMcpTools(parseConfig({ mcpServers: { forever: { url: `${base}/forever` } } }).mcpServers);
    await listing.close();
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(listing.tools).toHaveLength(32);
    expect(listing.lines).toContain('MCP server "forever": listed more than 32 pages of tools; the rest left out');
  });

  it('R1.15 attack 26: a tool described in 3 MB is offered cut to 2,000 characters; one whose schema is 3 MB is left out; the run completes', async () => {
    const task = 'attack 26: use the wordy tool';
    h.model.add({ name: task, when: userSays(task), reply: { text: 'nothing wedged' } });
    const handle = await h.deputy.startRun({ task });
    expect(await h.deputy.result(handle.workflowId)).toMatchObject({ status: 'completed', output: 'nothing wedged' });
    const [request] = h.model.requests.filter((r) => r.rule === task);
    expect(offeredTools(request!)).toEqual(['calculate', 'wordy_describe', 'chatty_work', 'chatty_flood']);
    const described = request!.body.tools!.find((tool) => tool.function.name === 'wordy_describe')!;
    expect(described.function.description).toBe(`${'d'.repeat(2000)}… [cut: ${THREE_MB} characters]`);
    expect(await failedWorkflowTasks(h.client, handle.workflowId)).toEqual([]);
  });

  it('R1.15 attack 27: a progress message of 3 MB fails no heartbeat; the tool runs once', async () => {
    const task = 'attack 27: do the work';
    h.model.add(
      { name: task, when: userSays(task, 0), reply: { toolCalls: [{ name: 'chatty_work', arguments: {} }] } },
      { name: `${task} done`, when: userSays(task, 1), reply: { text: 'worked once' } },
    );
    chattyCalls = 0;
    const handle = await h.deputy.startRun({ task });
    expect(await h.deputy.result(handle.workflowId)).toMatchObject({ status: 'completed', output: 'worked once' });
    expect(chattyCalls).toBe(1);
    const [after] = h.model.requests.filter((r) => r.rule === `${task} done`);
    expect(toolMessages(after!).join('\n')).toContain('work done');
  }, 60_000);

  it("R1.15 attack 28: a stateful server's session memory belongs to one run: bob's run on the same worker never reads alice's note", async () => {
    const write = 'attack 28: alice writes';
    const read = 'attack 28: bob reads';
    h.model.add(
      {
        name: write,
        when: userSays(write, 0),
        reply: { toolCalls: [{ name: 'notes_remember', arguments: { note: 'alice: the code is 4417' } }] },
      },
      { name: `${write} done`, when: userSays(write, 1), reply: { text: 'noted' } },
      { name: read, when: userSays(read, 0), reply: { toolCalls: [{ name: 'notes_recall', arguments: {} }] } },
      { name: `${read} done`, when: userSays(read, 1), reply: { text: 'read' } },
    );
    const alice = await h.deputy.startRun({ task: write, preset: 'notetaker', tenant: 'alice' });
    expect(await h.deputy.result(alice.workflowId)).toMatchObject({ status: 'completed' });
    const bob = await h.deputy.startRun({ task: read, preset: 'notetaker', tenant: 'bob' });
    expect(await h.deputy.result(bob.workflowId)).toMatchObject({ status: 'completed' });
    const [wrote] = h.model.requests.filter((r) => r.rule === `${write} done`);
    expect(toolMessages(wrote!).join('\n')).toContain('alice: the code is 4417');
    const [recalled] = h.model.requests.filter((r) => r.rule === `${read} done`);
    expect(toolMessages(recalled!).join('\n')).toContain('notes: []');
    expect(toolMessages(recalled!).join('\n')).not.toContain('4417');
  });

  it('R1.15 attack 31: a tool answering 20 MB in one response is a tool error the model reads, not a retried call', async () => {
    const task = 'attack 31: flood me';
    h.model.add(
      { name: task, when: userSays(task, 0), reply: { toolCalls: [{ name: 'chatty_flood', arguments: {} }] } },
      { name: `${task} done`, when: userSays(task, 1), reply: { text: 'flood refused' } },
    );
    const handle = await h.deputy.startRun({ task });
    expect(await h.deputy.result(handle.workflowId)).toMatchObject({ status: 'completed', output: 'flood refused' });
    const [after] = h.model.requests.filter((r) => r.rule === `${task} done`);
    expect(toolMessages(after!).join('\n')).toContain(
      'MCP server "chatty" sent more than 16 MiB in one response; it was abandoned',
    );
    const history = await h.client.workflow.getHandle(handle.workflowId).fetchHistory();
    const attempts = (history.events ?? [])
      .filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 1);
    expect(Math.max(...attempts)).toBe(1);
  }, 60_000);
});
