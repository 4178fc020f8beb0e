/**
 * Deputy's front door for callers outside its namespace: a Nexus service other teams' workflows call through an
 * endpoint (`createNexusServiceClient({ service: deputyService, endpoint })`). Its tenant is bound to the endpoint
 * (the task queue the endpoint targets), never to what a caller sends; a caller names its own key for each run, and
 * reaches only the runs started through the same door, and decides only the approvals of their trees.
 */
import * as nexus from 'nexus-rpc';
import type { RunResult } from './run.js';

/** What a caller sends to start a run: a key of its own (the run's id is made of it), a task, a preset, limits. */
export interface FrontDoorRun {
  /** The caller's name for the run, unique to it (a slug of at most 64 characters); starting it twice finds the first. */
  key: string;
  task: string;
  preset?: string;
  limits?: {
    maxTurns?: number;
    maxTokens?: number;
    maxCostUsd?: number;
    maxToolCalls?: number;
    maxDurationSeconds?: number;
  };
}

/** A run's status, the questions its children wait on, and the calls of its tree waiting for approval. */
export interface FrontDoorState {
  runId: string;
  status: string;
  openQuestions: { questionId: string; child: string; question: string }[];
  openApprovals: {
    requestId: string;
    path: string;
    tool: string;
    preview: string;
    /** The call's arguments whole; shorter than `argumentsChars` only when its run could not be asked. */
    arguments: string;
    argumentsChars: number;
    /** What a proof covers besides the decision (docs/approvals.md). */
    digest: string;
    firstRunId: string;
    deadline: string;
  }[];
}

/** A decision on a call of the run's tree that waits for approval (docs/approvals.md). */
export interface FrontDoorDecision {
  key: string;
  requestId: string;
  decision: 'approve' | 'deny';
  reason?: string;
  /** With approvers configured: who decides, and the proof its key made. */
  approver?: string;
  proof?: string;
}

/** An answer to the oldest open question of the run (or the one `questionId` names). */
export interface FrontDoorAnswer {
  key: string;
  answer: string;
  questionId?: string;
}

export const deputyService = nexus.service('deputy', {
  /** Starts a run and ends with its result; cancelling the operation cancels the run (and its children). */
  run: nexus.operation<FrontDoorRun, RunResult>(),
  /** The run's status and open questions. */
  state: nexus.operation<{ key: string }, FrontDoorState>(),
  /** Answers a question a child of the run waits on. */
  answer: nexus.operation<FrontDoorAnswer, { questionId: string; child: string }>(),
  /** Approves or denies a call of the run's tree that waits for approval. */
  decide: nexus.operation<FrontDoorDecision, { requestId: string; decision: 'approve' | 'deny'; by: string }>(),
});
