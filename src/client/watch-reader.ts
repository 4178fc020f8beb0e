/**
 * One run's history read as watch events: a pure reading of Temporal's events (payloads decoded through the hooks'
 * data converter), so the same reader serves a live watch and a recorded history. What the reader learns on the
 * way (the model's price, scheduled activities, started children) it keeps; what the watch does about a child (follow
 * it, wait for its end) is the hooks'.
 */
import type { CallModelInput, CallModelResult, RunToolInput, RunToolResult } from '../contract/activities.js';
import type { ModelPrice } from '../contract/composition.js';
import type { RequestApprovalInput } from '../contract/approvals.js';
import { ApprovalsReading, sayMessage } from './watch-messages.js';
import type { RunInput, RunResult } from '../contract/run.js';
import type { MessageToSign, VerifyMessageInput, VerifyMessageResult } from '../contract/signals.js';
import { billedTokens, callCostMicroUsd, callTokensOf, microToUsd, type CallTokens } from '../rules/usage.js';
import {
  closingStatus,
  failureText,
  EventType,
  MODEL_ACTIVITIES,
  overrunOf,
  refusalsIn,
  usageOf,
  type HistoryEvent,
  type Payloads,
  type Say,
  type WatchBody,
} from './watch-events.js';

/** What a reader remembers of a scheduled activity until it ends. */
export interface ActivityInfo {
  type: string;
  model?: string;
  tool?: string;
  /** A message from another run being checked (`verifyMessage`). */
  message?: MessageToSign;
  /** An approval request being recorded (`requestApproval`). */
  approval?: RequestApprovalInput;
  /** Its end is in history: live output stops. */
  ended?: boolean;
}

/** What the reader asks of whoever reads with it. */
export interface ReaderHooks {
  /**
   * A payload's values, or none when they cannot be read (a payload in an external store is a reference here; one
   * encrypted with a key this client lacks): the event still comes, without what the payload would add.
   */
  decodeAll(payloads: Payloads): Promise<unknown[]>;
  /** Whether the watch knows `child` (behind the cursor, a child it does not name ended before it). */
  knows(child: string): boolean;
  /** A child's start was asked for: from now on the watch knows it. */
  initiated(child: string): void;
  /** A known child exists, with its first run: follow it. */
  started(child: string, runId: string): void;
  /** Settles once the child's own end has been told. */
  ended(child: string): Promise<void> | undefined;
  /** A model call was scheduled (not behind the cursor): its live output may be followed. */
  modelScheduled(event: HistoryEvent, activityId: string, info: ActivityInfo): void;
}

/** Reads one run's events in history order; `read` answers what each says. */
export class RunReader {
  price: ModelPrice | undefined;
  readonly #activities = new Map<number, ActivityInfo>();
  readonly #children = new Map<number, string>();
  /** What each child's start reserved (its token and cost caps), to tell an overrun at its join. */
  readonly #reservations = new Map<string, { maxTokens: number | null; maxCostUsd: number | null }>();
  readonly #approvals: ApprovalsReading;
  /** The deployment version of the worker that completed the run's last task (across its segments). */
  #version: string | undefined;

  constructor(private readonly hooks: ReaderHooks) {
    this.#approvals = new ApprovalsReading((payloads) => this.decode(payloads));
  }

  /** What `event` says (nothing, one event, or several); behind the cursor (`replaying`) it only teaches. */
  async read(event: HistoryEvent, replaying: boolean): Promise<WatchBody[]> {
    const said: WatchBody[] = [];
    const say: Say = async (body) => {
      if (!replaying) said.push(body);
    };
    await this.#dispatch(event, replaying, say);
    return said;
  }

  private async decode<T>(payloads: Payloads): Promise<T | undefined> {
    return (await this.hooks.decodeAll(payloads))[0] as T | undefined;
  }

  #dispatch(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        return this.#runStarted(event, replaying, say);
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        return this.#activityScheduled(event, replaying, say);
      case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
        return this.#activityCompleted(event, replaying, say);
      case EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
        return this.#activityFailed(event, replaying, say);
      case EventType.EVENT_TYPE_MARKER_RECORDED:
        return this.#markerRecorded(event);
      case EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
        return this.#taskCompleted(event, say);
      case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
        return this.#childInitiated(event, replaying, say);
      case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
        return this.#childStarted(event);
      case EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED:
        return this.#childStartFailed(event, replaying, say);
      case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
      case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED:
      case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED:
      case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED:
      case EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT:
        return this.#childEnded(event, replaying, say);
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
        return this.#updateAccepted(event, replaying, say);
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
        return this.#approvals.updateCompleted(event, say);
      case EventType.EVENT_TYPE_TIMER_STARTED:
        return this.#approvals.timerStarted(event, say);
      case EventType.EVENT_TYPE_TIMER_FIRED:
        return this.#approvals.timerFired(event, say);
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
        return this.#runCompleted(event, replaying, say);
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
        return this.#runClosed(event, replaying, say);
      default:
        return Promise.resolve();
    }
  }

  /** Each task names the version of the worker that completed it: a run whose version changed has moved. */
  async #taskCompleted(event: HistoryEvent, say: Say): Promise<void> {
    const version = event.workflowTaskCompletedEventAttributes?.deploymentVersion;
    if (!version?.buildId) return;
    const now = `${version.deploymentName ?? ''}:${version.buildId}`;
    if (this.#version !== undefined && this.#version !== now)
      await say({ type: 'run/moved', from: this.#version, to: now });
    this.#version = now;
  }

  async #runStarted(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const input = await this.decode<RunInput>(event.workflowExecutionStartedEventAttributes?.input);
    this.price ??= input?.origin?.composition?.price;
    if (event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId) return; // a later segment
    await say({
      type: 'run/started',
      taskName: input?.origin?.taskName ?? null,
      depth: input?.origin?.depth ?? 0,
      task: input?.task ?? '',
    });
  }

  async #activityScheduled(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const attributes = event.activityTaskScheduledEventAttributes!;
    const type = attributes.activityType?.name ?? '';
    const info: ActivityInfo = { type };
    if (MODEL_ACTIVITIES.has(type)) {
      const input = await this.decode<CallModelInput>(attributes.input);
      info.model = input?.model ?? '';
      if (type === 'callModel' && !replaying) {
        for (const refusal of refusalsIn(input)) await say({ type: 'delegation/refused', reason: refusal });
      }
      const fallback = typeof input?.fallback === 'string' ? { fallback: input.fallback } : {};
      await say({ type: 'model/started', model: info.model, activity: type, ...fallback });
      if (!replaying && attributes.activityId) this.hooks.modelScheduled(event, attributes.activityId, info);
    } else if (type === 'runTool') {
      const input = await this.decode<RunToolInput>(attributes.input);
      info.tool = input?.call.name ?? '';
      await say({ type: 'tool/called', name: info.tool });
    } else if (type === 'verifyMessage') {
      info.message = (await this.decode<VerifyMessageInput>(attributes.input))?.message;
    } else if (type === 'requestApproval') {
      info.approval = await this.decode<RequestApprovalInput>(attributes.input);
    }
    this.#activities.set(Number(event.eventId), info);
  }

  async #activityCompleted(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const attributes = event.activityTaskCompletedEventAttributes!;
    const info = this.#activities.get(Number(attributes.scheduledEventId));
    if (!info) return;
    info.ended = true;
    if (info.type === 'resolveRun') {
      this.price ??= (await this.decode<{ price: ModelPrice }>(attributes.result))?.price;
    } else if (info.model !== undefined && !replaying) {
      const result = await this.decode<CallModelResult>(attributes.result);
      const tokens = callTokensOf(result) ?? { inputTokens: 0, outputTokens: 0 };
      const billed = billedTokens({ ...tokens, billed: result?.billed });
      const cost = (counted: CallTokens) => (this.price ? microToUsd(callCostMicroUsd(counted, this.price)) : null);
      await say({
        type: 'model/finished',
        model: info.model,
        activity: info.type,
        ...tokens,
        costUsd: cost(tokens),
        billed: { ...billed, costUsd: cost(billed) },
        finishReason: result?.finishReason ?? null,
        toolCalls: (result?.toolCalls ?? []).map((call) => call.name),
      });
    } else if (info.message !== undefined && !replaying) {
      // A message from another run is an event once a worker has checked its signature: a signal anyone could
      // have sent is not.
      const verdict = await this.decode<VerifyMessageResult>(attributes.result);
      if (verdict?.ok) await sayMessage(info.message, say);
    } else if (info.approval !== undefined && !replaying) {
      await this.#approvals.requested(info.approval, attributes.result, say);
    } else if (info.tool !== undefined && !replaying) {
      const result = await this.decode<RunToolResult>(attributes.result);
      await say({
        type: 'tool/result',
        name: info.tool,
        ok: !result?.isError,
        bytes: Buffer.byteLength(result?.whole ?? result?.content ?? ''),
      });
      for (const { id, name, mediaType, size } of result?.artifacts ?? []) {
        await say({ type: 'artifact/saved', id, name, mediaType, size });
      }
    }
  }

  async #activityFailed(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const scheduled =
      event.activityTaskFailedEventAttributes?.scheduledEventId ??
      event.activityTaskTimedOutEventAttributes?.scheduledEventId ??
      event.activityTaskCanceledEventAttributes?.scheduledEventId;
    const info = this.#activities.get(Number(scheduled));
    if (info) info.ended = true;
    const error =
      event.activityTaskFailedEventAttributes?.failure?.message ??
      event.activityTaskTimedOutEventAttributes?.failure?.message ??
      'cancelled';
    if (info?.model !== undefined) await say({ type: 'model/failed', model: info.model, activity: info.type, error });
    else if (info?.tool !== undefined) await say({ type: 'tool/result', name: info.tool, ok: false, bytes: 0 });
  }

  async #markerRecorded(event: HistoryEvent): Promise<void> {
    // A local activity (a run resolves its composition locally): its result is the marker's.
    const details = event.markerRecordedEventAttributes?.details;
    const data = details?.data?.payloads?.[0]?.data;
    let type: string | undefined;
    try {
      type = data ? (JSON.parse(Buffer.from(data).toString()) as { activity_type?: string }).activity_type : undefined;
    } catch {
      return; // not a local activity's marker
    }
    if (type === 'resolveRun') this.price ??= (await this.decode<{ price: ModelPrice }>(details?.result))?.price;
  }

  async #childInitiated(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const attributes = event.startChildWorkflowExecutionInitiatedEventAttributes!;
    const child = attributes.workflowId ?? '';
    this.#children.set(Number(event.eventId), child);
    // Behind the cursor, a child the cursor does not name ended before it (the cursor names every child
    // started before it until the watch ends): nothing more to say of it.
    if (replaying && !this.hooks.knows(child)) return;
    this.hooks.initiated(child); // before the event: its cursor resumes the child from its start
    const input = await this.decode<RunInput>(attributes.input);
    const reserved = {
      maxTokens: input?.limits?.maxTokens ?? null,
      maxCostUsd: input?.limits?.maxCostUsd ?? null,
    };
    this.#reservations.set(child, reserved);
    await say({ type: 'delegation/started', child, taskName: input?.origin?.taskName ?? child, reserved });
  }

  async #childStarted(event: HistoryEvent): Promise<void> {
    // The child exists now (the server records its start after the parent asked): follow it from its first run.
    const execution = event.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
    const child = execution?.workflowId ?? '';
    // Behind the cursor and not named by it, the child ended before: the hooks do not follow it.
    this.hooks.started(child, execution?.runId ?? '');
  }

  async #childStartFailed(event: HistoryEvent, _replaying: boolean, say: Say): Promise<void> {
    const child = event.startChildWorkflowExecutionFailedEventAttributes?.workflowId ?? '';
    await say({ type: 'delegation/refused', reason: `the id ${child} is taken; the child was not started` });
  }

  async #childEnded(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const child = this.#childOf(event);
    if (replaying || !child) return;
    await this.hooks.ended(child); // causal: the child's own end first
    const result =
      event.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED
        ? await this.decode<RunResult>(event.childWorkflowExecutionCompletedEventAttributes?.result)
        : undefined;
    await say({
      type: 'delegation/joined',
      child,
      status: result?.status ?? closingStatus(event.eventType),
      usage: usageOf(result?.usage),
      overrun: overrunOf(result?.usage, this.#reservations.get(child)),
    });
  }

  async #updateAccepted(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const request = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    const [arg] = (await this.hooks.decodeAll(request?.args)) as [Record<string, string> | undefined];
    if (request?.name === 'sendMessage') await say({ type: 'message/received' });
    else if (request?.name === 'interject')
      await say({ type: 'interjection', from: 'client', to: arg?.taskName ?? null });
    else if (request?.name === 'answerChild') {
      await say({ type: 'question/answered', questionId: arg?.questionId ?? '', from: 'client' });
    } else if (request?.name === 'decideApproval') {
      this.#approvals.decisionAccepted(event);
    }
  }

  async #runCompleted(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const result = await this.decode<RunResult>(event.workflowExecutionCompletedEventAttributes?.result);
    await say({
      type: 'run/ended',
      status: result?.status ?? 'completed',
      limit: result?.limit ?? null,
      synthesis: result?.status === 'completed' && result.limit !== undefined,
      usage: usageOf(result?.usage),
      output: result?.output ?? null,
      error: result?.error ?? null,
    });
  }

  async #runClosed(event: HistoryEvent, replaying: boolean, say: Say): Promise<void> {
    const failure = event.workflowExecutionFailedEventAttributes?.failure;
    await say({
      type: 'run/ended',
      status: closingStatus(event.eventType),
      limit: null,
      synthesis: false,
      usage: null,
      output: null,
      error: failure ? failureText(failure) : event.workflowExecutionTimedOutEventAttributes ? 'timed out' : null,
    });
  }

  #childOf(event: HistoryEvent): string | undefined {
    const initiated =
      event.childWorkflowExecutionCompletedEventAttributes?.initiatedEventId ??
      event.childWorkflowExecutionFailedEventAttributes?.initiatedEventId ??
      event.childWorkflowExecutionCanceledEventAttributes?.initiatedEventId ??
      event.childWorkflowExecutionTerminatedEventAttributes?.initiatedEventId ??
      event.childWorkflowExecutionTimedOutEventAttributes?.initiatedEventId;
    return this.#children.get(Number(initiated));
  }
}
