/**
 * `deputy/testing`: what Deputy's own tests use, for services testing their use of Deputy — the scripted
 * OpenAI-compatible model (the only fake: the real `openai` client talks to it over HTTP) and an embedded Temporal dev
 * server with Deputy's search attributes (needs `@temporalio/testing` and the `temporal` CLI).
 */
export { ScriptedModelServer } from './scripted-model.js';
export * from './script.js';
export { startDevServer, type DevServer, type DevServerOptions } from './dev-server.js';
export { devServerExecutable, findTemporalCli } from './temporal-cli.js';
