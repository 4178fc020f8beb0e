/**
 * Tools from MCP servers, as Deputy tools: the worker lists each configured server's tools at start, and each call
 * runs inside the `runTool` activity like any tool's, so scopes, presets, narrowing to children, the tool caps, retries,
 * timeouts and cancellation are the same. The worker keeps one connection per server (opened again when it is lost);
 * a stateful server gets one per run instead, so what it keeps between calls belongs to that run alone, and a run's
 * calls all come to the worker holding that connection; losing it is a tool error. A server's replies are data.
 */
import { ToolError } from '../src/contract/errors.js';
import { createHash } from 'node:crypto';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { McpServer, McpServers, McpValue } from '../src/config/mcp.js';
import { TOOL_NAME, type ToolContext, type ToolDefinition } from '../src/contract/tools.js';
import { boundedFetch } from './bounded-fetch.js';
import { cut, LIST_TIMEOUT_MS, listAll, MCP_BOUNDS, resolveValue, resultText } from './mcp-replies.js';

/** How long closing a connection waits for messages still being sent. */
const CLOSE_GRACE_MS = 1000;
/** The last bytes of a stdio server's stderr, kept to explain why it did not answer. */
const STDERR_TAIL_BYTES = 2000;

/**
 * The SDK, loaded when a server is first reached: a worker with no MCP server configured (most of them) does not pay
 * for its modules (about 20 MiB of resident memory).
 */
let sdk: Promise<Sdk> | undefined;
type Sdk = Awaited<ReturnType<typeof importSdk>>;
async function importSdk() {
  const [client, stdio, http, types] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  return {
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    getDefaultEnvironment: stdio.getDefaultEnvironment,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    McpError: types.McpError,
    ErrorCode: types.ErrorCode,
  };
}
const loadSdk = (): Promise<Sdk> => (sdk ??= importSdk());

/** What the worker found on its MCP servers. */
export interface McpListing {
  tools: ToolDefinition[];
  /** One line per server and per tool left out, for the worker's log. */
  lines: string[];
  /** Closes the connections the worker keeps. */
  close: () => Promise<void>;
}

/** How the worker reaches its servers. */
export interface McpOptions {
  /** Where `{ env }` values are read. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Where relative `{ file }` values and `cwd`s are resolved. @default process.cwd() */
  baseDir?: string;
}

/** Lists every configured server's tools; a server that does not answer is reported, not fatal. */
export async function listMcpTools(servers: McpServers, options: McpOptions = {}): Promise<McpListing> {
  const sources = Object.entries(servers).map(([name, server]) => new McpSource(name, server, options));
  const listed = await Promise.all(sources.map((source) => source.list()));
  return {
    tools: listed.flatMap((entry) => entry.tools),
    lines: listed.flatMap((entry) => entry.lines),
    close: async () => {
      await Promise.all(sources.map((source) => source.close()));
    },
  };
}

/** Connections ended by a response past its bound, and why. */
const flooded = new WeakMap<Client, Error>();

/** A stateful server's sessions a worker holds, at most, and how long one unused is kept. */
const MAX_SESSIONS = 64;
const SESSION_IDLE_MS = 10 * 60_000;

/** One configured server: its connections and the Deputy tools made of what it lists. */
class McpSource {
  /** What runs offered its tools pin: a change to the server's entry in the config is a new revision. */
  readonly revision: string;
  #kept?: Promise<Client> | undefined;
  /** A stateful server's connections, one per run (by workflow id): what the server keeps for a run is that run's. */
  readonly #sessions = new Map<string, { client: Promise<Client>; usedAt: number }>();

  constructor(
    readonly name: string,
    readonly server: McpServer,
    readonly options: McpOptions,
  ) {
    const entry = JSON.stringify([name, server]);
    this.revision = createHash('sha256').update(entry).digest('hex').slice(0, 12);
  }

  async list(): Promise<{ tools: ToolDefinition[]; lines: string[] }> {
    let listed: Tool[];
    const lines: string[] = [];
    try {
      const client = await this.#client();
      const listing = await listAll(client);
      listed = listing.tools;
      if (listing.cut) lines.push(`MCP server "${this.name}": ${listing.cut}; the rest left out`);
    } catch (err) {
      await this.close();
      return { tools: [], lines: [`MCP server "${this.name}" did not answer: ${(err as Error).message}`] };
    }
    const prefix = this.server.prefix ?? `${this.name}_`;
    const wanted = this.server.tools;
    const tools: ToolDefinition[] = [];
    for (const tool of listed) {
      if (wanted && !wanted.includes(tool.name)) continue;
      const name = `${prefix}${String(tool.name).replace(/[^a-zA-Z0-9_-]/g, '_')}`;
      if (!TOOL_NAME.test(name)) {
        lines.push(`MCP server "${this.name}": tool "${cut(tool.name, 80)}" left out; it is no usable tool name`);
        continue;
      }
      const schemaBytes = Buffer.byteLength(JSON.stringify(tool.inputSchema));
      if (schemaBytes > MCP_BOUNDS.schemaBytes) {
        lines.push(
          `MCP server "${this.name}": tool "${tool.name}" left out; its input schema is ${schemaBytes} bytes, past ${MCP_BOUNDS.schemaBytes}`,
        );
        continue;
      }
      tools.push(this.#tool(name, tool));
    }
    const missing = (wanted ?? []).filter((name) => !listed.some((tool) => tool.name === name));
    if (missing.length > 0) lines.push(`MCP server "${this.name}" does not list: ${missing.join(', ')}`);
    lines.unshift(`MCP server "${this.name}": ${tools.length} tools (${tools.map((t) => t.name).join(', ')})`);
    return { tools, lines };
  }

  async close(): Promise<void> {
    const kept = [...this.#sessions.values()].map((session) => session.client);
    if (this.#kept) kept.push(this.#kept);
    this.#kept = undefined;
    this.#sessions.clear();
    await Promise.all(kept.map((client) => client.then((c) => c.close()).catch(() => undefined)));
  }

  #tool(name: string, tool: Tool): ToolDefinition {
    const { $schema: _ignored, ...schema } = tool.inputSchema;
    return {
      name,
      description: cut(
        tool.description ?? tool.title ?? `${tool.name} (MCP server "${this.name}")`,
        MCP_BOUNDS.descriptionChars,
      ),
      // The server checks its own arguments and answers a bad call with an error the model reads.
      parameters: z.record(z.string(), z.unknown()),
      jsonSchema: schema,
      recordSpec: true,
      ...(this.server.stateful && { session: this.name }),
      retry: this.server.retry,
      source: this.revision,
      scopes: this.server.scopes,
      ...(tool.annotations?.destructiveHint === true &&
        tool.annotations.readOnlyHint !== true && { destructive: true }),
      execute: (args, context) => this.call(tool.name, args as Record<string, unknown>, context),
    };
  }

  /** Calls one tool on the connection the worker keeps to the server. */
  async call(tool: string, args: Record<string, unknown>, context: ToolContext): Promise<string> {
    const client = await (this.server.stateful ? this.#session(context.runId) : this.#client());
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: context.signal,
        timeout: this.server.timeoutSeconds * 1000,
        maxTotalTimeout: this.server.timeoutSeconds * 1000,
        // What a heartbeat carries is bounded: a server's progress is shown, never allowed to fail the heartbeat.
        onprogress: ({ progress, total, message }) =>
          context.heartbeat({
            progress: Number.isFinite(progress) ? progress : 0,
            ...(Number.isFinite(total) && { total }),
            ...(typeof message === 'string' && { message: cut(message, MCP_BOUNDS.progressChars) }),
          }),
      });
      const text = resultText(result as CallToolResult);
      if (result.isError === true) throw new ToolError(`MCP server "${this.name}", tool "${tool}": ${text}`);
      return text;
    } catch (err) {
      const flood = flooded.get(client);
      if (flood && !context.signal.aborted) throw new ToolError(`${flood.message} (tool "${tool}")`);
      throw this.#failure(await loadSdk(), err, tool, context.signal);
    }
  }

  /** A cancelled run's abort passes through; what the server refused is the model's to read; the rest is retried. */
  #failure({ McpError, ErrorCode }: Sdk, err: unknown, tool: string, signal: AbortSignal): unknown {
    if (err instanceof ToolError || signal.aborted || !(err instanceof McpError)) return err;
    const closed = err.code === (ErrorCode.ConnectionClosed as number);
    if (closed && this.server.stateful) {
      return new ToolError(
        `MCP server "${this.name}" lost its connection during "${tool}"; what it held between calls is gone`,
      );
    }
    if (closed) return err;
    return new ToolError(`MCP server "${this.name}", tool "${tool}": ${err.message}`);
  }

  /**
   * The connection a stateful server keeps `run`'s session on, opened at its first call. Sessions unused for ten
   * minutes, or the least recently used past 64, are closed; the run's next call opens a new one, without what the
   * server kept for the old.
   */
  #session(run: string): Promise<Client> {
    const now = Date.now();
    const held = this.#sessions.get(run);
    if (held) {
      held.usedAt = now;
      return held.client;
    }
    for (const [other, session] of [...this.#sessions].sort(([, a], [, b]) => a.usedAt - b.usedAt)) {
      if (now - session.usedAt < SESSION_IDLE_MS && this.#sessions.size < MAX_SESSIONS) break;
      this.#sessions.delete(other);
      void session.client.then((client) => client.close()).catch(() => undefined);
    }
    const client = this.#connect().then((connected) => {
      connected.onclose = () => {
        if (this.#sessions.get(run)?.client === client) this.#sessions.delete(run);
      };
      return connected;
    });
    client.catch(() => {
      if (this.#sessions.get(run)?.client === client) this.#sessions.delete(run);
    });
    this.#sessions.set(run, { client, usedAt: now });
    return client;
  }

  #client(): Promise<Client> {
    this.#kept ??= this.#connect().then((client) => {
      // A lost connection is reported to the calls in flight; the next call connects again.
      client.onclose = () => {
        this.#kept = undefined;
      };
      return client;
    });
    const kept = this.#kept;
    return kept.catch((err: unknown) => {
      if (this.#kept === kept) this.#kept = undefined;
      throw err;
    });
  }

  async #connect(): Promise<Client> {
    const loaded = await loadSdk();
    const client = new loaded.Client({ name: 'deputy', version: '0.1.0' });
    // A response past its bound ends the connection: the calls on it fail at once, as tool errors that say why.
    const { transport, stderr } = this.#transport(loaded, (err) => {
      flooded.set(client, err);
      void client.close().catch(() => undefined);
    });
    // Closing waits (briefly) for what is still being sent: a cancelled call's notice must reach the server.
    const sending = new Set<Promise<void>>();
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      const sent = send(message, options);
      sending.add(sent);
      sent.then(
        () => sending.delete(sent),
        () => sending.delete(sent),
      );
      return sent;
    };
    const close = client.close.bind(client);
    client.close = async () => {
      await Promise.race([Promise.allSettled([...sending]), sleep(CLOSE_GRACE_MS)]);
      await close();
    };
    try {
      await client.connect(transport, { timeout: LIST_TIMEOUT_MS });
    } catch (err) {
      await client.close().catch(() => undefined);
      const tail = stderr().trim();
      throw new Error(`${(err as Error).message}${tail ? ` (stderr: ${tail})` : ''}`, { cause: err });
    }
    return client;
  }

  #transport(
    { StreamableHTTPClientTransport, StdioClientTransport, getDefaultEnvironment }: Sdk,
    onTooBig: (err: Error) => void,
  ): {
    transport: Transport;
    stderr: () => string;
  } {
    const baseDir = this.options.baseDir ?? process.cwd();
    const value = (entry: McpValue) => resolveValue(entry, this.options.env ?? process.env, baseDir, this.name);
    const values = (table: Record<string, McpValue>) =>
      Object.fromEntries(Object.entries(table).map(([key, entry]) => [key, value(entry)]));
    if ('url' in this.server) {
      const headers = values(this.server.headers);
      const transport = new StreamableHTTPClientTransport(new URL(this.server.url), {
        requestInit: { headers },
        fetch: boundedFetch(MCP_BOUNDS.responseBytes, `MCP server "${this.name}"`, onTooBig),
      });
      return { transport, stderr: () => '' };
    }
    const transport = new StdioClientTransport({
      command: this.server.command,
      args: this.server.args,
      env: { ...getDefaultEnvironment(), ...values(this.server.env) },
      cwd: resolve(baseDir, this.server.cwd ?? '.'),
      stderr: 'pipe',
    });
    let tail = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    return { transport, stderr: () => tail };
  }
}
