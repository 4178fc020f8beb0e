/**
 * One tool turn: the calls of the last model answer run in parallel, each result joining the session as soon as it
 * is in (so a child dispatched meanwhile sees it). Steering tools run in the workflow through a name → handler
 * table; every other tool is the `runTool` activity. Deterministic code only.
 */
import {
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import type { RunToolResult } from '../src/contract/activities.js';
import type { ToolCall } from '../src/contract/session.js';
import type { SteeringToolName } from '../src/contract/delegation.js';
import { CHILD_STEERING_TOOLS } from '../src/contract/json-schemas.js';
import { failureMessage, rootMessage } from '../src/rules/failure-message.js';
import { callOptions, joinAll, LOOKUP_OPTIONS, TOOL_CALL_OPTIONS } from './activity-options.js';
import { runDelegation } from './delegation/invocation.js';
import { runFollowup, runInterjection } from './delegation/steering.js';
import { runWait } from './delegation/detached.js';
import { runAnswerChild, runAskParent } from './delegation/questions.js';
import { now, type Run } from './run/run.js';
import { awaitApproval, type Gate } from './approvals.js';
import { whyApproval } from '../src/rules/approvals.js';

const { runTool } = proxyActivities<DeputyActivities>(TOOL_CALL_OPTIONS);
const { madeByModel } = proxyLocalActivities<DeputyActivities>(LOOKUP_OPTIONS);

type Handler = (call: ToolCall, run: Run) => Promise<RunToolResult>;

/**
 * The workflow's handler of each steering tool in the registry (`src/contract/delegation.ts`): a tool added there
 * does not compile until it has one here.
 */
const STEERING: Record<SteeringToolName, Handler> = {
  delegate: runDelegation,
  interject: runInterjection,
  followup: runFollowup,
  wait: runWait,
  answer_child: runAnswerChild,
  ask_parent: runAskParent,
};

/** One call's result; never rejects but with a cancellation (a failing tool is a tool error the model reads). */
function executeTool(run: Run, call: ToolCall, allowedTools: string[]): Promise<RunToolResult> {
  const handler = Object.hasOwn(STEERING, call.name) ? STEERING[call.name as SteeringToolName] : undefined;
  const steer = handler && sealedOnly(handler);
  // Every child may ask its parent; it is a channel back, not a capability.
  if (steer && CHILD_STEERING_TOOLS.includes(call.name as SteeringToolName)) {
    if (!run.origin) return runToolActivity(run, call, allowedTools);
    return settled(
      () => steer(call, run),
      (err) => ({ content: `"${call.name}" failed: ${failureMessage(err)}; nobody was asked`, isError: true }),
    );
  }
  if (steer && allowedTools.includes(call.name) && run.composition.delegation) {
    // No infrastructure error on a delegation path fails the parent: the model reads it as a tool error.
    return settled(
      () => steer(call, run),
      (err) => ({ content: `"${call.name}" failed: ${failureMessage(err)}; nothing more was done`, isError: true }),
    );
  }
  return runToolActivity(run, call, allowedTools);
}

/**
 * A steering call runs in workflow code, so a worker first checks that a model answer in this run made it: an
 * answer completed by hand starts no child and sends no message.
 */
function sealedOnly(handler: Handler): Handler {
  return async (call, run) => {
    const { firstExecutionRunId } = workflowInfo();
    const checked = await madeByModel.executeWithOptions({ summary: `check ${call.name} ${call.id}` }, [
      { call, firstRunId: firstExecutionRunId },
    ]);
    if (checked) {
      // A steering tool the config names waits for its decision like any other (a delegation's cost is checked
      // where it is planned).
      const why = whyApproval(run.composition.approvals, call.name, call.arguments);
      const gate = why === undefined ? undefined : await awaitApproval(run, call, why);
      if (gate && !gate.ok) return gate.result;
      return handler(call, run);
    }
    return {
      content: `not run: this call of "${call.name}" carries no proof that a model made it in this run (an answer completed by hand is not the model's)`,
      isError: true,
    };
  };
}

/**
 * Any other tool is the `runTool` activity's (which refuses a tool the run was not offered); a stateful MCP server's
 * tool runs on the worker that holds the run's session with it.
 */
function runToolActivity(run: Run, call: ToolCall, allowedTools: string[]): Promise<RunToolResult> {
  const tool = run.composition.tools.find((t) => t.name === call.name);
  const server = tool?.session;
  const input = {
    runId: run.workflowId,
    call,
    allowedTools,
    scopes: run.composition.scopes,
    grant: run.treeGrant,
    ...(run.artifacts.readable.length > 0 && { artifacts: run.artifacts.readable }),
    // The source revision the run was offered the tool from: it keeps calling that one after a reload.
    ...(tool?.source !== undefined && { source: tool.source }),
  };
  const options = {
    summary: `runTool ${call.name}`,
    // A source's own policy: a server that fails every call is a tool error within seconds, not minutes.
    ...(tool?.retry && {
      retry: {
        initialInterval: '1 second',
        backoffCoefficient: 2,
        maximumInterval: tool.retry.maxIntervalSeconds * 1000,
        maximumAttempts: tool.retry.attempts,
      },
    }),
  };
  return settled(
    async () => {
      const gate = await approvalFor(run, call, allowedTools);
      if (gate && !gate.ok) return gate.result;
      const pinned = server === undefined ? {} : await run.mcpSessions.optionsFor(server, run);
      // The deadline is read once the call may run: a wait for its approval has used some of what was left.
      return runTool.executeWithOptions({ ...options, ...callOptions(run), ...pinned }, [
        { ...input, ...(gate && { approval: gate.approval }) },
      ]);
    },
    (err) => {
      const lost = server === undefined ? undefined : run.mcpSessions.lost(server, err);
      return { content: `tool "${call.name}" failed: ${lost ?? rootMessage(err)}`, isError: true };
    },
  );
}

/**
 * A call the run's approvals name waits for its decision before it runs (one the run was not offered is refused by
 * `runTool` without asking anybody).
 */
async function approvalFor(run: Run, call: ToolCall, allowedTools: string[]): Promise<Gate | undefined> {
  if (!allowedTools.includes(call.name)) return undefined;
  const why = whyApproval(run.composition.approvals, call.name, call.arguments);
  return why === undefined ? undefined : awaitApproval(run, call, why);
}

/** `start()`'s result, or `failed(err)` for what it threw; a cancellation goes through. */
async function settled(
  start: () => Promise<RunToolResult>,
  failed: (err: unknown) => RunToolResult,
): Promise<RunToolResult> {
  try {
    return await start();
  } catch (err) {
    if (isCancellation(err)) throw err;
    return failed(err);
  }
}

/** Runs `calls`; answers `refused` with a tool error because `maxToolCalls` leaves no room for them. */
export async function toolTurn(run: Run, calls: ToolCall[], refused: ToolCall[]): Promise<void> {
  setCurrentDetails(
    `turn ${run.account.usage.modelCalls}: running ${calls.map((c) => c.name).join(', ') || 'no tools'}`,
  );
  const allowedTools = run.composition.tools.map((tool) => tool.name);
  run.reservedInAnswer = 0;
  const runOne = async (call: ToolCall) => {
    const { content, isError, artifacts } = await executeTool(run, call, allowedTools);
    run.artifacts.saved(artifacts);
    run.append({ type: 'tool/result', at: now(), toolCallId: call.id, name: call.name, content, isError });
  };
  await joinAll(calls.map(runOne));
  toolsDone(run, calls, refused);
}

/** The turn's tools ended: they are counted, and the refused calls are answered. */
function toolsDone(run: Run, calls: ToolCall[], refused: ToolCall[]): void {
  run.account.recordToolCalls(calls.length);
  for (const call of refused) {
    run.append({
      type: 'tool/result',
      at: now(),
      toolCallId: call.id,
      name: call.name,
      content: 'not run: this run has used all of its tool calls (maxToolCalls)',
      isError: true,
    });
  }
}
