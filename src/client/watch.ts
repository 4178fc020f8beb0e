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
import { setTimeout as sleep } from 'node:timers/promises';
import { decodePayloads } from '../codec/decode.js';
import { RunReader, type ActivityInfo, type ReaderHooks } from './watch-reader.js';
import {
  decodeCursor,
  encodeCursor,
  EventType,
  isClosing,
  time,
  type HistoryEvent,
  type Payloads,
  type Positions,
  type WatchBody,
  type WatchEvent,
} from './watch-events.js';

/** How often a follower reads a running model call's heartbeat for live output. */
const LIVE_OUTPUT_POLL_MS = 250;

export interface WatchOptions {
  /** Resume after the event that carried this cursor. @default from the root's start */
  since?: string;
  /** Stops the watch (the iterator then ends). */
  signal?: AbortSignal;
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

/**
 * Follows the tree under `rootId` from Temporal's histories. See the module comment for the order and the cursor.
 */
export async function* watchTree(
  client: Client,
  rootId: string,
  options: WatchOptions = {},
): AsyncGenerator<WatchEvent> {
  const watch = new TreeWatch(client, options);
  await watch.start(rootId);
  try {
    for await (const event of watch.out.drain()) {
      yield event;
      if (watch.stop.signal.aborted) return;
    }
  } finally {
    watch.stop.abort();
  }
}

/** One watch of a tree: a follower per run, each reading its run's history with a `RunReader`. */
class TreeWatch {
  readonly out = new Channel<WatchEvent>();
  readonly stop = new AbortController();
  readonly #positions: Positions;
  readonly #done = new Map<string, Promise<void>>();
  readonly #namespace: string;
  #following = 0;

  constructor(
    private readonly client: Client,
    options: WatchOptions,
  ) {
    this.#namespace = client.options.namespace;
    this.#positions = options.since ? decodeCursor(options.since) : {};
    options.signal?.addEventListener('abort', () => this.stop.abort(), { once: true });
  }

  async start(rootId: string): Promise<void> {
    this.#positions[rootId] ??= [await this.#firstRunId(rootId), 0, null];
    this.#follow(rootId, null);
    // On resume, children already known are followed from their positions (their starts are behind the cursor).
    for (const [workflowId, [, , parent]] of Object.entries(this.#positions)) this.#follow(workflowId, parent);
  }

  /** A payload's values, or none when this client cannot read them (see `ReaderHooks.decodeAll`). */
  async #decodeAll(payloads: Payloads): Promise<unknown[]> {
    try {
      return payloads?.payloads?.length
        ? await decodePayloads(this.client.options.loadedDataConverter, payloads.payloads)
        : [];
    } catch {
      return [];
    }
  }

  #follow(workflowId: string, parent: string | null): void {
    if (this.#done.has(workflowId) || !this.#positions[workflowId]?.[0]) return; // each run once, once it exists
    this.#following++;
    const finished = this.#followRun(workflowId, parent).then(
      () => {
        if (--this.#following === 0) this.out.close();
      },
      (err: unknown) => {
        if (this.stop.signal.aborted) return void (--this.#following === 0 && this.out.close());
        this.out.fail(err);
      },
    );
    this.#done.set(workflowId, finished);
  }

  /** The hooks a run's reader works with: children known, followed and awaited through this watch. */
  #hooks(workflowId: string, parent: string | null, runId: () => string | undefined): ReaderHooks {
    const positions = this.#positions;
    return {
      decodeAll: (payloads) => this.#decodeAll(payloads),
      knows: (child) => child in positions,
      initiated: (child) => void (positions[child] ??= ['', 0, workflowId]),
      started: (child, childRunId) => {
        const position = positions[child];
        if (!position) return; // behind the cursor and not named by it: it ended before
        if (!position[0]) position[0] = childRunId;
        this.#follow(child, workflowId);
      },
      ended: (child) => this.#done.get(child),
      modelScheduled: (event, activityId, info) => this.#live(workflowId, parent, runId(), event, activityId, info),
    };
  }

  async #followRun(workflowId: string, parent: string | null): Promise<void> {
    const [startRunId, after] = this.#positions[workflowId]!;
    let runId: string | undefined = startRunId;
    let skipUntil = after;
    const reader = new RunReader(this.#hooks(workflowId, parent, () => runId));
    const emit = (event: HistoryEvent, body: WatchBody) => {
      const eventId = Number(event.eventId);
      this.out.push({
        run: workflowId,
        parent,
        seq: eventId,
        at: time(event),
        cursor: encodeCursor({ ...this.#positions, [workflowId]: [runId!, eventId, parent] }),
        ...body,
      } as WatchEvent);
    };
    let token: Uint8Array | undefined;
    for (;;) {
      const response = await this.#poll(workflowId, runId, token);
      let continued = false;
      for (const event of response.history?.events ?? []) {
        const eventId = Number(event.eventId);
        // Events up to the cursor still teach the reader (the price, activities, children); they are not emitted.
        const replaying = eventId <= skipUntil;
        for (const body of await reader.read(event, replaying)) emit(event, body);
        if (!replaying) this.#positions[workflowId] = [runId!, eventId, parent];
        if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW) {
          runId = event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
          skipUntil = 0;
          token = undefined;
          this.#positions[workflowId] = [runId!, 0, parent];
          continued = true;
          break;
        }
        if (isClosing(event.eventType)) return;
      }
      if (continued) continue;
      if (!response.nextPageToken?.length) return;
      token = response.nextPageToken;
    }
  }

  /** The server's long poll: it answers when the run has new events (or after its poll interval, with none). */
  #poll(workflowId: string, runId: string | undefined, token: Uint8Array | undefined) {
    return abortable(this.stop.signal, (signal) =>
      this.client.connection.withAbortSignal(signal, () =>
        this.client.workflowService.getWorkflowExecutionHistory({
          namespace: this.#namespace,
          execution: { workflowId, runId },
          nextPageToken: token,
          waitNewEvent: true,
          maximumPageSize: 100,
        }),
      ),
    );
  }

  /**
   * Follows a model call's live output until its end is in history: the pending activity's heartbeat details, read
   * with `DescribeWorkflowExecution` (a read of the server's records: no worker is asked).
   */
  #live(
    workflowId: string,
    parent: string | null,
    runId: string | undefined,
    scheduled: HistoryEvent,
    activityId: string,
    info: ActivityInfo,
  ): void {
    const stop = this.stop;
    void (async () => {
      let last = '';
      while (!info.ended && !stop.signal.aborted) {
        await sleep(LIVE_OUTPUT_POLL_MS);
        if (info.ended || stop.signal.aborted) return;
        const described = await this.client.workflowService
          .describeWorkflowExecution({ namespace: this.#namespace, execution: { workflowId, runId } })
          .catch(() => undefined);
        const pending = described?.pendingActivities?.find((a) => a.activityId === activityId);
        if (!pending) {
          if (described) return; // no longer pending: it ended or is between attempts
          continue;
        }
        const [heartbeat] = await this.#decodeAll(pending.heartbeatDetails);
        const details = (heartbeat ?? {}) as { outputTokens?: number; partial?: string };
        if (typeof details.partial !== 'string' || info.ended) continue;
        const key = `${details.outputTokens}:${details.partial}`;
        if (key === last) continue;
        last = key;
        this.out.push({
          run: workflowId,
          parent,
          seq: Number(scheduled.eventId),
          at: new Date().toISOString(),
          cursor: encodeCursor(this.#positions),
          type: 'model/progress',
          model: info.model ?? '',
          activity: info.type,
          outputTokens: details.outputTokens ?? 0,
          partial: details.partial,
        });
      }
    })();
  }

  /** The first segment of a run that may have continued as new. */
  async #firstRunId(workflowId: string): Promise<string> {
    const namespace = this.#namespace;
    const response = await this.client.workflowService
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
