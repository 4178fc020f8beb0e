/**
 * Deputy as an MCP server (`deputy mcp`): an agent a person already uses hands durable, budgeted work to Deputy.
 * Tools `run`, `status`, `result`, `answer`, `cancel`, and each run's tree as a resource. The caller holds no power
 * of its own: runs get the config's default scopes (or its tenant's), a preset the config defines, and limits no
 * wider than the config's; its tenant is the one its token maps to; it reaches only the runs it started, as each
 * run's start records (its memo), never as an id looks.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { z } from 'zod';
import { DeputyClient } from '../client/client.js';
import { loadTree } from '../client/inspect.js';
import { renderTree } from '../client/tree.js';
import type { DeputyConfig } from '../config/schema.js';
import { DeputyError } from '../contract/errors.js';
import { CallerLimits, narrowLimits } from '../config/caller-limits.js';

export { narrowLimits };

// Every tool's arguments are a strict object: a caller that sends what the server does not take (scopes, tools) is
// refused, not quietly ignored.

/** Runs started through the MCP server have ids with this prefix, and it reaches no others. */
const MCP_RUN_PREFIX = 'mcp-';
/** The longest a tool waits for a run's end before answering with its id. */
const MAX_WAIT_SECONDS = 600;

const RunId = z
  .string()
  .regex(new RegExp(`^${MCP_RUN_PREFIX}[0-9a-f-]{36}$`), `a run id this server gave (${MCP_RUN_PREFIX}…)`)
  .describe('the id `run` returned');
const WaitSeconds = z
  .number()
  .min(0)
  .max(MAX_WAIT_SECONDS)
  .optional()
  .describe(`how long to wait for the run to end (0 to ${MAX_WAIT_SECONDS} s); then its id and status come back`);

/** What a tool answers: the JSON as text, and as structured content. */
function reply(value: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value, isError };
}

/** A refusal the caller can act on (a bad id, an unknown preset, an update the run refused). */
function refusal(err: unknown): CallToolResult {
  if (err instanceof DeputyError || err instanceof z.ZodError) return reply({ error: err.message }, true);
  throw err;
}

/** Who calls: the tenant its token maps to (none: the config's default) and an id that names the token, not it. */
export interface McpCaller {
  id: string;
  tenant?: string;
}

/** The caller a token is: its id is a digest of the token, so the memo that records it gives the token away to no one. */
export function callerOf(token: string, tenant?: string): McpCaller {
  return { id: digest(`deputy mcp caller ${token}`).toString('hex').slice(0, 24), ...(tenant && { tenant }) };
}

/** The memo field a run started through the server records its caller in. */
const CALLER_MEMO = 'deputyMcpCaller';

/** The waits for a run's end the server holds at once, over every caller; one more answers at once. */
export class Waits {
  #open = 0;
  constructor(readonly max: number) {}
  /** Takes a place, or says there is none. */
  take(): boolean {
    if (this.#open >= this.max) return false;
    this.#open += 1;
    return true;
  }
  give(): void {
    this.#open -= 1;
  }
}

/** A refusal for a run the caller did not start, or that does not exist: the two are not told apart. */
const notYours = (runId: string) => new DeputyError(`no run ${runId} was started by this caller`);

/** The runs a caller started through the server: their status, questions and results. */
class CallerRuns {
  readonly deputy: DeputyClient;

  constructor(
    readonly client: Client,
    taskQueue: string,
    readonly caller: McpCaller,
    readonly waits: Waits,
  ) {
    this.deputy = new DeputyClient(client, { taskQueue });
  }

  /** Starts a run on `task` as this caller (its tenant, its record in the run's memo); returns its id. */
  async start(task: string, preset: string | undefined, limits: ReturnType<typeof narrowLimits>): Promise<string> {
    const runId = `${MCP_RUN_PREFIX}${randomUUID()}`;
    await this.deputy.startRun(
      {
        task,
        ...(preset !== undefined && { preset }),
        ...(this.caller.tenant !== undefined && { tenant: this.caller.tenant }),
        limits,
      },
      {
        workflowId: runId,
        summary: `agentRun (MCP): ${task.replace(/\s+/g, ' ').slice(0, 70)}`,
        memo: { [CALLER_MEMO]: this.caller.id },
      },
    );
    return runId;
  }

  /** Throws unless `runId` was started by this caller, as the run's start recorded. */
  async own(runId: string): Promise<void> {
    const described = await this.client.workflow
      .getHandle(runId)
      .describe()
      .catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) throw notYours(runId);
        throw err;
      });
    if (described.type !== 'agentRun' || described.memo?.[CALLER_MEMO] !== this.caller.id) throw notYours(runId);
  }

  /** The run's result once it ends within `seconds`, or its status while it is still going. */
  async settle(runId: string, seconds: number): Promise<Record<string, unknown>> {
    const now = await this.describe(runId);
    if (now.running && seconds === 0) return { runId, status: now.status, openQuestions: now.openQuestions };
    if (now.running && !this.waits.take()) {
      return {
        runId,
        status: now.status,
        openQuestions: now.openQuestions,
        waited: false,
        note: `this server already holds ${this.waits.max} waits; ask again with result later`,
      };
    }
    // An ended run's result is there already: return it whatever the wait asked.
    if (!now.running) return { runId, ...(await this.deputy.result(runId)) };
    try {
      return await this.read(runId, seconds);
    } finally {
      this.waits.give();
    }
  }

  private async read(runId: string, seconds: number): Promise<Record<string, unknown>> {
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), seconds * 1000);
    try {
      return { runId, ...(await this.client.withAbortSignal(stop.signal, () => this.deputy.result(runId))) };
    } catch (err) {
      if (!stop.signal.aborted) throw err;
      const later = await this.describe(runId);
      return { runId, status: later.status, openQuestions: later.openQuestions };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Status and the tree's open questions of a run that may still be going. */
  async describe(runId: string) {
    const described = await this.client.workflow.getHandle(runId).describe();
    const status = (described.searchAttributes.DeputyStatus?.[0] as string | undefined) ?? 'starting';
    const running = described.status.name === 'RUNNING';
    const questions = running ? await this.deputy.openQuestions(runId) : [];
    return {
      running,
      status,
      openQuestions: questions.map((q) => ({ questionId: q.questionId, child: q.taskName, question: q.question })),
    };
  }
}

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
    async ({ task, preset, limits, wait_seconds }) => {
      let runId: string;
      try {
        runId = await runs.start(task, preset, narrowLimits(config, limits));
      } catch (err) {
        return refusal(err);
      }
      return reply(await runs.settle(runId, wait_seconds ?? 30));
    },
  );

  server.registerTool(
    'status',
    {
      description: "A run's status, and the questions its children wait on.",
      inputSchema: z.strictObject({ run_id: RunId }),
    },
    async ({ run_id }) =>
      onOwn(run_id, async () => {
        const { status, openQuestions } = await runs.describe(run_id);
        return reply({ runId: run_id, status, openQuestions });
      }),
  );

  server.registerTool(
    'result',
    {
      description: "A run's result (output, usage) once it ends; within wait_seconds, else its status.",
      inputSchema: z.strictObject({ run_id: RunId, wait_seconds: WaitSeconds }),
    },
    async ({ run_id, wait_seconds }) => onOwn(run_id, async () => reply(await runs.settle(run_id, wait_seconds ?? 0))),
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
