/**
 * All of Deputy's activities, built from their dependencies so tests pass real objects pointed at local fakes.
 */
import { FAILURE } from '../src/contract/failures.js';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type OpenAI from 'openai';
import type {
  AdmissionRequest,
  AwaitRunResult,
  ClosedRunsResult,
  DescribeRunResult,
  RunRef,
  LoadSessionInput,
  LoadSessionResult,
  ResolvePresetsInput,
  ResolvePresetsResult,
  ResolveRunInput,
  ResolveRunResult,
} from '../src/contract/activities.js';
import { CompositionError, resolveComposition, resolvePresetTools } from './composition.js';
import type { ConfigStore } from '../src/config/store.js';
import { configEntry } from '../src/config/schema.js';
import type { Client } from '@temporalio/client';
import type { HookFunction } from '../src/contract/hooks.js';
import { admissionAcquireSignal, stateQuery } from '../src/contract/messages.js';
import { admissionWorkflowId } from '../src/rules/children.js';
import { failureMessage, findFailure } from '../src/rules/failure-message.js';
import { reportedUsage } from '../src/rules/child-run.js';
import { RunResult } from '../src/contract/run.js';
import { withHeartbeat } from './heartbeat.js';
import { toToolSpec, type ToolDefinition, type ToolSpec } from '../src/contract/tools.js';
import { STEERING_TOOL_REGISTRY, steeringToolSpec, type SteeringToolName } from '../src/contract/delegation.js';
import { createCallModel, createSummarizeContext } from './call-model.js';
import { ContextCache } from './context-cache.js';
import { tenantDelegationLookup } from '../src/config/tenant-evidence.js';
import { createRunHook } from './run-hook.js';
import { createRunTool } from './run-tool.js';
import { priceFromUsdPerMTok } from '../src/rules/usage.js';
import { STORE_MAX_TEXT_BYTES } from '../src/ops/storage.js';
import { MessageKeys } from '../src/ops/message-keys.js';
import type { MessageToSign, VerifyMessageInput, VerifyMessageResult } from '../src/contract/signals.js';
import { Context } from '@temporalio/activity';

/** Dependencies of every activity. */
export interface ActivityDeps {
  openai: OpenAI;
  /** The worker's data converter has an external payload store: tools' whole results are kept there. */
  payloadStore?: boolean;
  /** The configuration now: read at every call, so a reload takes effect without a restart. */
  config: ConfigStore;
  tools: ReadonlyMap<string, ToolDefinition>;
  /** Only to redact it from error text. */
  apiKey?: string | undefined;
  /** Task queue children run on. */
  backgroundTaskQueue: string;
  /** A Temporal client, for reading other runs' sessions (follow-ups). */
  client?: Client | undefined;
  /** Hook functions the config's hooks may name. */
  hookFunctions?: ReadonlyMap<string, HookFunction>;
  /** Keys that sign messages between runs. @default `MessageKeys.fromEnv()` */
  messageKeys?: MessageKeys;
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
  payloadStore,
  messageKeys,
}: ActivityDeps) {
  const keys = messageKeys ?? MessageKeys.fromEnv();
  // Evidence is read once per configuration (a reload reads it again); paths were made absolute by the loader.
  const activated = tenantDelegationLookup(process.cwd());
  const temporal = (): Client => {
    if (client) return client;
    throw ApplicationFailure.create({
      type: FAILURE.NoClient,
      message: 'follow-ups and attaching to children need a Temporal client: pass `client` to createDeputyWorker',
      nonRetryable: true,
    });
  };
  const contexts = new ContextCache();
  const callModel = createCallModel({
    openai,
    apiKey,
    timeoutMs: () => config.current.modelTimeoutSeconds * 1000,
    maxTextBytes: () => config.current.payloads.maxTextBytes,
    toolSpec: toolSpecs(tools),
    contexts,
    capParameter: (model) => configEntry(config.current.capParameterByModel, model) ?? config.current.capParameter,
    inputCountFactor: (model) =>
      configEntry(config.current.inputCountFactorByModel, model) ?? config.current.inputCountFactor,
    price: (model) => {
      const price = configEntry(config.current.prices, model);
      return price && priceFromUsdPerMTok(price.inputPerMTokUsd, price.outputPerMTokUsd);
    },
  });
  return {
    callModel,
    runTool: createRunTool(
      tools,
      () => config.current.payloads.maxTextBytes,
      payloadStore ? STORE_MAX_TEXT_BYTES : undefined,
    ),
    summarizeContext: createSummarizeContext(callModel),
    // Same call, its own name, so Temporal UI tells compaction from context summaries.
    compactSession: createSummarizeContext(callModel, contexts),
    runHook: createRunHook(config, hookFunctions ?? new Map()),
    async resolveRun(input: ResolveRunInput): Promise<ResolveRunResult> {
      try {
        const current = config.current;
        return resolveComposition(current, tools, input, {
          backgroundTaskQueue,
          tenantActivated: (tenant) => activated(current, tenant),
        });
      } catch (err) {
        if (err instanceof CompositionError) {
          throw ApplicationFailure.create({ type: err.type, message: err.message, nonRetryable: true });
        }
        throw err;
      }
    },
    /** Reads a run's session through its `state` query (for follow-ups). */
    async loadSession({ workflowId }: LoadSessionInput): Promise<LoadSessionResult> {
      const state = await temporal().workflow.getHandle(workflowId).query(stateQuery);
      return { events: state.session };
    },
    /**
     * Asks the tenant's admission workflow (started if it is not running) for a slot for a child. The sender is
     * the workflow this activity runs for, as Temporal records it, whatever the input says.
     */
    async requestAdmission(request: AdmissionRequest): Promise<void> {
      const parentId = Context.current().info.workflowExecution?.workflowId;
      if (!parentId) throw ApplicationFailure.nonRetryable('requestAdmission runs only for a workflow');
      const to = admissionWorkflowId(request.tenant);
      const { childWorkflowId } = request;
      const signed = keys.seal({
        signal: admissionAcquireSignal.name,
        from: parentId,
        to,
        id: `acquire:${childWorkflowId}`,
        body: { childWorkflowId },
      });
      await temporal().workflow.signalWithStart('tenantAdmission', {
        workflowId: to,
        taskQueue: backgroundTaskQueue,
        args: [{ tenant: request.tenant, cap: request.cap, sweepSeconds: request.sweepSeconds }],
        signal: admissionAcquireSignal,
        signalArgs: [signed],
        staticSummary: `admission of tenant ${request.tenant}: at most ${request.cap} live children`,
      });
    },
    /** Signs a message between runs; a local activity, so no client can have it scheduled. */
    async signMessage(message: MessageToSign): Promise<string> {
      return keys.sign(message);
    },
    /** Checks a message between runs was signed by a worker. */
    async verifyMessage({ message, sig }: VerifyMessageInput): Promise<VerifyMessageResult> {
      return keys.verify(message, sig);
    },
    /** The tenant's live-child cap in the configuration now (an admission workflow never takes it from a message). */
    async admissionCap({ tenant }: { tenant: string }): Promise<{ cap: number | null }> {
      return { cap: configEntry(config.current.tenants, tenant)?.maxLiveChildren ?? null };
    },
    /** Which of these workflows have closed, and which do not exist (the admission sweep). */
    async closedRuns({ workflowIds }: { workflowIds: string[] }): Promise<ClosedRunsResult> {
      const result: ClosedRunsResult = { closed: [], missing: [] };
      for (const workflowId of workflowIds) {
        try {
          const described = await temporal().workflow.getHandle(workflowId).describe();
          if (described.status.name !== 'RUNNING') result.closed.push(workflowId);
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) result.missing.push(workflowId);
          else throw err;
        }
      }
      return result;
    },
    /** What Temporal records of the run holding a child's id, to tell this parent's own child from a squatter. */
    async describeRun({ workflowId }: RunRef): Promise<DescribeRunResult> {
      const client = temporal();
      const described = await client.workflow.getHandle(workflowId).describe();
      const text = (value: unknown) => (typeof value === 'string' ? value : null);
      const origin = described.type === 'agentRun' ? await startOrigin(client, workflowId, described.runId) : undefined;
      return {
        workflowType: described.type,
        running: described.status.name === 'RUNNING',
        parentId: described.parentExecution?.workflowId ?? null,
        invocationId: text(origin?.invocationId),
        taskName: text(origin?.taskName),
      };
    },
    /** Waits for a run this parent attached to (it did not start it in this execution) and reads its end. */
    async awaitRun({ workflowId }: RunRef): Promise<AwaitRunResult> {
      const handle = temporal().workflow.getHandle(workflowId);
      return withHeartbeat(async (signal) => {
        const ended = handle.result().then(
          (value): AwaitRunResult => ({ kind: 'result', result: RunResult.parse(value) }),
          (err: unknown): AwaitRunResult => {
            if (!(err instanceof WorkflowFailedError)) throw err;
            if (err.cause instanceof CancelledFailure) return { kind: 'cancelled' };
            const failure = findFailure(err.cause, FAILURE.ChildFailed);
            return { kind: 'failed', error: failureMessage(err), usage: reportedUsage(failure?.details?.[0]) };
          },
        );
        const aborted = new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () =>
            reject(new CancelledFailure('stopped waiting: the parent was cancelled')),
          ),
        );
        return Promise.race([ended, aborted]);
      }, 5000);
    },
    async resolvePresets(input: ResolvePresetsInput): Promise<ResolvePresetsResult> {
      return resolvePresetTools(config.current, input);
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

/** The `origin` a run was started with, read from the first event of its current execution. */
async function startOrigin(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<{ invocationId?: unknown; taskName?: unknown }> {
  const { history } = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId, runId },
    maximumPageSize: 1,
  });
  const started = history?.events?.[0]?.workflowExecutionStartedEventAttributes;
  const [input] = await decodeArrayFromPayloads(client.options.loadedDataConverter, started?.input?.payloads);
  const origin = (input as { origin?: unknown } | undefined)?.origin;
  return typeof origin === 'object' && origin !== null ? origin : {};
}
