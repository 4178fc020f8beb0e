/**
 * Billable actions, as Temporal Cloud counts them (https://docs.temporal.io/cloud/actions), read two ways:
 *
 * - from a run's recorded histories (`historyActions`): a workflow started (a client start, a child's start, a
 *   continue-as-new), an activity started or retried (each attempt), the local activities of one workflow task (one
 *   together), a timer started, a search-attribute upsert (those set in the start call are free), a signal received
 *   (one sent by a client or a workflow), an update accepted. Heartbeats leave no event: they are counted by the server.
 * - from the server's own `action` counter on its `/metrics` endpoint (`ServerActions`), the figure a self-hosted
 *   server keeps by the same rules (`grpc_RecordActivityTaskHeartbeat` is a heartbeat that reached it). Queries are
 *   actions too; the bench sends none.
 */
import type { History } from './trees.js';

/** Actions by kind, and their total. */
export interface Actions {
  total: number;
  byKind: Record<string, number>;
}

function tally(kinds: string[]): Actions {
  const byKind: Record<string, number> = {};
  for (const kind of kinds) byKind[kind] = (byKind[kind] ?? 0) + 1;
  return { total: kinds.length, byKind };
}

/** The actions one history records. */
export function historyActions(history: History): string[] {
  const kinds: string[] = [];
  const localActivityTasks = new Set<string>();
  for (const event of history.events ?? []) {
    if (event.workflowExecutionStartedEventAttributes) kinds.push('workflow started');
    const started = event.activityTaskStartedEventAttributes;
    // The started event is recorded once, for the last attempt: every attempt before it was billed too.
    if (started) for (let i = 0; i < Math.max(1, started.attempt ?? 1); i++) kinds.push('activity attempt');
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity') {
      localActivityTasks.add(String(marker.workflowTaskCompletedEventId));
    }
    if (event.timerStartedEventAttributes) kinds.push('timer');
    if (event.upsertWorkflowSearchAttributesEventAttributes) kinds.push('search-attribute upsert');
    if (event.workflowExecutionSignaledEventAttributes) kinds.push('signal');
    if (event.workflowExecutionUpdateAcceptedEventAttributes) kinds.push('update');
  }
  for (let i = 0; i < localActivityTasks.size; i++) kinds.push('local activities of a workflow task');
  return kinds;
}

/** The actions a set of histories records (a tree, or a run's continue-as-new segments). */
export function actionsOf(histories: History[]): Actions {
  return tally(histories.flatMap(historyActions));
}

/** The server's `action` counter, read before and after a stretch of work: what the server counted in between. */
export class ServerActions {
  constructor(readonly metricsUrl: string) {}

  /** The counter now, by action type, for the `default` namespace. */
  async read(): Promise<Record<string, number>> {
    const text = await (await fetch(this.metricsUrl)).text();
    const counts: Record<string, number> = {};
    for (const line of text.split('\n')) {
      const match = /^action\{(.*)\} (\d+(?:\.\d+)?(?:e\+\d+)?)$/.exec(line);
      if (!match || !match[1]!.includes('namespace="default"')) continue;
      const type = /action_type="([^"]+)"/.exec(match[1]!)?.[1] ?? 'unknown';
      counts[type] = (counts[type] ?? 0) + Number(match[2]);
    }
    return counts;
  }

  /** The counter once it stopped moving: the server reports its metrics a moment after the request. */
  async settled(): Promise<Record<string, number>> {
    let last = await this.read();
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const next = await this.read();
      if (JSON.stringify(next) === JSON.stringify(last)) return next;
      last = next;
    }
  }

  /** Runs `work` and returns what the server counted meanwhile, by action type, with the heartbeats apart. */
  async during<T>(work: () => Promise<T>): Promise<{ value: T; actions: Actions; heartbeats: number }> {
    const before = await this.settled();
    const value = await work();
    const after = await this.settled();
    const byKind: Record<string, number> = {};
    for (const [type, count] of Object.entries(after)) {
      const delta = count - (before[type] ?? 0);
      if (delta > 0) byKind[type] = delta;
    }
    const total = Object.values(byKind).reduce((sum, n) => sum + n, 0);
    return { value, actions: { total, byKind }, heartbeats: byKind.grpc_RecordActivityTaskHeartbeat ?? 0 };
  }
}
