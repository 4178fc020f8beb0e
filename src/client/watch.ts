/**
 * Watching a delegation tree: one ordered stream of typed events across a root run and every descendant,
 * read from Temporal's own record of each run — its event history, followed with the server's long poll
 * (`GetWorkflowExecutionHistory` with `waitNewEvent`) — so following a tree costs the workers nothing: no query, no
 * update, no extra history. Model and tool calls are activities, children are child workflows, questions, answers
 * and interjections are signed signals (each an event once a worker has checked it) and updates: each becomes an
 * event as the server records it.
 *
 * Order: per run, history order. Across runs, causal: a child's events come after the parent's `delegation/started`
 * for it, and the parent's `delegation/joined` after the child's `run/ended`. Every event carries a cursor; `watch`
 * with `since: cursor` resumes after that event, without loss or duplicates.
 */
import type { Client } from '@temporalio/client';
import { decodePayloads } from '../codec/decode.js';
// A CommonJS package: Node's ESM loader sees only its default export.
import proto from '@temporalio/proto';
import type { temporal } from '@temporalio/proto';
import type { CallModelInput, CallModelResult, RunToolInput, RunToolResult } from '../contract/activities.js';
import type { ModelPrice } from '../contract/composition.js';
import type { RunInput, RunResult } from '../contract/run.js';
import type { MessageToSign, VerifyMessageInput, VerifyMessageResult } from '../contract/signals.js';
import { callCostMicroUsd, microToUsd, usdToMicro } from '../rules/usage.js';
import { overLimits } from '../rules/budget.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
/** What a follower remembers of a scheduled activity until it ends. */
interface ActivityInfo {
  type: string;
  model?: string;
  tool?: string;
  /** A message from another run being checked (`verifyMessage`). */
  message?: MessageToSign;
  /** Its end is in history: live output stops. */
  ended?: boolean;
}

/** How often a follower reads a running model call's heartbeat for live output. */
const LIVE_OUTPUT_POLL_MS = 250;
type Payloads = temporal.api.common.v1.IPayloads | null | undefined;
const { EventType } = proto.temporal.api.enums.v1;

/** What every event says: which run, where in its history, when, and how to resume after it. */
interface EventBase {
  /** Workflow id of the run the event belongs to. */
  run: string;
  /** Its parent's workflow id (`null` for the root). */
  parent: string | null;
  /** Position in the run's history (continue-as-new segments go on counting from their own 1). */
  seq: number;
  /** When the server recorded it (ISO 8601). */
  at: string;
  /** `watch(rootId, { since: cursor })` resumes after this event. */
  cursor: string;
}

/** Usage as a run's result reports it. */
export interface WatchUsage {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  modelCalls: number;
  toolCalls: number;
}

/** The events of `DeputyClient.watch`. Names and fields are a contract (README "Watching runs"). */
export type WatchEvent = EventBase &
  (
    | { type: 'run/started'; taskName: string | null; depth: number; task: string }
    | {
        type: 'run/ended';
        status: string;
        /** The limit that ended the run, if one did. */
        limit: string | null;
        /** A limit ended it and a synthesis call wrote its answer (status `completed`, `limit` set). */
        synthesis: boolean;
        usage: WatchUsage | null;
        output: string | null;
      }
    | { type: 'model/started'; model: string; activity: string }
    /**
     * Live output: a model call's answer as it is written, read from the pending activity's heartbeat (tokens so
     * far, the end of the text). Not resumable: its cursor is that of the event before it.
     */
    | { type: 'model/progress'; model: string; activity: string; outputTokens: number; partial: string }
    | {
        type: 'model/finished';
        model: string;
        activity: string;
        inputTokens: number;
        outputTokens: number;
        costUsd: number | null;
        finishReason: string | null;
        toolCalls: string[];
      }
    | { type: 'model/failed'; model: string; activity: string; error: string }
    | { type: 'tool/called'; name: string }
    | { type: 'tool/result'; name: string; ok: boolean; bytes: number }
    | {
        type: 'delegation/started';
        child: string;
        taskName: string;
        reserved: { maxTokens: number | null; maxCostUsd: number | null };
      }
    | { type: 'delegation/refused'; reason: string }
    | {
        type: 'delegation/joined';
        child: string;
        status: string;
        usage: WatchUsage | null;
        /** How far the child's spend passed what was reserved for it (an endpoint billed past the cap), or `null`. */
        overrun: { tokens: number; costUsd: number } | null;
      }
    | { type: 'question/asked'; child: string; questionId: string; question: string }
    | { type: 'question/answered'; questionId: string; from: string }
    | { type: 'interjection'; from: string; to: string | null }
    | { type: 'message/received' }
  );

export interface WatchOptions {
  /** Resume after the event that carried this cursor. @default from the root's start */
  since?: string;
  /** Stops the watch (the iterator then ends). */
  signal?: AbortSignal;
}

/** Per run: [runId of the segment being read, last history event id read in it, its parent]. */
type Positions = Record<string, [runId: string, eventId: number, parent: string | null]>;
const encodeCursor = (positions: Positions) => Buffer.from(JSON.stringify(positions)).toString('base64url');
function decodeCursor(cursor: string): Positions {
  try {
    const positions = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as Positions;
    if (positions && typeof positions === 'object') return positions;
  } catch {
    // reported below
  }
  throw new Error('not a watch cursor: pass the `cursor` of an event this client returned');
}

/** A small async queue: followers push, the iterator pulls. */
class Channel<T> {
  readonly #items: T[] = [];
  #wake: (() => void) | undefined;
  #error: Error | undefined;
  #open = true;
  push(item: T) {
    this.#items.push(item);
    this.#wake?.();
  }
  fail(error: unknown) {
    this.#error ??= error instanceof Error ? error : new Error(String(error));
    this.#wake?.();
  }
  close() {
    this.#open = false;
    this.#wake?.();
  }
  async *drain(): AsyncGenerator<T> {
    for (;;) {
      if (this.#error !== undefined) throw this.#error;
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (!this.#open) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }
}

const time = (event: HistoryEvent) => {
  const t = event.eventTime;
  return t ? new Date(Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString() : '';
};
const usageOf = (usage: RunResult['usage'] | undefined): WatchUsage | null =>
  usage
    ? {
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        costUsd: microToUsd(usage.costMicroUsd),
        modelCalls: usage.modelCalls,
        toolCalls: usage.toolCalls,
      }
    : null;
/** How far a child's spend passed what was reserved for it (its token and cost caps), or `null`. */
const overrunOf = (
  usage: RunResult['usage'] | undefined,
  reserved: { maxTokens: number | null; maxCostUsd: number | null } | undefined,
): { tokens: number; costUsd: number } | null => {
  const over =
    usage &&
    reserved &&
    overLimits(usage, {
      maxTokens: reserved.maxTokens,
      maxCostMicroUsd: reserved.maxCostUsd === null ? null : usdToMicro(reserved.maxCostUsd),
    });
  return over ? { tokens: over.tokens, costUsd: microToUsd(over.costMicroUsd) } : null;
};
const MODEL_ACTIVITIES = new Set(['callModel', 'compactSession', 'summarizeContext']);

/**
 * Follows the tree under `rootId` from Temporal's histories. See the module comment for the order and the cursor.
 */
export async function* watchTree(
  client: Client,
  rootId: string,
  options: WatchOptions = {},
): AsyncGenerator<WatchEvent> {
  const namespace = client.options.namespace;
  const converter = client.options.loadedDataConverter;
  /**
   * A payload's value, or `undefined` when this client cannot read it (a payload in an external store is a reference
   * here; one encrypted with a key this client lacks): the event still comes, without what the payload would add.
   */
  const decodeAll = async (payloads: Payloads): Promise<unknown[]> => {
    try {
      return payloads?.payloads?.length ? await decodePayloads(converter, payloads.payloads) : [];
    } catch {
      return [];
    }
  };
  const decode = async <T>(payloads: Payloads): Promise<T | undefined> =>
    (await decodeAll(payloads))[0] as T | undefined;
  const positions: Positions = options.since ? decodeCursor(options.since) : {};
  const out = new Channel<WatchEvent>();
  const done = new Map<string, Promise<void>>();
  const stop = new AbortController();
  options.signal?.addEventListener('abort', () => stop.abort(), { once: true });
  let following = 0;

  const follow = (workflowId: string, parent: string | null) => {
    if (done.has(workflowId) || !positions[workflowId]?.[0]) return; // each run once, once it exists
    following++;
    const finished = followRun(workflowId, parent).then(
      () => {
        if (--following === 0) out.close();
      },
      (err: unknown) => {
        if (stop.signal.aborted) return void (--following === 0 && out.close());
        out.fail(err);
      },
    );
    done.set(workflowId, finished);
  };

  async function followRun(workflowId: string, parent: string | null): Promise<void> {
    const [startRunId, after] = positions[workflowId]!;
    let runId: string | undefined = startRunId;
    let skipUntil = after;
    let price: ModelPrice | undefined;
    const activities = new Map<number, ActivityInfo>();
    const children = new Map<number, string>();
    /** What each child's start reserved (its token and cost caps), to tell an overrun at its join. */
    const reservations = new Map<string, { maxTokens: number | null; maxCostUsd: number | null }>();
    const emit = (event: HistoryEvent, body: Record<string, unknown>) => {
      const eventId = Number(event.eventId);
      out.push({
        run: workflowId,
        parent,
        seq: eventId,
        at: time(event),
        cursor: encodeCursor({ ...positions, [workflowId]: [runId!, eventId, parent] }),
        ...body,
      } as WatchEvent);
    };
    let token: Uint8Array | undefined;
    for (;;) {
      // The server's long poll: it answers when the run has new events (or after its poll interval, with none).
      const response = await abortable(stop.signal, (signal) =>
        client.connection.withAbortSignal(signal, () =>
          client.workflowService.getWorkflowExecutionHistory({
            namespace,
            execution: { workflowId, runId },
            nextPageToken: token,
            waitNewEvent: true,
            maximumPageSize: 100,
          }),
        ),
      );
      let continued = false;
      for (const event of response.history?.events ?? []) {
        const eventId = Number(event.eventId);
        // Events up to the cursor still teach the follower (the price, activities, children); they are not emitted.
        const replaying = eventId <= skipUntil;
        const say = async (body: Record<string, unknown>) => {
          if (!replaying) emit(event, body);
        };
        await readEvent(event, say, replaying);
        if (!replaying) positions[workflowId] = [runId!, eventId, parent];
        if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW) {
          runId = event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
          skipUntil = 0;
          token = undefined;
          positions[workflowId] = [runId!, 0, parent];
          continued = true;
          break;
        }
        if (isClosing(event.eventType)) return;
      }
      if (continued) continue;
      if (!response.nextPageToken?.length) return;
      token = response.nextPageToken;
    }

    async function readEvent(
      event: HistoryEvent,
      say: (body: Record<string, unknown>) => Promise<void>,
      replaying: boolean,
    ) {
      switch (event.eventType) {
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: {
          const input = await decode<RunInput>(event.workflowExecutionStartedEventAttributes?.input);
          price ??= input?.origin?.composition?.price;
          if (event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId) return; // a later segment
          await say({
            type: 'run/started',
            taskName: input?.origin?.taskName ?? null,
            depth: input?.origin?.depth ?? 0,
            task: input?.task ?? '',
          });
          return;
        }
        case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
          const attributes = event.activityTaskScheduledEventAttributes!;
          const type = attributes.activityType?.name ?? '';
          const info: ActivityInfo = { type };
          if (MODEL_ACTIVITIES.has(type)) {
            const input = await decode<CallModelInput>(attributes.input);
            info.model = input?.model ?? '';
            if (type === 'callModel' && !replaying) {
              for (const refusal of refusalsIn(input)) await say({ type: 'delegation/refused', reason: refusal });
            }
            await say({ type: 'model/started', model: info.model, activity: type });
            if (!replaying && attributes.activityId) live(event, attributes.activityId, info);
          } else if (type === 'runTool') {
            const input = await decode<RunToolInput>(attributes.input);
            info.tool = input?.call.name ?? '';
            await say({ type: 'tool/called', name: info.tool });
          } else if (type === 'verifyMessage') {
            info.message = (await decode<VerifyMessageInput>(attributes.input))?.message;
          }
          activities.set(Number(event.eventId), info);
          return;
        }
        case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: {
          const attributes = event.activityTaskCompletedEventAttributes!;
          const info = activities.get(Number(attributes.scheduledEventId));
          if (!info) return;
          info.ended = true;
          if (info.type === 'resolveRun') {
            price ??= (await decode<{ price: ModelPrice }>(attributes.result))?.price;
          } else if (info.model !== undefined && !replaying) {
            const result = await decode<CallModelResult>(attributes.result);
            const tokens = { inputTokens: result?.inputTokens ?? 0, outputTokens: result?.outputTokens ?? 0 };
            await say({
              type: 'model/finished',
              model: info.model,
              activity: info.type,
              ...tokens,
              costUsd: price ? microToUsd(callCostMicroUsd(tokens, price)) : null,
              finishReason: result?.finishReason ?? null,
              toolCalls: (result?.toolCalls ?? []).map((call) => call.name),
            });
          } else if (info.message !== undefined && !replaying) {
            // A message from another run is an event once a worker has checked its signature: a signal anyone could
            // have sent is not.
            const verdict = await decode<VerifyMessageResult>(attributes.result);
            if (verdict?.ok) await sayMessage(info.message, say);
          } else if (info.tool !== undefined && !replaying) {
            const result = await decode<RunToolResult>(attributes.result);
            await say({
              type: 'tool/result',
              name: info.tool,
              ok: !result?.isError,
              bytes: Buffer.byteLength(result?.whole ?? result?.content ?? ''),
            });
          }
          return;
        }
        case EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
        case EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
        case EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: {
          const scheduled =
            event.activityTaskFailedEventAttributes?.scheduledEventId ??
            event.activityTaskTimedOutEventAttributes?.scheduledEventId ??
            event.activityTaskCanceledEventAttributes?.scheduledEventId;
          const info = activities.get(Number(scheduled));
          if (info) info.ended = true;
          const error =
            event.activityTaskFailedEventAttributes?.failure?.message ??
            event.activityTaskTimedOutEventAttributes?.failure?.message ??
            'cancelled';
          if (info?.model !== undefined)
            await say({ type: 'model/failed', model: info.model, activity: info.type, error });
          else if (info?.tool !== undefined) await say({ type: 'tool/result', name: info.tool, ok: false, bytes: 0 });
          return;
        }
        case EventType.EVENT_TYPE_MARKER_RECORDED: {
          // A local activity (a lean run resolves its composition locally): its result is the marker's.
          const details = event.markerRecordedEventAttributes?.details;
          const data = details?.data?.payloads?.[0]?.data;
          let type: string | undefined;
          try {
            type = data
              ? (JSON.parse(Buffer.from(data).toString()) as { activity_type?: string }).activity_type
              : undefined;
          } catch {
            return; // not a local activity's marker
          }
          if (type === 'resolveRun') price ??= (await decode<{ price: ModelPrice }>(details?.result))?.price;
          return;
        }
        case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED: {
          const attributes = event.startChildWorkflowExecutionInitiatedEventAttributes!;
          const child = attributes.workflowId ?? '';
          children.set(Number(event.eventId), child);
          // Behind the cursor, a child the cursor does not name ended before it (the cursor names every child
          // started before it until the watch ends): nothing more to say of it.
          if (replaying && !(child in positions)) return;
          positions[child] ??= ['', 0, workflowId]; // before the event: its cursor resumes the child from its start
          const input = await decode<RunInput>(attributes.input);
          const reserved = {
            maxTokens: input?.limits?.maxTokens ?? null,
            maxCostUsd: input?.limits?.maxCostUsd ?? null,
          };
          reservations.set(child, reserved);
          await say({ type: 'delegation/started', child, taskName: input?.origin?.taskName ?? child, reserved });
          return;
        }
        case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED: {
          // The child exists now (the server records its start after the parent asked): follow it from its first run.
          const execution = event.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
          const child = execution?.workflowId ?? '';
          const position = positions[child];
          if (!position) return; // behind the cursor and not named by it: it ended before
          if (!position[0]) position[0] = execution?.runId ?? '';
          follow(child, workflowId);
          return;
        }
        case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED: {
          const child = event.startChildWorkflowExecutionFailedEventAttributes?.workflowId ?? '';
          await say({ type: 'delegation/refused', reason: `the id ${child} is taken; the child was not started` });
          return;
        }
        case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
        case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
        case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
        case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
        case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT: {
          const child = childOf(event);
          if (replaying || !child) return;
          await done.get(child); // causal: the child's own end first
          const result =
            event.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED
              ? await decode<RunResult>(event.childWorkflowExecutionCompletedEventAttributes?.result)
              : undefined;
          await say({
            type: 'delegation/joined',
            child,
            status: result?.status ?? closingStatus(event.eventType),
            usage: usageOf(result?.usage),
            overrun: overrunOf(result?.usage, reservations.get(child)),
          });
          return;
        }
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: {
          const request = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
          const [arg] = (await decodeAll(request?.args)) as [Record<string, string> | undefined];
          if (request?.name === 'sendMessage') await say({ type: 'message/received' });
          else if (request?.name === 'interject')
            await say({ type: 'interjection', from: 'client', to: arg?.taskName ?? null });
          else if (request?.name === 'answerChild') {
            await say({ type: 'question/answered', questionId: arg?.questionId ?? '', from: 'client' });
          }
          return;
        }
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: {
          const result = await decode<RunResult>(event.workflowExecutionCompletedEventAttributes?.result);
          await say({
            type: 'run/ended',
            status: result?.status ?? 'completed',
            limit: result?.limit ?? null,
            synthesis: result?.status === 'completed' && result.limit !== undefined,
            usage: usageOf(result?.usage),
            output: result?.output ?? null,
          });
          return;
        }
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
        case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
          await say({
            type: 'run/ended',
            status: closingStatus(event.eventType),
            limit: null,
            synthesis: false,
            usage: null,
            output: null,
          });
          return;
        default:
          return;
      }
    }

    /**
     * Follows a model call's live output until its end is in history: the pending activity's heartbeat details, read
     * with `DescribeWorkflowExecution` (a read of the server's records: no worker is asked).
     */
    function live(scheduled: HistoryEvent, activityId: string, info: ActivityInfo) {
      void (async () => {
        let last = '';
        while (!info.ended && !stop.signal.aborted) {
          await new Promise((resolve) => setTimeout(resolve, LIVE_OUTPUT_POLL_MS));
          if (info.ended || stop.signal.aborted) return;
          const described = await client.workflowService
            .describeWorkflowExecution({ namespace, execution: { workflowId, runId } })
            .catch(() => undefined);
          const pending = described?.pendingActivities?.find((a) => a.activityId === activityId);
          if (!pending) {
            if (described) return; // no longer pending: it ended or is between attempts
            continue;
          }
          const details = (await decode<{ outputTokens?: number; partial?: string }>(pending.heartbeatDetails)) ?? {};
          if (typeof details.partial !== 'string' || info.ended) continue;
          const key = `${details.outputTokens}:${details.partial}`;
          if (key === last) continue;
          last = key;
          out.push({
            run: workflowId,
            parent,
            seq: Number(scheduled.eventId),
            at: new Date().toISOString(),
            cursor: encodeCursor(positions),
            type: 'model/progress',
            model: info.model ?? '',
            activity: info.type,
            outputTokens: details.outputTokens ?? 0,
            partial: details.partial,
          });
        }
      })();
    }

    async function sayMessage(message: MessageToSign, say: (body: Record<string, unknown>) => Promise<void>) {
      const body = (message.body ?? {}) as Record<string, string | undefined>;
      if (message.signal === 'deputy.question') {
        await say({
          type: 'question/asked',
          child: message.from,
          questionId: body.questionId ?? '',
          question: body.question ?? '',
        });
      } else if (message.signal === 'deputy.answer') {
        await say({ type: 'question/answered', questionId: body.questionId ?? '', from: message.from });
      } else if (message.signal === 'deputy.interjection') {
        await say({ type: 'interjection', from: message.from, to: null });
      }
    }

    function childOf(event: HistoryEvent): string | undefined {
      const initiated =
        event.childWorkflowExecutionCompletedEventAttributes?.initiatedEventId ??
        event.childWorkflowExecutionFailedEventAttributes?.initiatedEventId ??
        event.childWorkflowExecutionCanceledEventAttributes?.initiatedEventId ??
        event.childWorkflowExecutionTerminatedEventAttributes?.initiatedEventId ??
        event.childWorkflowExecutionTimedOutEventAttributes?.initiatedEventId;
      return children.get(Number(initiated));
    }
  }

  /** The first segment of a run that may have continued as new. */
  async function firstRunId(workflowId: string): Promise<string> {
    const response = await client.workflowService
      .getWorkflowExecutionHistory({ namespace, execution: { workflowId }, maximumPageSize: 1 })
      .catch((err: unknown) => {
        if ((err as { code?: number }).code === 5) {
          throw new Error(`no run "${workflowId}" in namespace ${namespace} to watch (start it first)`);
        }
        throw err;
      });
    const first = response.history?.events?.[0];
    const attributes = first?.workflowExecutionStartedEventAttributes;
    return attributes?.firstExecutionRunId || attributes?.originalExecutionRunId || '';
  }

  positions[rootId] ??= [await firstRunId(rootId), 0, null];
  follow(rootId, null);
  // On resume, children already known are followed from their positions (their starts are behind the cursor).
  for (const [workflowId, [, , parent]] of Object.entries(positions)) follow(workflowId, parent);
  try {
    for await (const event of out.drain()) {
      yield event;
      if (stop.signal.aborted) return;
    }
  } finally {
    stop.abort();
  }
}

/**
 * Runs `call` with a signal of its own that `stop` aborts: the SDK adds an abort listener per call and never removes
 * it, so one long-lived signal shared by every poll of a long watch would collect them.
 */
async function abortable<T>(stop: AbortSignal, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const own = new AbortController();
  const abort = () => own.abort();
  if (stop.aborted) abort();
  stop.addEventListener('abort', abort, { once: true });
  try {
    return await call(own.signal);
  } finally {
    stop.removeEventListener('abort', abort);
  }
}

function isClosing(type: HistoryEvent['eventType']): boolean {
  return (
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED ||
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED ||
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED ||
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED ||
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT
  );
}

function closingStatus(type: HistoryEvent['eventType']): string {
  switch (type) {
    case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
    case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
      return 'cancelled';
    case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
    case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
      return 'terminated';
    case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
    case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT:
      return 'timed_out';
    default:
      return 'failed';
  }
}

/** `delegate` calls refused: their tool results (sent to the model in the next call) end with "nothing was spawned". */
function refusalsIn(input: CallModelInput | undefined): string[] {
  return (input?.messages ?? [])
    .filter((m) => m.role === 'tool' && typeof m.content === 'string' && m.content.includes('nothing was spawned'))
    .map((m) => String(m.content).slice(0, 500));
}
