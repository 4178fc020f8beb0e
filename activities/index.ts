/**
 * All of Deputy's activities, built from their dependencies so tests pass real objects pointed at local fakes.
 */
import { CompositionError } from '../src/contract/errors.js';
import { FAILURE } from '../src/contract/failures.js';
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import type {
  OpenMcpSessionInput,
  OpenMcpSessionResult,
  ResolvePresetsInput,
  ResolvePresetsResult,
  ResolveRunInput,
  ResolvedRun,
} from '../src/contract/activities.js';
import { resolveComposition, resolvePresetTools } from '../src/config/presets.js';
import type { ConfigStore } from '../src/config/store.js';
import { configEntry } from '../src/config/schema.js';
import type { Client } from '@temporalio/client';
import type { HookFunction } from '../src/contract/hooks.js';
import { toToolSpec, type ToolDefinition, type ToolSpec } from '../src/contract/tools.js';
import { STEERING_TOOL_REGISTRY, steeringToolSpec, type SteeringToolName } from '../src/contract/delegation.js';
import { createCallModel, createSummarizeContext, type Endpoint } from './call-model.js';
import { createMessaging } from './messaging.js';
import { createPresetLookup, createRunLookups } from './runs.js';
import { ContextCache } from './context-cache.js';
import { temporalRunRecords, tenantDelegationLookup } from '../src/config/tenant-evidence.js';
import { createRunHook } from './run-hook.js';
import { createRunTool } from './run-tool.js';
import { modelPrice } from '../src/rules/usage.js';
import { STORE_MAX_TEXT_BYTES } from '../src/ops/storage.js';
import { MessageKeys } from '../src/ops/message-keys.js';
import { ArtifactStore } from '../src/ops/artifacts.js';
import { toolCallSeals } from './tool-call-seal.js';
import { runGrants } from './grants.js';
import { createApprovalActivities } from './approvals.js';

/** Dependencies of every activity. */
export interface ActivityDeps {
  openai: OpenAI;
  /** The endpoints of models other providers serve (`providers` in the config), by model; the rest go to `openai`. */
  endpoints?: ReadonlyMap<string, Endpoint>;
  /** The worker's data converter has an external payload store: tools' whole results are kept there. */
  payloadStore?: boolean;
  /** The configuration now: read at every call, so a reload takes effect without a restart. */
  config: ConfigStore;
  tools: ReadonlyMap<string, ToolDefinition>;
  /** Only to redact it from error text. */
  apiKey?: string | undefined;
  /** Task queue children run on. */
  childTaskQueue: string;
  /** A Temporal client, for reading other runs' sessions (follow-ups). */
  client?: Client | undefined;
  /** Hook functions the config's hooks may name. */
  hookFunctions?: ReadonlyMap<string, HookFunction>;
  /** Keys that sign messages between runs. @default `MessageKeys.fromEnv()` */
  messageKeys?: MessageKeys;
  /** The task queue only this worker polls, where the runs whose sessions it holds send their stateful MCP calls. */
  sessionQueue?: string | undefined;
  /** Where runs' artifacts are kept. @default `ArtifactStore.fromEnv()` (the payload store, else `.deputy/artifacts`) */
  artifactStore?: ArtifactStore;
}

/** What an activity that needs a Temporal client says when the worker was given none. */
function noClient(): never {
  throw ApplicationFailure.create({
    type: FAILURE.NoClient,
    message: 'follow-ups and attaching to children need a Temporal client: pass `client` to createDeputyWorker',
    nonRetryable: true,
  });
}

/** Builds the activities a Deputy worker registers. */
export function createActivities({
  openai,
  endpoints,
  config,
  tools,
  apiKey,
  childTaskQueue,
  hookFunctions,
  client,
  payloadStore,
  messageKeys,
  sessionQueue,
  artifactStore,
}: ActivityDeps) {
  const keys = messageKeys ?? MessageKeys.fromEnv();
  // Evidence is read once per configuration (a reload reads it again); paths were made absolute by the loader.
  const activated = tenantDelegationLookup(process.cwd(), client && temporalRunRecords(client));
  const temporal = (): Client => client ?? noClient();
  const presetAtRevision = createPresetLookup(config, client);
  const contexts = new ContextCache();
  const seals = toolCallSeals(keys);
  const { grantTree, madeByModel } = runGrants(keys);
  const callModel = createCallModel({
    sealToolCall: seals.seal,
    openai,
    apiKey,
    ...(endpoints && { endpointFor: (model: string) => endpoints.get(model) }),
    toolSpec: toolSpecs(tools),
    contexts,
    ...modelSettings(config),
  });
  return {
    callModel,
    runTool: createRunTool(tools, {
      ...readsOfConfig(config),
      ...(payloadStore && { wholeMaxBytes: STORE_MAX_TEXT_BYTES }),
      madeByModel: seals.verify,
      artifacts: { store: artifactStore ?? ArtifactStore.fromEnv(), keys },
    }),
    summarizeContext: createSummarizeContext(callModel),
    // Same call, its own name, so Temporal UI tells compaction from context summaries.
    compactSession: createSummarizeContext(callModel, contexts),
    runHook: createRunHook(config, hookFunctions ?? new Map()),
    async resolveRun({ presetAt, root, ...input }: ResolveRunInput): Promise<ResolvedRun> {
      // A preset given by reference is looked up here, so the run records its definition once, in this answer.
      if (presetAt) input.presetDefinition = await presetAtRevision(presetAt);
      try {
        const current = config.current;
        const tenantActivated = await activated(current, input.tenant);
        const composition = resolveComposition(current, tools, input, { childTaskQueue, tenantActivated });
        // A root acts within what the config resolved for it: its tree's grant is made with that answer.
        return root ? { ...composition, grant: await grantTree() } : composition;
      } catch (err) {
        if (err instanceof CompositionError) {
          throw ApplicationFailure.create({ type: err.type, message: err.message, nonRetryable: true });
        }
        throw err;
      }
    },
    /** This worker holds the run's session with the server: its calls to the server come to this worker's queue. */
    async openMcpSession(input: OpenMcpSessionInput): Promise<OpenMcpSessionResult> {
      const server = configEntry(config.current.mcpServers, input.server);
      if (sessionQueue === undefined || !server?.stateful) return null;
      return { taskQueue: sessionQueue, startTimeoutSeconds: server.sessionStartSeconds };
    },
    async resolvePresets(input: ResolvePresetsInput): Promise<ResolvePresetsResult> {
      return resolvePresetTools(config.current, input);
    },
    presetAtRevision,
    madeByModel,
    ...createApprovalActivities(config, (call) => seals.verify(call)),
    ...createRunLookups(temporal),
    ...createMessaging({ keys, temporal, config, childTaskQueue }),
  };
}

/** What a tool call reads of the config as it is at each call: its payload budget, its approvals. */
function readsOfConfig(config: ActivityDeps['config']) {
  return { maxTextBytes: () => config.current.payloads.maxTextBytes, approvals: () => config.current.approvals };
}

/** The model call's settings, read from the config as it is at each call (a reload changes them). */
function modelSettings(config: ActivityDeps['config']) {
  return {
    timeoutMs: () => config.current.modelTimeoutSeconds * 1000,
    maxTextBytes: () => config.current.payloads.maxTextBytes,
    capParameter: (model: string) =>
      configEntry(config.current.capParameterByModel, model) ?? config.current.capParameter,
    inputCountFactor: (model: string) =>
      configEntry(config.current.inputCountFactorByModel, model) ?? config.current.inputCountFactor,
    price: (model: string) => {
      const price = configEntry(config.current.prices, model);
      return price && modelPrice(price);
    },
  };
}

/** What the model sees of each tool a run names: the registered tools' specs and the steering tools', built once. */
function toolSpecs(tools: ReadonlyMap<string, ToolDefinition>): (name: string) => ToolSpec | undefined {
  const specs = new Map<string, ToolSpec>(
    (Object.keys(STEERING_TOOL_REGISTRY) as SteeringToolName[]).map((name) => [name, steeringToolSpec(name)]),
  );
  return (name) => {
    let spec = specs.get(name);
    const tool = tools.get(name);
    if (!spec && tool) specs.set(name, (spec = toToolSpec(tool)));
    return spec;
  };
}

/** The activities' type, for `proxyActivities<DeputyActivities>` in workflow code. */
export type DeputyActivities = ReturnType<typeof createActivities>;
