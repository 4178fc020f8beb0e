/** Deputy's public API: the run contract's schemas, the client, and what a service needs to host a worker. */
export { RunInput, RunResult, RunState, Limits, Usage, SendMessageInput, EndConversationInput } from './run-schema.js';
export { SessionEvent, SESSION_VERSION } from './session.js';
export { stateQuery, sendMessageUpdate, endConversationUpdate } from './messages.js';
export { DeputyClient, type DeputyClientOptions, type StartRunOptions } from './client.js';
export { createDeputyWorker, type DeputyWorkerOptions } from './worker-factory.js';
export { DeputyConfig, loadConfig, parseConfig, readEnv } from './config.js';
export { defineTool, type ToolDefinition } from './tools.js';
export { DEPUTY_SEARCH_ATTRIBUTES } from './search-attributes.js';
export * from './errors.js';
