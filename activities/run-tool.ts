import { ToolError } from '../src/contract/errors.js';
import { activityInfo } from '@temporalio/activity';
import { knownCallerChain, type Chain } from './caller-chain.js';
import { withHeartbeat } from './heartbeat.js';
import { artifactAccess, type ArtifactStore } from '../src/ops/artifacts.js';
import type { MessageKeys } from '../src/ops/message-keys.js';
import { FAILURE } from '../src/contract/failures.js';
import { ApplicationFailure } from '@temporalio/common';
import {
  cutText,
  DEFAULT_PAYLOAD_LIMITS,
  formatBytes,
  MAX_ERROR_BYTES,
  truncationMarker,
  utf8Bytes,
} from '../src/rules/payloads.js';
import type { RunToolInput, RunToolResult } from '../src/contract/activities.js';
import type { ArtifactAccess, ArtifactRef } from '../src/contract/artifacts.js';
import { pinnedToolKey, type ToolDefinition } from '../src/contract/tools.js';
import { holdsScopes } from '../src/contract/scopes.js';
import { describeIssues } from '../src/rules/zod-issues.js';
import { recordToolCall, toolCallSpan } from './telemetry.js';
import type { ApprovalsConfig } from '../src/contract/approvals.js';
import { resolvePolicy, whyApproval } from '../src/rules/approvals.js';
import { approvalDigest } from '../src/ops/approval-proof.js';
import { checkProof } from './approvals.js';

/** Longest tool result the model is shown; the rest is cut with a note. */
const MAX_TOOL_RESULT_CHARS = 20_000;

/** How often a running tool's activity heartbeats on its own (its heartbeat timeout is 10 seconds). */
const HEARTBEAT_EVERY_MS = 2000;

const toolError = (content: string): RunToolResult => ({ content, isError: true });

export interface RunToolOptions {
  /** The payload budget of a result. @default the default `payloads.maxTextBytes` */
  maxTextBytes?: () => number;
  /** With an external payload store: the longest whole result kept beside the model's view. */
  wholeMaxBytes?: number;
  /** Whether a call carries its run's proof that the model made it; without one, nothing runs. */
  madeByModel?: (call: RunToolInput['call']) => boolean;
  /** The config's approvals now: a call it asks approval of runs only with a decision for exactly its arguments. */
  approvals?: () => ApprovalsConfig | undefined;
  /** Where tools save the run's artifacts, and the keys that seal them; without it, a tool's `save` is refused. */
  artifacts?: { store: ArtifactStore; keys: MessageKeys };
}

/**
 * Builds the `runTool` activity. Bad arguments (invalid JSON, schema failures) and refused tools become a tool error
 * the model sees; an exception thrown by the tool itself is left to Temporal's retry policy.
 */
export function createRunTool(
  tools: ReadonlyMap<string, ToolDefinition>,
  {
    maxTextBytes = () => DEFAULT_PAYLOAD_LIMITS.maxTextBytes,
    wholeMaxBytes,
    madeByModel,
    approvals = () => undefined,
    artifacts,
  }: RunToolOptions = {},
) {
  return async function runTool(input: RunToolInput): Promise<RunToolResult> {
    return toolCallSpan(input.call.name, async (span) => {
      if (input.approval) span.setAttribute('deputy.approval.request_id', input.approval.requestId);
      const result = await run(input);
      recordToolCall(span, { ok: !result.isError, bytes: utf8Bytes(result.content), content: result.content });
      return result;
    });
  };

  async function run(input: RunToolInput): Promise<RunToolResult> {
    const { call, source } = input;
    const current = tools.get(call.name);
    // The source the run was offered the tool from, even when a reload has changed it since.
    const tool =
      source === undefined || current?.source === source ? current : tools.get(pinnedToolKey(call.name, source));
    if (!tool && input.allowedTools.includes(call.name)) {
      // Offered when the run began, gone from the worker since: the server no longer lists it, or this worker does not
      // know the revision of the source the run began with (it started after the config changed).
      const revision = source === undefined ? '' : ` (revision ${source} is not configured on this worker)`;
      return toolError(`tool "${call.name}" is no longer offered by its source${revision}; use the other tools`);
    }
    if (!tool || !input.allowedTools.includes(call.name) || !holdsScopes(input.scopes, tool.scopes)) {
      return toolError(`tool "${call.name}" is not available to this run; use only the tools you were given`);
    }
    if (madeByModel && !madeByModel(call)) {
      return toolError(
        `not run: this call of "${call.name}" carries no proof that a model made it in this run (an answer completed by hand is not the model's)`,
      );
    }
    const unapproved = approvalProblem(input, tool, approvals());
    if (unapproved) return toolError(unapproved);
    const parsed = parseArguments(call, tool);
    if (!parsed.ok) return toolError(parsed.error);
    let value: unknown;
    let saved: ArtifactRef[] = [];
    try {
      // A tool that runs longer than the heartbeat timeout stays alive, and its last reported progress stays visible.
      value = await withHeartbeat((signal, heartbeat) => {
        const access = artifactsOf(input, signal);
        saved = access.saved;
        return tool.execute(parsed.data, { runId: input.runId, signal, heartbeat, artifacts: access.access });
      }, HEARTBEAT_EVERY_MS);
    } catch (err) {
      if (err instanceof ToolError) return toolError(boundResult(err.message, maxTextBytes()));
      throw boundedFailure(err, call.name);
    }
    const text = (typeof value === 'string' ? value : JSON.stringify(value)) ?? '';
    const content = boundResult(text, maxTextBytes());
    // At the store's limit: the whole result goes to the store (history holds its reference).
    const keepWhole = wholeMaxBytes !== undefined && content !== text;
    return {
      content,
      isError: false,
      ...(keepWhole && { whole: cutText(text, wholeMaxBytes) }),
      ...(saved.length > 0 && { artifacts: saved }),
    };
  }

  /** What the call may do with artifacts: saved for the run Temporal reports as the caller, not one an input names. */
  function artifactsOf(input: RunToolInput, signal: AbortSignal): { access: ArtifactAccess; saved: ArtifactRef[] } {
    const readable = input.artifacts ?? [];
    const caller = activityInfo().workflowExecution?.workflowId;
    if (artifacts && caller !== undefined)
      return artifactAccess(artifacts.store, artifacts.keys, caller, readable, signal);
    const refused = async (): Promise<never> => {
      throw new ToolError('artifacts are kept only for runs, on a worker built with an artifact store');
    };
    return { access: { readable, save: refused, read: refused }, saved: [] };
  }
}

/**
 * Why the call may not run as far as approvals go, or `undefined`: a decision it carries must be for exactly these
 * arguments (and, with approvers configured, proven by one of them); a call the config asks approval of runs only
 * with one. The run checked all of this before; the worker checks again, from its own config.
 */
function approvalProblem(
  input: RunToolInput,
  tool: ToolDefinition,
  config: ApprovalsConfig | undefined,
): string | undefined {
  const { call, approval } = input;
  if (approval) {
    const digest = approvalDigest(call);
    if (approval.digest !== digest) {
      return `not run: the arguments of this call of "${call.name}" are not those approved in request ${approval.requestId}`;
    }
    const chain = callerChainOf();
    if (!chain) return `not run: the approval of request ${approval.requestId} is checked only for a run that waits`;
    const proof = checkProof(config?.approvers, chain, { ...approval, decision: 'approve' });
    if (!proof.ok) return `not run: the approval of request ${approval.requestId} does not check out: ${proof.reason}`;
    return undefined;
  }
  const why = whyApproval(
    resolvePolicy(config, {}, [{ name: tool.name, destructive: tool.destructive === true }]),
    call.name,
    call.arguments,
  );
  return why && `not run: ${why}, and this call carries no decision; it runs only once approved`;
}

/** The chain of the run Temporal reports as the caller (the activity guard read it first): what a proof is bound to. */
function callerChainOf(): Chain | undefined {
  try {
    return knownCallerChain();
  } catch {
    return undefined; // called as a plain function (a test of its own checks)
  }
}

/** A call's arguments as its tool's parameters read them, or what the model is told about them. */
function parseArguments(
  call: RunToolInput['call'],
  tool: ToolDefinition,
): { ok: true; data: unknown } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    return {
      ok: false,
      error: `arguments for "${call.name}" are not valid JSON (${(err as Error).message}); send one JSON object that matches the tool's parameters`,
    };
  }
  const parsed = tool.parameters.safeParse(raw);
  if (parsed.success) return { ok: true, data: parsed.data };
  return { ok: false, error: `invalid arguments for "${call.name}": ${describeIssues(parsed.error).join('; ')}` };
}

/** A result past the model's view (20,000 characters) or the payload budget is cut with a visible marker. */
function boundResult(text: string, maxBytes: number): string {
  if (text.length <= MAX_TOOL_RESULT_CHARS) return cutText(text, maxBytes);
  const kept = text.slice(0, MAX_TOOL_RESULT_CHARS);
  return cutText(`${kept}\n${truncationMarker(utf8Bytes(text), utf8Bytes(kept))}`, maxBytes);
}

/**
 * A tool's own error goes to Temporal's retry policy as it was thrown (type, retryability), but with its message
 * bounded: an error of megabytes would not fit in history, and its retries would never end.
 */
function boundedFailure(err: unknown, tool: string): unknown {
  if (!(err instanceof Error) || utf8Bytes(err.message) <= MAX_ERROR_BYTES) return err;
  const message = `${cutText(err.message, MAX_ERROR_BYTES)} (tool "${tool}" threw an error of ${formatBytes(utf8Bytes(err.message))})`;
  return err instanceof ApplicationFailure
    ? ApplicationFailure.create({
        type: err.type ?? FAILURE.ToolFailed,
        message,
        nonRetryable: err.nonRetryable ?? false,
      })
    : ApplicationFailure.create({ type: err.name, message, nonRetryable: false });
}
