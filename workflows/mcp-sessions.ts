/**
 * A run's sessions with stateful MCP servers: the first call to such a server asks a worker to hold the session
 * (`openMcpSession`, recorded), and every later call of the run to that server goes to that worker's own queue. If
 * the worker is gone, a call cannot start there: it ends as a tool error saying the session was lost, and the next
 * call opens a new one. Deterministic code only.
 */
import { ActivityFailure, proxyActivities, TimeoutFailure, type ActivityOptions } from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import type { OpenMcpSessionResult } from '../src/contract/activities.js';
import { LOOKUP_OPTIONS } from './activity-options.js';

const { openMcpSession } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

/** A run's open sessions, by server: they go with its state when the worker lets the run go. */
export class McpSessions {
  readonly #open = new Map<string, Promise<OpenMcpSessionResult>>();

  /** Where a call to `server`'s tool runs: the session's worker, or anywhere when no worker keeps sessions. */
  async optionsFor(server: string, run: { workflowId: string; treeGrant: string }): Promise<ActivityOptions> {
    let session = this.#open.get(server);
    if (!session) {
      session = openMcpSession({ runId: run.workflowId, server, grant: run.treeGrant });
      this.#open.set(server, session);
    }
    const pinned = await session;
    return pinned
      ? { taskQueue: pinned.taskQueue, scheduleToStartTimeout: `${pinned.startTimeoutSeconds} seconds` }
      : {};
  }

  /** A call that could not start on the session's worker: the session is lost; the next call opens another. */
  lost(server: string, err: unknown): string | undefined {
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (!(cause instanceof TimeoutFailure) || cause.timeoutType !== 'SCHEDULE_TO_START') return undefined;
    this.#open.delete(server);
    return `the worker that held this run's session with MCP server "${server}" is gone: what the server kept for this run is lost; a new call opens a new session`;
  }
}
