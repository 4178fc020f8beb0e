/**
 * The config's MCP servers: where each one is (a command over stdio, or a URL over Streamable HTTP), the scopes a run
 * must hold to be offered its tools, which of them are offered, and the names they get. Workflow-safe (zod only):
 * values are resolved by the worker (`activities/mcp.ts`), never sent to a workflow.
 */
import { z } from 'zod';

/**
 * A value of an MCP server's environment or headers: text written in the config, or read from the worker's
 * environment (`{ env: NAME }`) or a file (`{ file: path }`) when the worker connects. Secrets belong in the last two:
 * the config may be shared, a run's input never carries them, and nothing of them is recorded.
 */
export const McpValue = z.union([
  z.string(),
  z.strictObject({ env: z.string().min(1) }),
  z.strictObject({ file: z.string().min(1) }),
]);
export type McpValue = z.infer<typeof McpValue>;

const common = {
  /** Scopes a run must hold to be offered this server's tools. */
  scopes: z.array(z.string()).default([]),
  /** The server's tools offered, by their own names; absent: all it lists. */
  tools: z.array(z.string().min(1)).optional(),
  /** Put before each tool's name (`files_` gives `files_read_file`). @default `<server>_` */
  prefix: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{0,32}$/, 'letters, digits, _ and - only, at most 32')
    .optional(),
  /**
   * The server keeps state between calls on one connection: a run's calls all go to the worker that holds the run's
   * session, and a session lost (its connection or its worker) is a tool error. Otherwise a call goes to any worker.
   * Either way each worker keeps one connection to the server, opened again when it is lost.
   */
  stateful: z.boolean().default(false),
  /**
   * A stateful server: how long a run's call may wait for the worker holding the run's session before the session
   * counts as lost (a tool error; the next call opens a new session). A live worker takes a call at once.
   */
  sessionStartSeconds: z.number().positive().max(600).default(30),
  /** The longest one call may take; progress the server reports does not extend it. */
  timeoutSeconds: z.number().positive().max(3600).default(240),
  /**
   * A call that fails (the server crashed, the connection dropped, the call timed out) is tried this often, waiting
   * 1 s, then twice as long each time up to `maxIntervalSeconds`, before the model reads the failure as a tool
   * error. An error the server answers with is read at once. The default gives a failing server about 3 s.
   */
  retry: z
    .strictObject({
      attempts: z.number().int().min(1).max(10).default(3),
      maxIntervalSeconds: z.number().positive().max(60).default(4),
    })
    .default({ attempts: 3, maxIntervalSeconds: 4 }),
};

/** A server the worker starts: a command speaking MCP over stdio. */
const McpStdioServer = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** Added to a minimal environment (PATH, HOME, …): the worker's own environment is not passed on. */
  env: z.record(z.string(), McpValue).default({}),
  /** Working directory. @default the worker's */
  cwd: z.string().min(1).optional(),
  ...common,
});

/** A server reached over Streamable HTTP. */
const McpHttpServer = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  headers: z.record(z.string(), McpValue).default({}),
  ...common,
});

export const McpServer = z.union([McpStdioServer, McpHttpServer]);
export type McpServer = z.infer<typeof McpServer>;

/** MCP servers by name (the name is the default prefix of their tools' names). */
export const McpServers = z.record(
  z.string().regex(/^[a-zA-Z0-9_-]{1,32}$/, 'letters, digits, _ and - only'),
  McpServer,
);
export type McpServers = z.infer<typeof McpServers>;
