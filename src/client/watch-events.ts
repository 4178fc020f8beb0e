/**
 * What a watch says: the events of `DeputyClient.watch` (a contract: docs/watching.md), their cursors, and
 * the small readings of history they are made from.
 */
// A CommonJS package: Node's ESM loader sees only its default export.
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import proto from '@temporalio/proto';
import type { temporal } from '@temporalio/proto';
import type { CallModelInput } from '../contract/activities.js';
import type { RunResult } from '../contract/run.js';
import { billedOf, microToUsd, usdToMicro, type Billed } from '../rules/usage.js';
import { overLimits } from '../rules/budget.js';

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
export type Payloads = temporal.api.common.v1.IPayloads | null | undefined;
export const { EventType } = proto.temporal.api.enums.v1;

/** What every event says: which run, where in its history, when, and how to resume after it. */
export interface EventBase {
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
  /** Debited (the larger of each call's report and Deputy's count): what the limits hold on. */
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  modelCalls: number;
  toolCalls: number;
  /** What the endpoints billed: their reports, Deputy's count where they made none. */
  billed: { inputTokens: number; outputTokens: number; costUsd: number };
}

/** The events of `DeputyClient.watch`. Names and fields are a contract (docs/watching.md). */
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
        /** Why it failed, when it did. */
        error: string | null;
      }
    /**
     * A run continued as new onto another version of its Worker Deployment (`<deployment>:<build id>`): a conversation
     * moved to a newer Deputy at a quiet moment.
     */
    | { type: 'run/moved'; from: string; to: string }
    | { type: 'model/started'; model: string; activity: string; fallback?: string }
    /**
     * Live output: a model call's answer as it is written, read from the pending activity's heartbeat (tokens so
     * far, the end of the text). Not resumable: its cursor is that of the event before it.
     */
    | { type: 'model/progress'; model: string; activity: string; outputTokens: number; partial: string }
    | {
        type: 'model/finished';
        model: string;
        activity: string;
        /** Debited: the larger of the endpoint's report and Deputy's count. */
        inputTokens: number;
        outputTokens: number;
        /** Of the input, what the provider served from its prompt cache (and wrote to it), as it reported. */
        cachedInputTokens?: number;
        cacheWriteTokens?: number;
        costUsd: number | null;
        /** What the endpoint billed: its report, Deputy's count where it made none. */
        billed: { inputTokens: number; outputTokens: number; costUsd: number | null };
        finishReason: string | null;
        toolCalls: string[];
      }
    | { type: 'model/failed'; model: string; activity: string; error: string }
    /** A failed model call will be tried again: which attempt failed of how many, and when the next is. */
    | { type: 'model/retrying'; status: string }
    | { type: 'tool/called'; name: string }
    | { type: 'tool/result'; name: string; ok: boolean; bytes: number }
    /** A tool saved an artifact for the run (after its `tool/result`). */
    | { type: 'artifact/saved'; id: string; name: string; mediaType: string; size: number }
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
    /** A call of this run waits for a decision (`decideApproval` on this run, by `requestId`). */
    | { type: 'approval/requested'; requestId: string; tool: string; why: string; preview: string; deadline: string }
    /** A decision closed one of this run's requests: by a decider (`by`), or by its deadline (`expired`). */
    | { type: 'approval/decided'; requestId: string; decision: 'approve' | 'deny' | 'expired'; by: string }
    | { type: 'message/received' }
  );

/** What an event says besides where it is: a watch event without its run, position and cursor. */
export type WatchBody = Record<string, unknown>;

/** Per run: [runId of the segment being read, last history event id read in it, its parent]. */
export type Positions = Record<string, [runId: string, eventId: number, parent: string | null]>;
/** Compressed: a tree's ids repeat its root's, and a person copies the cursor from a terminal line. */
export const encodeCursor = (positions: Positions) =>
  deflateRawSync(JSON.stringify(positions), { level: 9 }).toString('base64url');
export function decodeCursor(cursor: string): Positions {
  try {
    const positions = JSON.parse(inflateRawSync(Buffer.from(cursor, 'base64url')).toString()) as Positions;
    if (positions && typeof positions === 'object') return positions;
  } catch {
    // reported below
  }
  throw new Error('not a watch cursor: pass the `cursor` of an event this client returned');
}

export const time = (event: HistoryEvent) => {
  const t = event.eventTime;
  return t ? new Date(Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString() : '';
};
const billedUsd = ({ inputTokens, outputTokens, costMicroUsd }: Billed) => ({
  inputTokens,
  outputTokens,
  costUsd: microToUsd(costMicroUsd),
});
/** A run's usage as its result reports it (what it says it was billed is read as `billedOf` reads it). */
export const usageOf = (usage: RunResult['usage'] | undefined): WatchUsage | null =>
  usage
    ? {
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        costUsd: microToUsd(usage.costMicroUsd),
        modelCalls: usage.modelCalls,
        toolCalls: usage.toolCalls,
        billed: billedUsd(billedOf(usage)),
      }
    : null;
/** How far a child's spend passed what was reserved for it (its token and cost caps), or `null`. */
export const overrunOf = (
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
export const MODEL_ACTIVITIES = new Set(['callModel', 'compactSession', 'summarizeContext']);

export function isClosing(type: HistoryEvent['eventType']): boolean {
  return (
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED ||
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED ||
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED ||
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED ||
    type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT
  );
}

export function closingStatus(type: HistoryEvent['eventType']): string {
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
export function refusalsIn(input: CallModelInput | undefined): string[] {
  return (input?.messages ?? [])
    .filter((m) => m.role === 'tool' && typeof m.content === 'string' && m.content.includes('nothing was spawned'))
    .map((m) => String(m.content).slice(0, 500));
}

/** How a reader says an event (behind the cursor, it says nothing). */
export type Say = (body: WatchBody) => Promise<void>;

/** Generic wrappers say nothing a person can act on: the failure they wrap does. */
const WRAPPER = /^(Activity task failed|Child Workflow execution failed|Workflow execution failed)$/;

/** What a run's failure says: its first message that is not a generic wrapper's. */
export function failureText(failure: temporal.api.failure.v1.IFailure | null | undefined): string {
  if (!failure) return 'timed out';
  for (let at: temporal.api.failure.v1.IFailure | null | undefined = failure; at; at = at.cause) {
    if (at.message && !WRAPPER.test(at.message)) return at.message;
  }
  return failure.message ?? 'failed';
}
