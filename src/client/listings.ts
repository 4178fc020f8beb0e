/** Listings over Temporal visibility: a tree's open questions, and sessions. */
import type { Client } from '@temporalio/client';
import type { RunState } from '../contract/run.js';
import {
  DEPUTY_DEPTH,
  DEPUTY_PARENT_ID,
  DEPUTY_PRESET,
  DEPUTY_ROOT_ID,
  DEPUTY_STATUS,
  DEPUTY_TASK_NAME,
  treeQuery,
} from '../contract/search-attributes.js';

/** A child's question waiting for an answer, as `openQuestions` reports it. */
export interface OpenQuestion {
  /** The run that asked, and the run it asked (its parent, which holds the question in its ledger). */
  childWorkflowId: string;
  parentId: string;
  taskName: string;
  questionId: string;
  question: string;
  askedAt: string;
}

/** One session as `listSessions` reports it. */
export interface SessionInfo {
  sessionId: string;
  rootId: string;
  parentId: string | null;
  depth: number;
  taskName: string | null;
  preset: string | null;
  status: string;
  startTime: string;
}

/** The questions children of the tree `rootId` heads asked and nobody has answered yet, oldest first. */
export async function openQuestionsOf(
  temporal: Client,
  rootId: string,
  getState: (workflowId: string) => Promise<RunState>,
): Promise<OpenQuestion[]> {
  const runs = [rootId];
  const query = `${treeQuery(rootId)} AND ExecutionStatus = 'Running'`;
  for await (const info of temporal.workflow.list({ query })) {
    if (info.workflowId !== rootId) runs.push(info.workflowId);
  }
  const states = await Promise.all(runs.map(async (id) => ({ id, state: await getState(id) })));
  return states
    .flatMap((found) =>
      found.state.delegations.flatMap((entry) =>
        (entry.questions ?? [])
          .filter((q) => q.status === 'open')
          .map((q) => ({
            childWorkflowId: entry.childWorkflowId,
            parentId: found.id,
            taskName: entry.taskName,
            questionId: q.id,
            question: q.question,
            askedAt: q.askedAt,
          })),
      ),
    )
    .sort((a, b) => a.askedAt.localeCompare(b.askedAt));
}

/** Sessions (runs, roots and children) from Temporal visibility, newest first; `query` narrows them. */
export async function listSessions(temporal: Client, query: string | undefined, limit: number): Promise<SessionInfo[]> {
  const sessions: SessionInfo[] = [];
  const base = "WorkflowType = 'agentRun'";
  for await (const info of temporal.workflow.list({ query: query ? `${base} AND (${query})` : base })) {
    const attrs = info.typedSearchAttributes;
    sessions.push({
      sessionId: info.workflowId,
      rootId: attrs.get(DEPUTY_ROOT_ID) ?? info.workflowId,
      parentId: attrs.get(DEPUTY_PARENT_ID) ?? null,
      depth: attrs.get(DEPUTY_DEPTH) ?? 0,
      taskName: attrs.get(DEPUTY_TASK_NAME) ?? null,
      preset: attrs.get(DEPUTY_PRESET) ?? null,
      status: attrs.get(DEPUTY_STATUS) ?? info.status.name.toLowerCase(),
      startTime: info.startTime.toISOString(),
    });
    if (sessions.length >= limit) break;
  }
  return sessions;
}
