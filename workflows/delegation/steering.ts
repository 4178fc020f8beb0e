/**
 * Steering live and finished children: interjections and follow-ups. Deterministic code only.
 */
import { LOOKUP_OPTIONS } from '../activity-options.js';
import type { DeputyActivities } from '../../activities/index.js';
import { proxyActivities } from '@temporalio/workflow';
import { sendSigned } from '../signed-messages.js';
import type { RunToolResult } from '../../src/contract/activities.js';
import { cutText, jsonBytes, formatBytes } from '../../src/rules/payloads.js';
import type { Brief, InterjectArgs } from '../../src/contract/delegation.js';
import type { ToolCall } from '../../src/contract/session.js';
import { interjectionSignal } from '../../src/contract/messages.js';
import { decideRestoration } from '../../src/rules/restoration.js';
import { parseSteeringArgs } from '../../src/contract/checks/contract-checks.js';
import { renderParentContext, takeContinuedSnapshot } from '../../src/rules/context.js';
import type { Run } from '../run/run.js';
import { toolError } from './plan.js';
import { planChild, type ChildPlan } from '../../src/rules/run-start.js';
import { Delegation } from './invocation.js';

const { resolvePresets, loadSession } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

/**
 * Sends a message to a live child. A child dispatched with context also gets the parent's dialogue since its
 * snapshot, as a continued block; a `none` child gets only the message. The choice made at dispatch sticks.
 */
export async function deliverInterjection(
  args: InterjectArgs,
  run: Run,
): Promise<{ ok: true; childWorkflowId: string } | { ok: false; error: string }> {
  const entry = run.children.lastNamed(args.task_name);
  const child = entry && run.children.byId(entry.childWorkflowId);
  if (!entry)
    return {
      ok: false,
      error: `no child named "${args.task_name}"; the children are: ${run.children.ledger.map((e) => e.taskName).join(', ') || 'none'}`,
    };
  if (entry.status !== 'running' || !child) {
    return { ok: false, error: `child "${args.task_name}" is not running (status ${entry.status}); nothing was sent` };
  }
  let content = args.message;
  const mark = run.children.snapshotMark(entry.childWorkflowId);
  if (entry.preparation.contextMode !== 'none' && mark !== undefined) {
    const fresh = takeContinuedSnapshot(run.events, (event) => run.session.appendedAfter(event, mark));
    if (fresh.length > 0)
      content = `${renderParentContext(fresh, true)}\n\n## Message from your parent\n${args.message}`;
    run.children.markSnapshot(entry.childWorkflowId, run.appended);
  }
  content = cutText(content, run.payloads.maxTextBytes);
  const n = (entry.interjections ?? 0) + 1;
  await sendSigned(interjectionSignal, {
    to: entry.childWorkflowId,
    id: `interjection:${n}`,
    body: { content },
    grant: run.treeGrant,
  });
  child.interjected(n);
  return { ok: true, childWorkflowId: entry.childWorkflowId };
}

/** Reads the `{ task_name, message }` arguments of `interject` and `followup`; a problem is a tool error. */
function parseChildMessage(call: ToolCall) {
  return parseSteeringArgs(call.name === 'followup' ? 'followup' : 'interject', call.arguments);
}

/** The `interject` tool: delivers, or explains as a tool error why it could not. */
export async function runInterjection(call: ToolCall, run: Run): Promise<RunToolResult> {
  const parsed = parseChildMessage(call);
  if (!parsed.ok) return toolError(parsed.error);
  const delivered = await deliverInterjection(parsed.args, run);
  return delivered.ok
    ? { content: `delivered to ${delivered.childWorkflowId}`, isError: false }
    : toolError(delivered.error);
}

/**
 * The `followup` tool: a finished child goes on with a new message in a new child run that restores its
 * session (its background included) and its composition: the preset it selected, resolved now (or refused if gone),
 * else this run's own. The ledger links the new run to the old one.
 */
export async function runFollowup(call: ToolCall, run: Run): Promise<RunToolResult> {
  const parsed = parseChildMessage(call);
  if (!parsed.ok) return toolError(parsed.error);
  const { task_name: taskName, message } = parsed.args;
  const source = run.children.lastNamed(taskName);
  if (!source) return toolError(`no child named "${taskName}"; nothing was spawned`);
  if (source.status === 'reserved' || source.status === 'running' || source.status === 'rejected') {
    return toolError(
      `child "${taskName}" is ${source.status}; follow up once it has finished (or interject while it runs)`,
    );
  }
  // Only a child this run really started: the id of one refused at its start belongs to another run.
  if (!source.started) {
    return toolError(`child "${taskName}" was never started (${source.summary ?? source.status}); nothing was spawned`);
  }
  if (run.children.count + 1 > run.delegationSettings.maxChildrenPerRun) {
    return toolError(
      `this run has started ${run.children.count} of its ${run.delegationSettings.maxChildrenPerRun} children; nothing was spawned`,
    );
  }
  const { events } = await loadSession({ workflowId: source.childWorkflowId });
  const decision = decideRestoration(events);
  let childComposition: ChildPlan['composition'];
  if (decision.kind === 'independent') {
    const { presets } = await resolvePresets({ ids: [decision.presetId] });
    const found = presets[0];
    if (!found?.ok) {
      return toolError(
        `cannot restore "${taskName}": it selected preset "${decision.presetId}" (revision ${decision.revision}), which is no longer registered; nothing was spawned`,
      );
    }
    childComposition = { definition: found.definition, revision: found.revision, selected: true };
  } else {
    const { presetDefinition: definition, presetRevision: revision } = run.composition;
    childComposition = { definition, revision, selected: false };
  }
  // The same child continued: every narrowing of the brief it follows, its role's model included.
  const narrowing = source.narrowing ?? {};
  const role = narrowing.role ?? (decision.kind === 'independent' ? decision.presetId : undefined);
  const brief: Brief = {
    task_name: taskName,
    message,
    ...(role !== undefined && { role }),
    ...(narrowing.model !== undefined && { model: narrowing.model }),
    ...(narrowing.effort !== undefined && { effort: narrowing.effort as Brief['effort'] }),
    ...(narrowing.allowedTools !== undefined && { allowed_tools: narrowing.allowedTools }),
    ...(narrowing.limits !== undefined && { limits: narrowing.limits }),
  };
  const plan = planChild(brief, childComposition, run.planningView(), Date.now());
  if (!plan.ok) return toolError(`${plan.error}; nothing was spawned`);
  if (jsonBytes(events) > run.payloads.maxInputBytes) {
    return toolError(
      `cannot follow up "${taskName}": its session is ${formatBytes(jsonBytes(events))}, past this run's payload budget (${formatBytes(run.payloads.maxInputBytes)}); nothing was spawned`,
    );
  }
  const followup: ChildPlan = {
    ...plan.plan,
    // The choice made at dispatch sticks: the follow-up keeps its source's context mode and snapshot.
    contextMode: source.preparation.contextMode,
    snapshotMark: run.children.snapshotMark(source.childWorkflowId),
    restore: { from: source.childWorkflowId, events },
  };
  return new Delegation(run, call, { events: [], mark: run.appended }).launch([followup], narrowing.returnShape);
}
