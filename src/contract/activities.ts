/**
 * What crosses the workflow/activity boundary: one JSON object in (`XInput`), one back (`XResult`).
 */
import type { Preset } from './preset.js';
import type { RunResult, Usage } from './run.js';
import type { SessionEvent, ToolCall } from './session.js';
import type { ChatMessage } from './dialogue.js';
import type { HookInput } from './hooks.js';
import { ResolveRunResult, type ModelPrice } from './composition.js';
import type { RunTool } from './tools.js';
import type { ArtifactRef } from './artifacts.js';
import type { MessageToSign } from './signals.js';
import type { ApprovedCall } from './approvals.js';

/** What one model call may spend: the run's free tokens and micro-USD (`null` = unlimited) and the model's price. */
export interface CallBudget {
  tokens: number | null;
  costMicroUsd: number | null;
  price: ModelPrice;
  /** The most output a call of this kind needs (a summary, a compaction); none for a turn. */
  maxCompletionTokens?: number | undefined;
}

/** Which messages of a run's dialogue a compaction replaces: `[from, to)`, after the persona, before the recent turns. */
export interface CompactionRange {
  from: number;
  to: number;
  /** The prompt's size budget. */
  maxBytes: number;
}

/** A model call's tokens: input (of it, what the provider's prompt cache served and what was written to it) and output. */
export interface CallTokenCounts {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
  cacheWriteTokens?: number;
}

/** Input of `madeByModel`: a steering call, and the first run of the calling run's chain. */
export interface MadeByModelInput {
  call: ToolCall;
  firstRunId: string;
}

/** Input of `resolveRun`: what the run asked for. */
export interface ResolveRunInput {
  preset?: string | undefined;
  model?: string | undefined;
  effort?: string | undefined;
  scopes?: string[] | undefined;
  /** Depth of the run in its tree (0 for a root). */
  depth?: number | undefined;
  /** Tool names a parent granted; `undefined` for a root. */
  allowedTools?: string[] | undefined;
  /** An exact preset definition to run with instead of looking `preset` up. */
  presetDefinition?: Preset | undefined;
  /** A child's preset given by reference: the definition to run with is looked up by its revision. */
  presetAt?: PresetAtRevisionInput | undefined;
  /**
   * The definition came from a caller (an imported or forked session), not from a parent run: its tools are narrowed
   * to what the config's preset of that id (or, when none has it, any of the config's presets) grants.
   */
  presetFromCaller?: boolean | undefined;
  /** The run's tenant; delegation is offered only when it is activated (when the config names tenants). */
  tenant?: string | undefined;
  /** The run is a root (its input has no `origin`): its answer carries the grant of its tree. */
  root?: boolean | undefined;
}

/** What `resolveRun` answers: the composition, and for a root the grant of its tree. */
export type ResolvedRun = ResolveRunResult & { grant?: string };

/** Input of `signMessage`: the message, and the grant of the run that sends it (the admission workflow has none). */
export interface SignMessageInput {
  message: MessageToSign;
  grant?: string | undefined;
}

export { ResolveRunResult };

/** Input of `summarizeContext`: the accepted task and the parent's dialogue, summarised by the parent's model. */
export interface SummarizeContextInput {
  /** The grant of the calling run's tree (from its root's `resolveRun`): the activity acts only for the run it was granted to. */
  grant: string;
  model: string;
  /** Set when `model` is not the run's own: why its calls moved on to it. */
  fallback?: string;
  /** The prompt; for `compactSession` with `compact`, the run's dialogue (what is new since `context`'s base). */
  messages: ChatMessage[];
  /** `compactSession` only: where `messages` start from, as for `callModel`. */
  context?: CallContext;
  /** `compactSession` only: the messages of the dialogue to compact; the worker writes the prompt. */
  compact?: CompactionRange;
  /** What the call may spend; absent: no cap. */
  budget?: CallBudget;
}

/** Result of `summarizeContext`. */
export interface SummarizeContextResult {
  summary: string;
  /** Debited, as a model call's result says. */
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
  cacheWriteTokens?: number;
  /** Billed, as a model call's result says. */
  billed: CallTokenCounts;
}

/** Input of `loadSession`: a run whose session a follow-up goes on from. */
export interface LoadSessionInput {
  workflowId: string;
}

/** Result of `loadSession`. */
export interface LoadSessionResult {
  events: SessionEvent[];
}

/** Input of `runHook`. */
export interface RunHookInput {
  /** The grant of the calling run's tree (from its root's `resolveRun`): the activity acts only for the run it was granted to. */
  grant: string;
  hook: string;
  input: HookInput;
}

/** Input of `resolvePresets`: preset ids named by briefs. */
export interface ResolvePresetsInput {
  ids: string[];
}

/** Result of `resolvePresets`: each id's tools, or why it cannot be used. */
export interface ResolvePresetsResult {
  presets: (
    | {
        id: string;
        ok: true;
        definition: Preset;
        revision: string;
      }
    | { id: string; ok: false; error: string }
  )[];
}

/** Input of `presetAtRevision`: a child's preset given by reference, and the parent run that recorded it. */
export interface PresetAtRevisionInput {
  id: string;
  revision: string;
  parent: { workflowId: string; runId: string };
}

/** Input of `callModel`. */
export interface CallModelInput {
  /** The grant of the calling run's tree (from its root's `resolveRun`): the activity acts only for the run it was granted to. */
  grant: string;
  model: string;
  /** Set when `model` is not the run's own: why its calls moved on to it ("gpt-4.1 was rate limited 3 times"). */
  fallback?: string;
  effort: string | null;
  messages: ChatMessage[];
  /** Tools offered on this call (a name: the worker fills in the registered spec); empty for a synthesis call. */
  tools: (string | RunTool)[];
  /**
   * This is call `seq` of the run; with `baseSeq`, `messages` are only what follows the first `base` messages
   * of call `baseSeq`, which the worker holds (else it fails with `ModelCall.ContextUnknown`). Absent: `messages` are
   * the whole dialogue (a summary's prompt).
   */
  context?: CallContext;
  /** What the call may spend: it sets `max_completion_tokens` to fit, or is not made. Absent: no cap. */
  budget?: CallBudget;
}

/** Where a model call's messages start from. */
export interface CallContext {
  seq: number;
  baseSeq?: number;
  base?: number;
}

/** Result of `callModel`. */
export interface CallModelResult {
  content: string | null;
  toolCalls: ToolCall[];
  /**
   * Debited: the larger of the endpoint's report and Deputy's count, each direction; of the input, what the endpoint
   * reported it served from its prompt cache and wrote to it (none where it reported none).
   */
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
  cacheWriteTokens?: number;
  /** What the endpoint billed: its usage report, Deputy's count where it reported none. */
  billed: CallTokenCounts;
  finishReason: string | null;
}

/** Input of `runTool`. */
export interface RunToolInput {
  /** The grant of the calling run's tree (from its root's `resolveRun`): the activity acts only for the run it was granted to. */
  grant: string;
  runId: string;
  call: ToolCall;
  /** Names of the tools this run may use; anything else is refused. */
  allowedTools: string[];
  scopes: string[];
  /** The revision of the tool's source the run was offered it from, when its source can change (an MCP server). */
  source?: string;
  /** The artifacts the run may read (its own, its children's, its brief's), when it has any. */
  artifacts?: ArtifactRef[];
  /** The decision that let a call run which waited for approval: the worker checks it against the call. */
  approval?: ApprovedCall;
}

/** Input of `openMcpSession`: the run that is about to call a stateful MCP server's tool, and the server. */
export interface OpenMcpSessionInput {
  /** The grant of the calling run's tree (from its root's `resolveRun`): the activity acts only for the run it was granted to. */
  grant: string;
  runId: string;
  server: string;
}

/**
 * Result of `openMcpSession`: the task queue of the worker that answered (the run's calls to the server go there),
 * and how long a call may wait for that worker before the session counts as lost; `null` from a worker that keeps
 * no sessions (Deputy inside a service's own worker), whose calls then go to any worker.
 */
export type OpenMcpSessionResult = { taskQueue: string; startTimeoutSeconds: number } | null;

/** Result of `runTool`: the text the model sees, and whether it is an error. */
export interface RunToolResult {
  /** What the model reads (at most 20,000 characters, and within `payloads.maxTextBytes`). */
  content: string;
  isError: boolean;
  /**
   * The tool's whole result when it was longer than `content` and the worker has an external payload store
   * (cut only past the store's limit, with a marker): kept in the store, referenced from history, read by nobody's
   * model.
   */
  whole?: string;
  /** The artifacts the tool saved for the run. */
  artifacts?: ArtifactRef[];
}

/** Input of `requestAdmission`: which tenant, its cap, and the child asking for a slot. */
export interface AdmissionRequest {
  tenant: string;
  cap: number;
  sweepSeconds: number;
  childWorkflowId: string;
  /** The grant of the asking run's tree. */
  grant: string;
}

/** Result of `closedRuns`: which of the ids name a closed workflow, and which name none. */
export interface ClosedRunsResult {
  closed: string[];
  missing: string[];
}

/** Input of `describeRun` and `awaitRun`: a run that holds a child's workflow id. */
export interface RunRef {
  workflowId: string;
}

/** Result of `describeRun`: what Temporal records of the run holding an id, and what its start says it is. */
export interface DescribeRunResult {
  workflowType: string;
  running: boolean;
  /** The parent Temporal records (never what the run's input claims). */
  parentId: string | null;
  /** From the origin a delegating parent gives the children it starts. */
  invocationId: string | null;
  taskName: string | null;
}

/** Result of `awaitRun`: how a run ended. */
export type AwaitRunResult =
  | { kind: 'result'; result: RunResult }
  | { kind: 'failed'; error: string; usage: Usage | null }
  | { kind: 'cancelled' };
