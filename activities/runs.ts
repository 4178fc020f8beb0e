/**
 * Activities that read other runs from Temporal: a run's session (for follow-ups), which runs have closed (the
 * admission sweep), who holds a child's id, the end of a run this parent attached to, and the preset a parent
 * recorded for a child that was given it by reference.
 */
import { type Client, WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, type Payload } from '@temporalio/common';
import { decodePayloads } from '../src/codec/decode.js';
import type {
  AwaitRunResult,
  ClosedRunsResult,
  DescribeRunResult,
  LoadSessionInput,
  LoadSessionResult,
  PresetAtRevisionInput,
  RunRef,
} from '../src/contract/activities.js';
import { Preset } from '../src/contract/preset.js';
import { type ConfigStore } from '../src/config/store.js';
import { presetRevision } from '../src/config/presets.js';
import { FAILURE } from '../src/contract/failures.js';
import { stateQuery } from '../src/contract/messages.js';
import { RunResult } from '../src/contract/run.js';
import { reportedUsage } from '../src/rules/child-end.js';
import { failureMessage, findFailure } from '../src/rules/failure-message.js';
import { withHeartbeat } from './heartbeat.js';

/** The activities that read runs; `temporal` is the worker's client (or a clear error without one). */
export function createRunLookups(temporal: () => Client) {
  return {
    /** Reads a run's session through its `state` query (for follow-ups). */
    async loadSession({ workflowId }: LoadSessionInput): Promise<LoadSessionResult> {
      const state = await temporal().workflow.getHandle(workflowId).query(stateQuery);
      return { events: state.session };
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
  };
}

/**
 * `presetAtRevision`: a child's preset given by reference, from this worker's config when it still has that
 * revision, else from what the child's parent recorded.
 */
export function createPresetLookup(config: ConfigStore, client: Client | undefined) {
  return async (input: PresetAtRevisionInput): Promise<Preset> => {
    const registered = config.current.presets.find((preset) => preset.id === input.id);
    if (registered && presetRevision(registered) === input.revision) return registered;
    const recorded = client && (await presetRecordedBy(client, input));
    if (recorded) return recorded;
    const where = client
      ? `nor recorded by the parent run ${input.parent.workflowId}`
      : 'and reading what the parent run recorded needs a Temporal client: pass `client` to createDeputyWorker';
    throw ApplicationFailure.create({
      type: FAILURE.PresetNotRecorded,
      message: `preset "${input.id}" at revision ${input.revision} is not in this worker's config, ${where}`,
      nonRetryable: true,
    });
  };
}

/**
 * The preset `id` at `revision` as a parent run recorded it, looked for only where Deputy records a definition: its
 * start input's `origin.preset` and `resume.composition` (never a caller's `restore`), the answers of its `resolveRun`
 * and `presetAtRevision` look-ups (local activities: markers) and of `resolvePresets`. Nothing else a history holds
 * (a hook's answer, a tool's result) is read. Matched by content: the revision is computed here, not read.
 */
export async function presetRecordedBy(
  client: Client,
  { id, revision, parent }: PresetAtRevisionInput,
): Promise<Preset | undefined> {
  const history = await client.workflow.getHandle(parent.workflowId, parent.runId).fetchHistory();
  const decode = async (payloads: Payload[] | null | undefined) =>
    (await decodePayloads(client.options.loadedDataConverter, payloads))[0] as Recorded | undefined;
  const activityTypes = new Map<string, string | null | undefined>();
  for (const event of history.events ?? []) {
    const scheduled = event.activityTaskScheduledEventAttributes;
    if (scheduled) activityTypes.set(String(event.eventId), scheduled.activityType?.name);
    let definitions: unknown[] = [];
    if (event.workflowExecutionStartedEventAttributes) {
      const input = await decode(event.workflowExecutionStartedEventAttributes.input?.payloads);
      definitions = [input?.origin?.preset?.definition, input?.resume?.composition?.presetDefinition];
    } else if (event.markerRecordedEventAttributes) {
      const answer = await decode(event.markerRecordedEventAttributes.details?.result?.payloads);
      definitions = [answer, answer?.presetDefinition];
    } else if (event.activityTaskCompletedEventAttributes) {
      const { scheduledEventId, result } = event.activityTaskCompletedEventAttributes;
      if (activityTypes.get(String(scheduledEventId)) !== 'resolvePresets') continue;
      const presets = (await decode(result?.payloads))?.presets;
      definitions = Array.isArray(presets) ? presets.map((preset) => preset?.definition) : [];
    }
    for (const definition of definitions) {
      const parsed = Preset.safeParse(definition);
      if (parsed.success && parsed.data.id === id && presetRevision(parsed.data) === revision) return parsed.data;
    }
  }
  return undefined;
}

/** The parts of a recorded payload where a preset definition can be, each maybe absent or of any shape. */
interface Recorded {
  origin?: { preset?: { definition?: unknown } };
  resume?: { composition?: { presetDefinition?: unknown } };
  presetDefinition?: unknown;
  presets?: ({ definition?: unknown } | null)[];
}

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
  const [input] = await decodePayloads(client.options.loadedDataConverter, started?.input?.payloads);
  const origin = (input as { origin?: unknown } | undefined)?.origin;
  return typeof origin === 'object' && origin !== null ? origin : {};
}
