/**
 * Tools: declared with zod parameters and the scopes a run must hold to be offered them. The declaration is shared;
 * `execute` runs only inside the `runTool` activity.
 */
import { z } from 'zod';
import type { ArtifactAccess } from './artifacts.js';

/** What a tool's `execute` receives besides its arguments. */
export interface ToolContext {
  /** Workflow id of the run that called the tool. */
  runId: string;
  /** Aborted when the run is cancelled or the activity times out. */
  signal: AbortSignal;
  /** Reports progress: Temporal records the last details, and a tool that reports keeps its activity alive. */
  heartbeat(details?: unknown): void;
  /** The run's artifacts: save one, or read one the run may read. */
  artifacts: ArtifactAccess;
}

/** A tool the model can call. */
export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  /** Name the model calls it by (`^[a-zA-Z0-9_-]{1,64}$`). */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  /** Arguments; the JSON schema the model sees is generated from this. */
  parameters: S;
  /** Scopes a run must hold for the tool to be offered. */
  scopes: readonly string[];
  /**
   * The JSON Schema the model sees, when the tool states its own (a tool an MCP server serves); `parameters` still
   * checks the arguments before `execute`. @default generated from `parameters`
   */
  jsonSchema?: Record<string, unknown>;
  /**
   * The tool's description and schema are recorded with the composition of each run offered it, because its source
   * can change them while runs are live (an MCP server): replay and restoration read the recorded ones.
   */
  recordSpec?: boolean;
  /**
   * The stateful MCP server whose session the tool uses: a run's calls to it go to the one worker that holds the
   * run's session with that server, and losing that worker is a tool error.
   */
  session?: string;
  /** How Temporal retries a failed call before the model reads the failure (an MCP server's `retry`). */
  retry?: ToolRetry;
  /**
   * The revision of the tool's source (an MCP server's name, definition and connection settings), recorded with the
   * composition of each run offered it: the run keeps calling that source after a reload changes or removes it.
   */
  source?: string;
  /**
   * Its source marks it as changing the world (an MCP tool annotated `destructiveHint` and not `readOnlyHint`): its
   * calls wait for approval unless the config's `approvals.tools` says `never` for it.
   */
  destructive?: boolean;
  /** Runs the tool; a string is returned as is, anything else as JSON. */
  execute(args: z.infer<S>, context: ToolContext): Promise<unknown>;
}

/** Declares a tool with its argument types inferred from the zod schema. */
export function defineTool<S extends z.ZodType>(tool: ToolDefinition<S>): ToolDefinition<S> {
  return tool;
}

/** How often a failed call is tried, and the longest wait between two tries. */
const ToolRetry = z.object({
  attempts: z.number().int().min(1).max(10),
  maxIntervalSeconds: z.number().positive().max(60),
});
export type ToolRetry = z.infer<typeof ToolRetry>;

/** A tool as the workflow and the model see it: JSON only. */
export const ToolSpec = z.object({
  name: z.string(),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
  scopes: z.array(z.string()),
});
export type ToolSpec = z.infer<typeof ToolSpec>;

/**
 * A tool in a run's composition: its name and scopes, and its description and parameters only in histories from
 * before the worker knew them (newer runs leave them to the worker, which knows them from the registered tool).
 */
export const RunTool = ToolSpec.partial({ description: true, parameters: true }).extend({
  /** The stateful MCP server whose session its calls use (they go to the worker that holds the run's session). */
  session: z.string().min(1).optional(),
  /** Retries of a failed call, recorded with the tool so a run keeps the policy it was offered. */
  retry: ToolRetry.optional(),
  /** The revision of the source it was offered from (see `ToolDefinition.source`). */
  source: z.string().min(1).optional(),
});
export type RunTool = z.infer<typeof RunTool>;

/**
 * Where a worker keeps a tool of an earlier revision of its source, for the runs offered it before a reload changed
 * the source: beside the tools of the sources now configured, under a key no tool name can take.
 */
export function pinnedToolKey(name: string, source: string): string {
  return `${name}@${source}`;
}

/** A tool's parameters as the JSON schema the model sees, generated from zod (no `$schema` key). */
export function parametersSchema(schema: z.ZodType, io: 'input' | 'output' = 'output'): Record<string, unknown> {
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(schema, { target: 'draft-7', io }) as Record<
    string,
    unknown
  >;
  return parameters;
}

/** Turns a tool definition into its JSON spec; the parameters' JSON schema comes from zod. */
export function toToolSpec(tool: ToolDefinition): ToolSpec {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.jsonSchema ?? parametersSchema(tool.parameters),
    scopes: [...tool.scopes],
  };
}

/** A JSON Schema node as `z.toJSONSchema` writes it. */
export type JsonSchema = { readonly [keyword: string]: unknown } | boolean;

/** The contract's own words for a schema's checks, keyed by the location of the keyword (`#/properties/briefs/minItems`). */
export type SchemaMessages = Readonly<Record<string, string>>;

/** Tool names must be what the Chat Completions API accepts. */
export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
