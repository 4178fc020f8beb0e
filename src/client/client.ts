/**
 * A typed client for backend services: start runs, read their state, talk to them, cancel them, await results.
 * Everything it sends is validated by the same zod schemas the workflow uses.
 */
import { runPriority } from '../rules/fleet.js';
import { listSessions, openQuestionsOf, type OpenQuestion, type SessionInfo } from './listings.js';
import { InputError, UpdateRejectedError } from '../contract/errors.js';
import { randomUUID } from 'node:crypto';
import {
  CancelledFailure,
  Client,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import type { z } from 'zod';
import { failureMessage } from '../rules/failure-message.js';
import { SESSION_VERSION } from '../contract/dialogue.js';
import { parseSessionExport } from '../rules/sessions.js';
import { decideRestoration, forkEvents } from '../rules/restoration.js';
import { SESSION_FORMAT, type SessionExport } from '../contract/session-export.js';
import { AnswerChildArgs, InterjectArgs } from '../contract/delegation.js';
import {
  answerChildUpdate,
  endConversationUpdate,
  interjectUpdate,
  sendMessageUpdate,
  stateQuery,
} from '../contract/messages.js';
import { EndConversationInput, RunInput, RunResult, SendMessageInput, Usage, type RunState } from '../contract/run.js';
import { ZERO_USAGE } from '../rules/usage.js';
import { watchTree, type WatchOptions } from './watch.js';
import { type WatchEvent } from './watch-events.js';
import { connectTemporal } from './connect.js';
import { startRefused } from './start-refused.js';
import { deputyDataConverter } from '../codec/aes-gcm.js';
import { tracingWanted } from '../ops/wanted.js';
import { describeIssues } from '../rules/zod-issues.js';
import { decideApproval, openApprovals, type DecideOptions } from './approvals.js';
import type { ApprovalRequest, DecideApprovalResult } from '../contract/approvals.js';
import { rootStartAttributes } from '../contract/search-attributes.js';

/** Options of `DeputyClient`. */
export interface DeputyClientOptions {
  /** Task queue of the Deputy workers. @default 'deputy' */
  taskQueue?: string;
}

/** Options of `startRun`. */
export interface StartRunOptions {
  /** Workflow id (also the session id). @default `run-<uuid>` */
  workflowId?: string;
  /** One line shown for the run in Temporal UI. @default the task's first 80 characters */
  summary?: string;
  /** Memo fields recorded with the run's start (a front door records who started it). */
  memo?: Record<string, unknown>;
}

function parseOrThrow<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new InputError(what, describeIssues(parsed.error));
  return parsed.data;
}

/** Reads the usage a finished run left in its memo; zero when there is none. */
function usageFromMemo(memo: Record<string, unknown> | undefined): Usage {
  const parsed = Usage.safeParse(memo?.deputyUsage);
  return parsed.success ? parsed.data : ZERO_USAGE;
}

/** Turns a refused update into an error whose message is the run's own reason. */
function rejected(err: unknown): never {
  if (err instanceof WorkflowUpdateFailedError)
    throw new UpdateRejectedError(failureMessage(err.cause ?? err), { cause: err });
  throw err;
}

/** A client for Deputy runs. */
export class DeputyClient {
  private readonly taskQueue: string;

  constructor(
    /** The Temporal client it talks through. */
    readonly temporal: Client,
    options: DeputyClientOptions = {},
  ) {
    this.taskQueue = options.taskQueue ?? 'deputy';
  }

  /** Connects to `address` (default `TEMPORAL_ADDRESS` or `localhost:7233`). */
  static async connect(
    options: DeputyClientOptions & { address?: string; namespace?: string } = {},
  ): Promise<DeputyClient> {
    const connection = await connectTemporal(options.address ?? process.env.TEMPORAL_ADDRESS ?? 'localhost:7233');
    const namespace = options.namespace ?? process.env.TEMPORAL_NAMESPACE ?? 'default';
    // With DEPUTY_CODEC_KEYS set, what this client writes is encrypted and what it reads decrypted.
    const dataConverter = deputyDataConverter();
    // With OTEL_EXPORTER_OTLP_ENDPOINT set, a run's trace starts at this client's start call. The
    // OpenTelemetry SDK is loaded only then: a service that only starts runs loads nothing heavier than the client.
    const tracing = tracingWanted() ? (await import('../ops/tracing.js')).deputyTracing() : undefined;
    const client = new Client({
      connection,
      namespace,
      ...(dataConverter && { dataConverter }),
      ...(tracing && { plugins: [tracing.plugin] }),
    });
    return new DeputyClient(client, {
      taskQueue: options.taskQueue ?? process.env.DEPUTY_TASK_QUEUE ?? 'deputy',
    });
  }

  /** Validates `input` and starts an `agentRun`; throws `InputError` naming each bad field. */
  async startRun(input: RunInput, options: StartRunOptions = {}): Promise<WorkflowHandleWithFirstExecutionRunId> {
    const valid = parseOrThrow(RunInput, input, 'RunInput');
    // Only Deputy's own workflow code writes these; a worker refuses them from a caller anyway, this says it sooner.
    const written = (['resume', 'origin'] as const).filter((field) => valid[field] !== undefined);
    if (written.length > 0) {
      throw new InputError(
        'RunInput',
        written.map(
          (field) => `${field}: set only by Deputy's workflows (a run continuing as new, a parent on its child)`,
        ),
      );
    }
    const workflowId = options.workflowId ?? `run-${randomUUID()}`;
    try {
      return await this.temporal.workflow.start('agentRun', {
        taskQueue: this.taskQueue,
        workflowId,
        args: [valid],
        // Set in the start call, these cost the run no upsert of its own.
        typedSearchAttributes: rootStartAttributes(workflowId, valid.restore ? { tenant: valid.tenant } : valid),
        // Its workflow tasks in the place its calls will take (the run sets its calls' own whatever a starter says).
        priority: runPriority({ mode: valid.mode ?? 'task', depth: 0, tenant: valid.tenant, rootId: workflowId }),
        staticSummary: options.summary ?? `agentRun: ${valid.task.replace(/\s+/g, ' ').slice(0, 80)}`,
        ...(options.memo && { memo: options.memo }),
      });
    } catch (err) {
      throw startRefused(err, valid);
    }
  }

  /** The run's live state (status, usage, remaining limits, session). */
  async getState(workflowId: string): Promise<RunState> {
    return this.temporal.workflow.getHandle(workflowId).query(stateQuery);
  }

  /** Sends a user message into a live run. */
  async sendMessage(workflowId: string, message: string): Promise<void> {
    const payload = parseOrThrow(SendMessageInput, { message }, 'sendMessage payload');
    await this.temporal.workflow
      .getHandle(workflowId)
      .executeUpdate(sendMessageUpdate, { args: [payload] })
      .catch(rejected);
  }

  /**
   * Sends a message to a live child of `parentId`. A child dispatched with context also receives what the
   * parent said and did since its snapshot. Returns the child's workflow id.
   */
  async interject(parentId: string, taskName: string, message: string): Promise<string> {
    const payload = parseOrThrow(InterjectArgs, { task_name: taskName, message }, 'interject payload');
    const reply = await this.temporal.workflow
      .getHandle(parentId)
      .executeUpdate(interjectUpdate, { args: [payload] })
      .catch(rejected);
    return reply.childWorkflowId;
  }

  /**
   * Answers a child's open question directly, as a person would. The question is held by the child's parent,
   * which Temporal records (not the caller): the answer goes through the parent's `answerChild` update, which refuses
   * a question already answered or no longer open. Returns the question's id.
   */
  async answer(childWorkflowId: string, answer: string, questionId?: string): Promise<string> {
    const description = await this.temporal.workflow.getHandle(childWorkflowId).describe();
    const parentId = description.parentExecution?.workflowId;
    if (!parentId) {
      throw new InputError('answer', [
        `${childWorkflowId}: not a child run (Temporal records no parent); nobody asked`,
      ]);
    }
    const entry = (await this.getState(parentId)).delegations.findLast((e) => e.childWorkflowId === childWorkflowId);
    if (!entry) throw new InputError('answer', [`${childWorkflowId}: its parent ${parentId} did not delegate it`]);
    const payload = parseOrThrow(
      AnswerChildArgs,
      { task_name: entry.taskName, answer, ...(questionId !== undefined && { question_id: questionId }) },
      'answerChild payload',
    );
    const reply = await this.temporal.workflow
      .getHandle(parentId)
      .executeUpdate(answerChildUpdate, { args: [payload] })
      .catch(rejected);
    return reply.questionId;
  }

  /**
   * The tree under `rootId` as one stream of typed events (runs started and ended, model and tool calls,
   * delegations, questions, answers, interjections), read from Temporal's histories with the server's long poll, so
   * following costs the workers nothing. Resumable: `watch(rootId, { since: event.cursor })`. Ends when every run of
   * the tree has ended; on a finished tree it replays its events.
   */
  watch(rootId: string, options: WatchOptions = {}): AsyncGenerator<WatchEvent> {
    return watchTree(this.temporal, rootId, options);
  }

  /** The questions children of the tree `rootId` heads asked and nobody has answered yet, oldest first. */
  async openQuestions(rootId: string): Promise<OpenQuestion[]> {
    return openQuestionsOf(this.temporal, rootId, (id) => this.getState(id));
  }

  /** The approval requests open in the tree `rootId` heads, each with the run that waits and its path. */
  async approvals(rootId: string): Promise<ApprovalRequest[]> {
    return openApprovals(this.temporal, rootId);
  }

  /**
   * Approves or denies an open request, given the run that waits or its root (the request is found below it). With
   * `approvals.approvers` configured, pass `approver` and `proof` (or `key`, to make the proof here).
   */
  async decideApproval(
    runId: string,
    requestId: string,
    decision: 'approve' | 'deny',
    options: DecideOptions = {},
  ): Promise<DecideApprovalResult> {
    return decideApproval(this.temporal, runId, requestId, decision, options);
  }

  /** Ends a conversation-mode run once its current turn is done. */
  async endConversation(workflowId: string, reason?: string): Promise<void> {
    const payload = parseOrThrow(
      EndConversationInput,
      reason === undefined ? {} : { reason },
      'endConversation payload',
    );
    await this.temporal.workflow
      .getHandle(workflowId)
      .executeUpdate(endConversationUpdate, { args: [payload] })
      .catch(rejected);
  }

  /** Exports a run's session as versioned JSON: its events in effective form and its composition. */
  async exportSession(workflowId: string): Promise<SessionExport> {
    const state = await this.getState(workflowId);
    const header = state.session.find((e) => e.type === 'session/header');
    if (!state.composition)
      throw new InputError('export', [`${workflowId}: the run has not resolved its composition yet`]);
    return {
      format: SESSION_FORMAT,
      version: SESSION_VERSION,
      sessionId: workflowId,
      parentId: header?.type === 'session/header' ? header.parentId : null,
      exportedAt: new Date().toISOString(),
      composition: state.composition,
      events: state.session,
      ...(state.artifacts?.length && { artifacts: state.artifacts }),
    };
  }

  /**
   * Imports an exported session into a new run that goes on with `task`. A session that selected its preset
   * independently runs with that preset as registered now, and fails if it is gone; any other runs with the
   * exported composition. Throws `InputError` with one line per problem in the file.
   */
  async importSession(
    raw: unknown,
    run: { task: string } & Omit<RunInput, 'restore' | 'resume' | 'origin'>,
    options: StartRunOptions = {},
  ) {
    const parsed = parseSessionExport(raw);
    if (!parsed.ok) throw new InputError('session', parsed.problems);
    const { session } = parsed;
    const decision = decideRestoration(session.events);
    return this.startRun(
      {
        ...run,
        restore: {
          kind: 'import',
          events: session.events,
          ...(decision.kind === 'independent'
            ? { select: { presetId: decision.presetId, revision: decision.revision } }
            : { preset: session.composition.preset, model: session.composition.model }),
        },
      },
      options,
    );
  }

  /** Forks a run: a new run that starts from a copy of its session, with exactly its composition. */
  async fork(
    workflowId: string,
    run: { task: string; preset?: string } & Omit<RunInput, 'restore' | 'resume' | 'origin' | 'preset'>,
    options: StartRunOptions = {},
  ) {
    if (run.preset !== undefined) {
      throw new InputError('fork', [
        "preset: a fork keeps its source's composition; start a new run (or import the session) to choose a preset",
      ]);
    }
    const source = await this.exportSession(workflowId);
    return this.startRun(
      {
        ...run,
        restore: {
          kind: 'fork',
          events: forkEvents(source.events),
          preset: source.composition.preset,
          model: source.composition.model,
        },
      },
      options,
    );
  }

  /**
   * Continues a finished run (a child, typically) with a new message in a new run: its session, background
   * included, is restored, and its composition decided by the restoration rule.
   */
  async followup(workflowId: string, message: string, options: StartRunOptions = {}) {
    return this.importSession(await this.exportSession(workflowId), { task: message }, options);
  }

  /** Sessions (runs, roots and children) from Temporal visibility, newest first; `query` narrows them (a visibility query). */
  async listSessions(query?: string, limit = 100): Promise<SessionInfo[]> {
    return listSessions(this.temporal, query, limit);
  }

  /** Requests cancellation; the run aborts its model call in flight and ends `cancelled`. */
  async cancel(workflowId: string): Promise<void> {
    await this.temporal.workflow.getHandle(workflowId).cancel();
  }

  /** Waits for the run's end and returns its `RunResult`, whatever the status (failures are not thrown). */
  async result(workflowId: string): Promise<RunResult> {
    const handle = this.temporal.workflow.getHandle(workflowId);
    try {
      return RunResult.parse(await handle.result());
    } catch (err) {
      if (!(err instanceof WorkflowFailedError)) throw err;
      const usage = usageFromMemo((await handle.describe()).memo);
      if (err.cause instanceof CancelledFailure)
        return { status: 'cancelled', output: null, usage, sessionId: workflowId };
      return { status: 'failed', output: null, usage, sessionId: workflowId, error: failureMessage(err) };
    }
  }
}
