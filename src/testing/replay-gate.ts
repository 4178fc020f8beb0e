/**
 * The replay gate a service that hosts Deputy runs in its CI before a deploy: the histories of its namespace's
 * recent runs (or exported ones) replayed against the workflow bundle about to go out. A run whose history the new
 * code cannot replay would stop on the new workers: pin it (Worker Versioning, docs/versioning.md) or do not deploy.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Client } from '@temporalio/client';
import { Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type { HistoryAndWorkflowId } from '@temporalio/common';
import { bundleDeputyWorkflows } from '../worker/bundle.js';

/** One history the bundle could not replay, and why (the first line of the replayer's error). */
export interface BreakingRun {
  workflowId: string;
  runId: string;
  why: string;
}

/** What the gate found. */
export interface ReplayReport {
  replayed: number;
  breaking: BreakingRun[];
  ms: number;
}

/** Which of a namespace's runs to replay: those `query` selects, started within `sinceHours`, `limit` at most. */
export interface RecentRuns {
  query?: string | undefined;
  /** @default 24 */
  sinceHours?: number | undefined;
  /** @default 1000 */
  limit?: number | undefined;
}

/** The visibility query for `runs`: Deputy's runs, started within the window, and the caller's own clause. */
export function recentRunsQuery({ query, sinceHours = 24 }: RecentRuns, now = new Date()): string {
  const since = new Date(now.getTime() - sinceHours * 3_600_000).toISOString();
  return [`WorkflowType = 'agentRun'`, `StartTime > '${since}'`, ...(query ? [`(${query})`] : [])].join(' AND ');
}

/** The histories of a namespace's recent runs, fetched eight at a time. */
export async function* recentHistories(client: Client, runs: RecentRuns = {}): AsyncIterable<HistoryAndWorkflowId> {
  const limit = runs.limit ?? 1000;
  if (limit <= 0) return;
  let taken = 0;
  for await (const history of client.workflow
    .list({ query: recentRunsQuery(runs) })
    .intoHistories({ concurrency: 8 })) {
    yield history;
    if (++taken >= limit) return;
  }
}

/**
 * Exported histories (the JSON `temporal workflow show --output json` and Temporal UI write): a file, or every
 * `.json` file in a folder. A file's name is its run's workflow id, with `__` for `/` (a child's id).
 */
export function exportedHistories(path: string): HistoryAndWorkflowId[] {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((file) => file.endsWith('.json'))
        .sort()
        .map((file) => join(path, file))
    : [path];
  return files.map((file) => ({
    workflowId: basename(file)
      .replace(/\.json$/, '')
      .replace(/__/g, '/'),
    history: JSON.parse(readFileSync(file, 'utf8')) as HistoryAndWorkflowId['history'],
  }));
}

/** Replays `histories` against `workflowBundle` (default: the Deputy installed here, bundled now). */
export async function replayGate(
  histories: AsyncIterable<HistoryAndWorkflowId> | Iterable<HistoryAndWorkflowId>,
  workflowBundle?: WorkflowBundleOption,
): Promise<ReplayReport> {
  const started = performance.now();
  const bundle = workflowBundle ?? { code: (await bundleDeputyWorkflows()).code };
  const breaking: BreakingRun[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories(
    { workflowBundle: bundle, replayName: 'deputy-replay' },
    histories,
  )) {
    replayed++;
    if (result.error) {
      const why = (result.error.message || result.error.name).split('\n')[0]!;
      breaking.push({ workflowId: result.workflowId, runId: result.runId, why });
    }
  }
  return { replayed, breaking, ms: Math.round(performance.now() - started) };
}
