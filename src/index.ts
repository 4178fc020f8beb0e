/**
 * `deputy`: what a backend service needs to start and follow runs — the `agentRun` contract's schemas, its queries
 * and updates, and the client. No worker, no `openai`, no file system: a service that only starts runs loads nothing
 * heavier than `@temporalio/client`. Workers come from `deputy/worker`.
 */
export {
  RunInput,
  RunResult,
  RunState,
  RunStatus,
  LiveStatus,
  Limits,
  Usage,
  LedgerEntry,
  SendMessageInput,
  EndConversationInput,
} from './contract/run.js';
export { SessionEvent } from './contract/session.js';
export { SESSION_VERSION } from './contract/dialogue.js';
export { SessionExport, SESSION_FORMAT } from './contract/session-export.js';
export { Preset } from './contract/preset.js';
export { Brief, DelegateArgs, InterjectArgs } from './contract/delegation.js';
export {
  stateQuery,
  sendMessageUpdate,
  endConversationUpdate,
  interjectUpdate,
  approvalsQuery,
  decideApprovalUpdate,
} from './contract/messages.js';
export { ApprovalRequest, DecideApprovalInput, type DecideApprovalResult } from './contract/approvals.js';
export { approvalDigest, approvalProof } from './ops/approval-proof.js';
export type { DecideOptions } from './client/approvals.js';
export { DeputyClient, type DeputyClientOptions, type StartRunOptions } from './client/client.js';
export type { OpenQuestion, SessionInfo } from './client/listings.js';
export { DEPUTY_SEARCH_ATTRIBUTES } from './contract/search-attributes.js';
export { FAILURE, type FailureType } from './contract/failures.js';
export * from './contract/errors.js';
