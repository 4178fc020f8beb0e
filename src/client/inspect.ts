/**
 * Reads a delegation tree from Temporal: the runs sharing a root id (visibility), with usage from each live run's
 * `state` query, a finished run's result, or (a run that failed or was cancelled, or one recorded in the older shape) its
 * memo.
 */
import { WorkflowFailedError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
import { failureMessage } from '../rules/failure-message.js';
import proto from '@temporalio/proto';
import { stateQuery } from '../contract/messages.js';
import { AmountSchema, RunResult, Usage, type RunState } from '../contract/run.js';
import { overLimits } from '../rules/budget.js';
import { microToUsd } from '../rules/usage.js';
import {
  DEPUTY_CONTEXT_MODE,
  DEPUTY_COST_USD,
  DEPUTY_PARENT_ID,
  DEPUTY_PRESET,
  DEPUTY_ROOT_ID,
  DEPUTY_STATUS,
  DEPUTY_TASK_NAME,
  treeQuery,
} from '../contract/search-attributes.js';
import type { TreeNode } from './tree.js';

const STATE_QUERY_TIMEOUT_MS = 3000;

/** A live run's state, or `null` when it does not answer in time. */
async function liveState(client: Client, workflowId: string): Promise<RunState | null> {
  const timeout = new Promise<null>((resolve) => setTimeout(() => resolve(null), STATE_QUERY_TIMEOUT_MS).unref());
  const query = client.workflow
    .getHandle(workflowId)
    .query(stateQuery)
    .catch(() => null);
  return Promise.race([query, timeout]);
}

/** Model calls, which may wait for a worker on the fleet's model queue (its rate limit, a busy fleet). */
const MODEL_CALLS = new Set(['callModel', 'compactSession', 'summarizeContext']);
/** A model call queued longer than this is shown waiting: a worker takes a free queue's task in milliseconds. */
const QUEUED_SHOWN_MS = 1000;

/**
 * How long a live run's model call has waited to be taken from its queue, as Temporal reports its pending activities;
 * `null` when none waits (or the run cannot be described).
 */
async function modelCallQueuedMs(client: Client, workflowId: string): Promise<number | null> {
  const description = await client.workflow
    .getHandle(workflowId)
    .describe()
    .catch(() => null);
  for (const activity of description?.raw.pendingActivities ?? []) {
    const scheduled = activity.scheduledTime?.seconds;
    const waiting =
      activity.state === proto.temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED;
    if (
      !waiting ||
      !MODEL_CALLS.has(activity.activityType?.name ?? '') ||
      scheduled === undefined ||
      scheduled === null
    ) {
      continue;
    }
    const ms = Date.now() - Number(String(scheduled)) * 1000 - Math.floor((activity.scheduledTime?.nanos ?? 0) / 1e6);
    if (ms >= QUEUED_SHOWN_MS) return ms;
  }
  return null;
}

/** A finished run's result (the close event), or why it failed when it returned none. */
async function endResult(client: Client, workflowId: string): Promise<{ result: RunResult | null; error?: string }> {
  try {
    const result = RunResult.safeParse(await client.workflow.getHandle(workflowId).result()).data ?? null;
    return { result, ...(result?.error && { error: result.error }) };
  } catch (err) {
    return { result: null, ...(err instanceof WorkflowFailedError && { error: failureMessage(err) }) };
  }
}

async function toNode(
  client: Client,
  info: Omit<WorkflowExecutionInfo, 'raw'>,
): Promise<{ node: TreeNode; state: RunState | null }> {
  const attrs = info.typedSearchAttributes;
  const memoUsage = Usage.safeParse(info.memo?.deputyUsage);
  const running = info.status.name === 'RUNNING';
  const [state, queuedMs] = running
    ? await Promise.all([liveState(client, info.workflowId), modelCallQueuedMs(client, info.workflowId)])
    : [null, null];
  const failed = info.status.name === 'FAILED' || info.status.name === 'TIMED_OUT';
  const ended = running || (memoUsage.success && !failed) ? null : await endResult(client, info.workflowId);
  const node: TreeNode = {
    workflowId: info.workflowId,
    parentId: attrs.get(DEPUTY_PARENT_ID) ?? null,
    taskName: attrs.get(DEPUTY_TASK_NAME) ?? null,
    // A live run's status and cost come from its worker (visibility is written only where a listing needs it).
    status: running
      ? (state?.status ?? attrs.get(DEPUTY_STATUS) ?? 'running')
      : (attrs.get(DEPUTY_STATUS) ?? info.status.name.toLowerCase()),
    preset: attrs.get(DEPUTY_PRESET) ?? null,
    contextMode: attrs.get(DEPUTY_PARENT_ID) ? (attrs.get(DEPUTY_CONTEXT_MODE) ?? null) : null,
    usage: running ? (state?.usage ?? null) : memoUsage.success ? memoUsage.data : (ended?.result?.usage ?? null),
    costUsd: state ? microToUsd(state.usage.costMicroUsd) : (attrs.get(DEPUTY_COST_USD) ?? null),
  };
  // What the run saved itself (its result lists its children's too).
  const saved = ended?.result?.artifacts?.filter((ref) => ref.savedBy === info.workflowId).length;
  if (saved) node.artifacts = saved;
  const overrun = running
    ? state?.limits && overLimits(state.usage, state.limits)
    : AmountSchema.safeParse(info.memo?.deputyOverrun).data;
  if (overrun) node.overrun = overrun;
  if (queuedMs !== null) node.queuedMs = queuedMs;
  if (ended?.error) node.error = ended.error;
  if (running && state === null) node.unanswered = true;
  // Between attempts of a model call the run's details say which attempt failed and when the next is.
  const retrying = state?.details.match(/retrying: .*/)?.[0];
  if (retrying) node.retrying = retrying;
  const fellBack = state?.session.findLast((e) => e.type === 'message/assistant' && e.fallback !== undefined);
  if (fellBack?.type === 'message/assistant' && fellBack.model && fellBack.fallback) {
    node.fallback = { model: fellBack.model, reason: fellBack.fallback };
  }
  return { node, state };
}

/** The whole tree that `workflowId` belongs to, from its root down. */
export async function loadTree(client: Client, workflowId: string): Promise<TreeNode[]> {
  const description = await client.workflow.getHandle(workflowId).describe();
  const rootId = description.typedSearchAttributes.get(DEPUTY_ROOT_ID) ?? workflowId;
  const infos: Omit<WorkflowExecutionInfo, 'raw'>[] = [];
  for await (const info of client.workflow.list({ query: treeQuery(rootId) })) {
    infos.push(info);
  }
  if (!infos.some((info) => info.workflowId === workflowId)) infos.push(description); // visibility may lag
  const found = await Promise.all(infos.map((info) => toNode(client, info)));
  // What a live parent knows of its children: dispatched in the background, a question waiting for an answer.
  const entries = new Map(found.flatMap(({ state }) => (state?.delegations ?? []).map((e) => [e.childWorkflowId, e])));
  return found.map(({ node }) => {
    const entry = entries.get(node.workflowId);
    if (!entry) return node;
    const open = entry.questions?.find((q) => q.status === 'open');
    return {
      ...node,
      ...(entry.background && { background: true }),
      ...(entry.interjections && { interjections: entry.interjections }),
      ...(entry.overrun && { overrun: entry.overrun }),
      ...(open && { openQuestion: `${open.id}: ${open.question.replace(/\s+/g, ' ').slice(0, 80)}` }),
    };
  });
}
