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
export { SessionEvent, SESSION_VERSION } from './contract/session.js';
export { SessionExport, SESSION_FORMAT } from './rules/sessions.js';
export { Preset } from './contract/preset.js';
export { Brief, DelegateArgs, InterjectArgs } from './rules/delegation.js';
export { stateQuery, sendMessageUpdate, endConversationUpdate, interjectUpdate } from './contract/messages.js';
export {
  DeputyClient,
  UpdateRejectedError,
  type DeputyClientOptions,
  type SessionInfo,
  type StartRunOptions,
} from './client/client.js';
export { DEPUTY_SEARCH_ATTRIBUTES } from './contract/search-attributes.js';
export { FAILURE, type FailureType } from './contract/failures.js';
export * from './contract/errors.js';
