/** Queries and updates of `agentRun`, beside the schemas of their payloads. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { AnswerChildArgs, InterjectArgs } from './delegation.js';
import type { EndConversationInput, RunState, SendMessageInput } from './run.js';
import type { ApprovalRequest, ApprovalsBody, DecideApprovalInput, DecideApprovalResult } from './approvals.js';
import type {
  AdmissionAcquireBody,
  AdmissionReleaseBody,
  AdmittedBody,
  AnswerBody,
  InterjectionBody,
  QuestionBody,
  SignedMessage,
} from './signals.js';

/** Reads the run's status, usage, remaining limits and effective dialogue. */
export const stateQuery = defineQuery<RunState>('state');

/** Puts a user message into a live run; resolves once the message is in the session. */
export const sendMessageUpdate = defineUpdate<{ accepted: true }, [SendMessageInput]>('sendMessage');

/** Sends a message to a live child of this run: `{ task_name, message }`. */
export const interjectUpdate = defineUpdate<{ delivered: true; childWorkflowId: string }, [InterjectArgs]>('interject');

/** How a parent delivers an interjection to its child (workflow to workflow). */
export const interjectionSignal = defineSignal<[SignedMessage<InterjectionBody>]>('deputy.interjection');

/** Ends a conversation-mode run after its current turn. */
export const endConversationUpdate = defineUpdate<{ accepted: true }, [EndConversationInput]>('endConversation');

/** A child's question to its parent (workflow to workflow); the parent checks the child is its own, live. */
export const questionSignal = defineSignal<[SignedMessage<QuestionBody>]>('deputy.question');

/** A parent's answer to its child's open question (workflow to workflow). */
export const answerSignal = defineSignal<[SignedMessage<AnswerBody>]>('deputy.answer');

/** Answers a child's open question directly: `{ task_name, answer, question_id? }`, sent to the child's parent. */
export const answerChildUpdate = defineUpdate<
  { delivered: true; childWorkflowId: string; questionId: string },
  [AnswerChildArgs]
>('answerChild');

/** The open approval requests of the run and (on a root, on any parent) of every run below it. */
export const approvalsQuery = defineQuery<ApprovalRequest[]>('approvals');

/** Decides one of the run's own open approval requests: `{ requestId, decision, reason?, approver?, proof? }`. */
export const decideApprovalUpdate = defineUpdate<DecideApprovalResult, [DecideApprovalInput]>('decideApproval');

/** A child tells its parent the open approval requests of its subtree (workflow to workflow). */
export const approvalsSignal = defineSignal<[SignedMessage<ApprovalsBody>]>('deputy.approvals');

/** A parent asks its tenant's admission workflow for a live-child slot for `childWorkflowId`. */
export const admissionAcquireSignal = defineSignal<[SignedMessage<AdmissionAcquireBody>]>('deputy.admission.acquire');

/** A child's slot is free again (it ended, or its parent stopped waiting for one). */
export const admissionReleaseSignal = defineSignal<[SignedMessage<AdmissionReleaseBody>]>('deputy.admission.release');

/** The admission workflow tells a parent its child may start. */
export const admittedSignal = defineSignal<[SignedMessage<AdmittedBody>]>('deputy.admitted');

/** An admission workflow's state: the children holding a slot and those waiting for one, oldest first. */
export const admissionStateQuery = defineQuery<{ tenant: string; cap: number; holders: string[]; waiting: string[] }>(
  'admissionState',
);

/**
 * Asks a conversation waiting for its person to look whether Temporal names a newer version of its deployment, and to
 * move to it if it may (`deputy versions --move`). Unsigned: its payload is ignored and it grants nothing, since a
 * run moves only when the server says so, and only at a quiet moment.
 */
export const checkVersionSignal = defineSignal<unknown[]>('deputy.checkVersion');
