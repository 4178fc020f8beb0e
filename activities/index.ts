/**
 * All of Deputy's activities, built from their dependencies so tests pass real objects pointed at local fakes.
 */
import { ApplicationFailure } from '@temporalio/common';
import type OpenAI from 'openai';
import type {
  LoadSessionInput,
  LoadSessionResult,
  ResolvePresetsInput,
  ResolvePresetsResult,
  ResolveRunInput,
  ResolveRunResult,
} from '../src/activity-types.js';
import { CompositionError, resolveComposition, resolvePresetTools } from '../src/composition.js';
import type { ConfigStore } from '../src/config-store.js';
import type { Client } from '@temporalio/client';
import type { HookFunction } from '../src/hooks.js';
import { stateQuery } from '../src/messages.js';
import type { ToolDefinition } from '../src/tools.js';
import { createCallModel, createSummarizeContext } from './call-model.js';
import { createRunHook } from './run-hook.js';
import { createRunTool } from './run-tool.js';

/** Dependencies of every activity. */
export interface ActivityDeps {
  openai: OpenAI;
  /** The configuration now: read at every call, so a reload takes effect without a restart. */
  config: ConfigStore;
  tools: ReadonlyMap<string, ToolDefinition>;
  /** Only to redact it from error text. */
  apiKey?: string | undefined;
  /** Task queue children run on (R2.4). */
  backgroundTaskQueue: string;
  /** A Temporal client, for reading other runs' sessions (follow-ups). */
  client?: Client | undefined;
  /** Hook functions the config's hooks may name. */
  hookFunctions?: ReadonlyMap<string, HookFunction>;
}

/** Builds the activities a Deputy worker registers. */
export function createActivities({
  openai,
  config,
  tools,
  apiKey,
  backgroundTaskQueue,
  hookFunctions,
  client,
}: ActivityDeps) {
  const callModel = createCallModel({
    openai,
    apiKey,
    timeoutMs: () => config.current.modelTimeoutSeconds * 1000,
  });
  return {
    callModel,
    runTool: createRunTool(tools),
    summarizeContext: createSummarizeContext(callModel),
    // Same call, its own name, so Temporal UI tells compaction from context summaries.
    compactSession: createSummarizeContext(callModel),
    runHook: createRunHook(config, hookFunctions ?? new Map()),
    async resolveRun(input: ResolveRunInput): Promise<ResolveRunResult> {
      try {
        return resolveComposition(config.current, tools, input, { backgroundTaskQueue });
      } catch (err) {
        if (err instanceof CompositionError) {
          throw ApplicationFailure.create({ type: err.type, message: err.message, nonRetryable: true });
        }
        throw err;
      }
    },
    /** Reads a run's session through its `state` query (R4.5 follow-ups). */
    async loadSession({ workflowId }: LoadSessionInput): Promise<LoadSessionResult> {
      if (!client) {
        throw ApplicationFailure.create({
          type: 'Config.NoClient',
          message: 'follow-ups need a Temporal client: pass `client` to createDeputyWorker',
          nonRetryable: true,
        });
      }
      const state = await client.workflow.getHandle(workflowId).query(stateQuery);
      return { events: state.session };
    },
    async resolvePresets(input: ResolvePresetsInput): Promise<ResolvePresetsResult> {
      return resolvePresetTools(config.current, input);
    },
  };
}

/** The activities' type, for `proxyActivities<DeputyActivities>` in workflow code. */
export type DeputyActivities = ReturnType<typeof createActivities>;
