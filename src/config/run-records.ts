/**
 * A run as Temporal's records have it, for checking what evidence says of the runs it cites: how it ended, whose it
 * is, its answer and spend, and every tool call its tree's models made, read from the histories of the run and of
 * every run it started (payloads decoded as the client's data converter writes them, codecs included). A query would
 * need a worker; a history does not, and no worker can rewrite it.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { decodePayloads } from '../codec/decode.js';
import { DEPUTY_COST_USD, DEPUTY_STATUS, DEPUTY_TENANT } from '../contract/search-attributes.js';
import { usdToMicro } from '../rules/usage.js';

/** What Temporal's records say of one run and its tree; `null` from a lookup when they hold no such run. */
export interface RecordedRun {
  /** It has ended (Temporal closed it). */
  closed: boolean;
  /** It failed its task: Temporal says failed, timed out or terminated, or Deputy says `failed` or `limit_reached`. */
  failed: boolean;
  /** How it ended as Deputy says it (its `DeputyStatus`), else as Temporal does. */
  ended: string;
  tenant: string | undefined;
  /** Its answer, when it completed with one. */
  output: string | null;
  /** Every tool call the models of its tree made, each with the run that made it. */
  toolCalls: { run: string; name: string; arguments: string }[];
  /** Runs started below it, its whole tree. */
  children: number;
  /** What it spent as its result says, and the cost limit its input set (`null` when none or not known). */
  costMicroUsd: number | null;
  maxCostMicroUsd: number | null;
}
export type RunRecords = (workflowId: string) => Promise<RecordedRun | null>;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Runs looked up in the namespace of `client`. */
export function temporalRunRecords(client: Client): RunRecords {
  return async (workflowId) => {
    try {
      return await recordOf(client, workflowId);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    }
  };
}

async function recordOf(client: Client, workflowId: string): Promise<RecordedRun> {
  const handle = client.workflow.getHandle(workflowId);
  const described = await handle.describe();
  const status = described.typedSearchAttributes.get(DEPUTY_STATUS);
  const temporalStatus = described.status.name;
  const closed = !['RUNNING', 'UNSPECIFIED'].includes(temporalStatus);
  const root = await readTree(client, workflowId);
  return {
    closed,
    failed:
      ['FAILED', 'TIMED_OUT', 'TERMINATED'].includes(temporalStatus) ||
      status === 'failed' ||
      status === 'limit_reached',
    ended: status ?? temporalStatus.toLowerCase(),
    tenant: described.typedSearchAttributes.get(DEPUTY_TENANT),
    output: root.output,
    toolCalls: root.toolCalls,
    children: root.runs - 1,
    // A run that ended without a result (failed, cancelled) says what it spent in its cost attribute.
    costMicroUsd: root.costMicroUsd ?? attributeCost(described.typedSearchAttributes.get(DEPUTY_COST_USD)),
    maxCostMicroUsd: root.maxCostMicroUsd,
  };
}

const attributeCost = (usd: number | undefined) => (typeof usd === 'number' ? usdToMicro(usd) : null);

/** The model calls' tool calls of `workflowId` and of every run below it, and its own answer, spend and cost limit. */
async function readTree(
  client: Client,
  workflowId: string,
): Promise<Pick<RecordedRun, 'output' | 'toolCalls' | 'costMicroUsd' | 'maxCostMicroUsd'> & { runs: number }> {
  const decode = async (payloads: temporal.api.common.v1.IPayloads | null | undefined) =>
    (await decodePayloads(client.options.loadedDataConverter, payloads?.payloads))[0];
  const tree: Awaited<ReturnType<typeof readTree>> = {
    output: null,
    toolCalls: [],
    runs: 0,
    costMicroUsd: null,
    maxCostMicroUsd: null,
  };
  const visit = async (id: string, isRoot: boolean) => {
    tree.runs += 1;
    const { events } = await client.workflow.getHandle(id).fetchHistory();
    const callModel = new Set<string>();
    for (const event of (events ?? []) as HistoryEvent[]) {
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name === 'callModel') callModel.add(String(event.eventId));
      const completed = event.activityTaskCompletedEventAttributes;
      if (completed && callModel.has(String(completed.scheduledEventId))) {
        const result = (await decode(completed.result)) as { toolCalls?: { name?: unknown; arguments?: unknown }[] };
        for (const call of result?.toolCalls ?? []) {
          tree.toolCalls.push({ run: id, name: String(call.name), arguments: String(call.arguments) });
        }
      }
      const started = event.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
      if (started) await visit(started, false);
      if (!isRoot) continue;
      const input = event.workflowExecutionStartedEventAttributes?.input;
      if (input) {
        const limits = ((await decode(input)) as { limits?: { maxCostUsd?: unknown } } | undefined)?.limits;
        if (typeof limits?.maxCostUsd === 'number') tree.maxCostMicroUsd = usdToMicro(limits.maxCostUsd);
      }
      const result = event.workflowExecutionCompletedEventAttributes?.result;
      if (result) {
        const ended = (await decode(result)) as { output?: unknown; usage?: { costMicroUsd?: unknown } } | undefined;
        tree.output = typeof ended?.output === 'string' ? ended.output : null;
        const cost = ended?.usage?.costMicroUsd;
        tree.costMicroUsd = typeof cost === 'number' ? cost : null;
      }
    }
  };
  await visit(workflowId, true);
  return tree;
}
