/**
 * `deputy/worker`: hosting Deputy — its own workers (`createDeputyWorker`), or a plugin for a Worker a service
 * already runs (`deputyPlugin`), the configuration loader, tools and hooks.
 */
export { ToolError } from '../contract/errors.js';
export {
  createDeputyWorker,
  deputyActivities,
  checkSearchAttributes,
  DeputyWorker,
  type DeputyActivityOptions,
  type DeputyWorkerOptions,
} from './factory.js';
export { bundleDeputyWorkflows, WORKFLOWS_PATH } from './bundle.js';
export { deputyPlugin, DeputyPlugin, type DeputyPluginOptions } from './plugin.js';
export { applyEnv, loadConfig, readEnv, type DeputyEnv } from '../config/load.js';
export { DeputyConfig, parseConfig } from '../config/schema.js';
export { ConfigStore } from '../config/store.js';
export { defineTool, type ToolContext, type ToolDefinition } from '../contract/tools.js';
// A service running Deputy through the plugin lists its MCP servers' tools itself and passes them as `tools`.
export { listMcpTools, type McpListing, type McpOptions } from '../../activities/mcp.js';
export { builtinTools, calculateTool, createSearchNotesTool, SAMPLE_NOTES } from '../../activities/builtin-tools.js';
export type { HookDecision, HookFunction, HookInput } from '../contract/hooks.js';
export * from '../contract/errors.js';
