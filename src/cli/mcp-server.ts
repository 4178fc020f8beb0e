/**
 * Deputy as an MCP server (`deputy mcp`): an agent a person already uses hands durable, budgeted work to Deputy.
 * Tools `run`, `status`, `result`, `answer`, `approvals`, `decide`, `cancel`, and each run's tree as a resource. The caller holds no power
 * of its own: runs get the config's default scopes (or its tenant's), a preset the config defines, and limits no
 * wider than the config's; its tenant is the one its token maps to; it reaches only the runs it started, as each
 * run's start records (its memo), never as an id looks.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { loadTree } from '../client/inspect.js';
import { renderTree } from '../client/tree.js';
import type { DeputyConfig } from '../config/schema.js';
import { CallerLimits, narrowLimits } from '../config/caller-limits.js';
import { registerApprovalTools } from './mcp-approvals.js';
import { CallerRuns, callerOf, refusal, reply, RunId, WaitSeconds, Waits, type McpCaller } from './mcp-runs.js';

export { callerOf, narrowLimits, Waits, type McpCaller };

/**
 * Builds the MCP server over a Temporal client for one caller; `config` is what the worker runs with, `waits` the
 * server's waits for runs' ends, shared by every caller.
 */
export function deputyMcpServer(options: {
  client: Client;
  taskQueue: string;
  config: DeputyConfig;
  caller: McpCaller;
  waits: Waits;
}): McpServer {
  const { client, config, caller } = options;
  const runs = new CallerRuns(client, options.taskQueue, caller, options.waits);
  const { deputy } = runs;
  const server = new McpServer({ name: 'deputy', version: '0.1.0' });
  /** `work` on a run this caller started; any other is refused before anything is read of it. */
  const onOwn = (runId: string, work: () => Promise<CallToolResult>) => runs.own(runId).then(work, refusal);

  server.registerTool(
    'run',
    {
      description:
        'Start a durable Deputy run on a task, with a preset and limits (no wider than the server allows); wait for its result up to wait_seconds, else get its id to ask again with `result`.',
      inputSchema: z.strictObject({
        task: z.string().min(1).describe('what the run should do, complete and self-contained'),
        preset: z
          .enum(config.presets.map((p) => p.id) as [string, ...string[]])
          .optional()
          .describe('a preset this server offers'),
        limits: CallerLimits.optional(),
        wait_seconds: WaitSeconds,
      }),
    },
    async ({ task, preset, limits, wait_seconds }, extra) => {
      let runId: string;
      try {
        runId = await runs.start(task, preset, narrowLimits(config, limits));
      } catch (err) {
        return refusal(err);
      }
      return reply(await runs.settle(runId, wait_seconds ?? 30, extra.signal));
    },
  );

  server.registerTool(
    'status',
    {
      description:
        "A run's status, the questions its children wait on, and the calls in its tree waiting for approval.",
      inputSchema: z.strictObject({ run_id: RunId }),
    },
    async ({ run_id }) =>
      onOwn(run_id, async () => {
        const { running: _running, ...now } = await runs.describe(run_id);
        return reply({ runId: run_id, ...now });
      }),
  );

  server.registerTool(
    'result',
    {
      description: "A run's result (output, usage) once it ends; within wait_seconds, else its status.",
      inputSchema: z.strictObject({ run_id: RunId, wait_seconds: WaitSeconds }),
    },
    // A caller that disconnects gives its wait back at once (the request's signal aborts when its connection closes).
    async ({ run_id, wait_seconds }, extra) =>
      onOwn(run_id, async () => reply(await runs.settle(run_id, wait_seconds ?? 0, extra.signal))),
  );

  server.registerTool(
    'answer',
    {
      description:
        'Answer a question a child of the run is waiting on (the oldest open one unless question_id names one).',
      inputSchema: z.strictObject({
        run_id: RunId,
        answer: z.string().min(1),
        question_id: z.string().min(1).optional(),
      }),
    },
    async ({ run_id, answer, question_id }) =>
      onOwn(run_id, async () => {
        const open = await deputy.openQuestions(run_id);
        const question = question_id === undefined ? open[0] : open.find((q) => q.questionId === question_id);
        if (!question) {
          return reply(
            { error: question_id ? `no open question ${question_id} in this run` : 'no open question' },
            true,
          );
        }
        try {
          const answered = await deputy.answer(question.childWorkflowId, answer, question.questionId);
          return reply({ runId: run_id, answered, child: question.taskName });
        } catch (err) {
          return refusal(err);
        }
      }),
  );

  registerApprovalTools(server, deputy, onOwn);

  server.registerTool(
    'cancel',
    { description: 'Cancel a run and every child under it.', inputSchema: z.strictObject({ run_id: RunId }) },
    async ({ run_id }) =>
      onOwn(run_id, async () => {
        await deputy.cancel(run_id);
        return reply({ runId: run_id, cancelled: true });
      }),
  );

  server.registerResource(
    'tree',
    new ResourceTemplate('deputy://runs/{runId}/tree', { list: undefined }),
    { description: "A run's delegation tree: status, tokens, cost and calls per run", mimeType: 'text/plain' },
    async (uri, { runId }) => {
      const id = RunId.parse(runId);
      await runs.own(id);
      return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: renderTree(await loadTree(client, id)) }] };
    },
  );
  return server;
}

/** Serves `make()`'s tools over stdio (the caller started this process). */
export async function serveMcpStdio(server: McpServer): Promise<void> {
  await server.connect(new StdioServerTransport());
}

/**
 * Serves over Streamable HTTP at `/mcp`, statelessly (a server per request), to callers that send one of the tokens
 * as `Authorization: Bearer <token>`, each as the caller its token is; any other request is refused before it
 * reaches a tool.
 */
export async function serveMcpHttp(
  make: (caller: McpCaller) => McpServer,
  options: { tokens: { token: string; tenant?: string }[]; port: number; host?: string },
): Promise<Server> {
  const callers = options.tokens.map(({ token, tenant }) => ({
    expected: digest(`Bearer ${token}`),
    caller: callerOf(token, tenant),
  }));
  const http = createServer((req, res) => {
    const given = req.headers.authorization;
    const presented = given === undefined ? undefined : digest(given);
    // Every token is compared, in constant time, so the time taken says nothing of which one nearly matched.
    let caller: McpCaller | undefined;
    for (const known of callers) if (presented && timingSafeEqual(presented, known.expected)) caller = known.caller;
    if (!caller) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
      res.end(JSON.stringify({ error: 'a bearer token is required' }));
      return;
    }
    if (new URL(req.url ?? '/', 'http://deputy').pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    const server = make(caller);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((ok) => http.listen(options.port, options.host ?? '127.0.0.1', ok));
  return http;
}

const digest = (text: string) => createHash('sha256').update(text).digest();
