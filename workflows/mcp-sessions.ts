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
import type { Run } from './run/run.js';

const { openMcpSession } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

/**
 * Each run's open sessions by server, keyed by the run's own state: every workflow of a worker shares this module, and
 * a run finds only its own sessions, which go with its state when the worker lets the run go.
 */
const sessions = new WeakMap<Run, Map<string, Promise<OpenMcpSessionResult>>>();

/** Where a call to `server`'s tool runs: the session's worker, or anywhere when no worker keeps sessions. */
export async function sessionOptions(run: Run, server: string): Promise<ActivityOptions> {
  let open = sessions.get(run);
  if (!open) sessions.set(run, (open = new Map<string, Promise<OpenMcpSessionResult>>()));
  let session = open.get(server);
  if (!session) open.set(server, (session = openMcpSession({ runId: run.workflowId, server, grant: run.treeGrant })));
  const pinned = await session;
  return pinned ? { taskQueue: pinned.taskQueue, scheduleToStartTimeout: `${pinned.startTimeoutSeconds} seconds` } : {};
}

/** A call that could not start on the session's worker: the session is lost; the next call opens another. */
export function sessionLost(run: Run, server: string, err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof TimeoutFailure) || cause.timeoutType !== 'SCHEDULE_TO_START') return undefined;
  sessions.get(run)?.delete(server);
  return `the worker that held this run's session with MCP server "${server}" is gone: what the server kept for this run is lost; a new call opens a new session`;
}
