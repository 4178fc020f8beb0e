/**
 * The Nexus front door's handlers (`deputyService`): the worker serves one per tenant, on the task queue that
 * tenant's endpoint targets, so the tenant comes from the endpoint a caller was given, never from what it sends.
 * Inputs are strict: a caller that names scopes, tools, a model, a tenant or an id of its own is refused.
 */
import * as nexus from 'nexus-rpc';
import * as temporalNexus from '@temporalio/nexus';
import { WorkflowNotFoundError } from '@temporalio/client';
import { z } from 'zod';
import { DeputyClient } from '../client/client.js';
import { CallerLimits, narrowLimits } from '../config/caller-limits.js';
import type { ConfigStore } from '../config/store.js';
import { deputyService } from '../contract/front-door.js';
import type { RunResult } from '../contract/run.js';
import { DeputyError } from '../contract/errors.js';

/** The memo field a run started through the front door records its tenant in. */
const FRONT_DOOR_MEMO = 'deputyFrontDoor';

const Key = z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'a slug of at most 64 characters (a-z, 0-9, -)');
const RunRequest = z.strictObject({
  key: Key,
  task: z.string().min(1).max(100_000),
  preset: z.string().min(1).optional(),
  limits: CallerLimits.optional(),
});
const StateRequest = z.strictObject({ key: Key });
const DecideRequest = z.strictObject({
  key: Key,
  requestId: z.string().min(1).max(100),
  decision: z.enum(['approve', 'deny']),
  reason: z.string().max(2000).optional(),
  approver: z.string().min(1).max(100).optional(),
  proof: z.string().max(200).optional(),
});
const AnswerRequest = z.strictObject({
  key: Key,
  answer: z.string().min(1).max(100_000),
  questionId: z.string().min(1).optional(),
});

/** `value` parsed, or a refusal the caller reads (a bad request is never retried). */
function parsed<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`);
  throw new nexus.HandlerError('BAD_REQUEST', `Deputy refused the request: ${problems.join('; ')}`);
}

/** The handlers of `deputyService` for `tenant`; runs start on `taskQueue` (Deputy's own). */
export function frontDoorHandler(options: { tenant: string; taskQueue: string; config: ConfigStore }) {
  const { tenant, taskQueue, config } = options;
  // The key is a slug (no ':'), so the id reads back as one tenant and one key: no two tenants' keys share an id.
  const runId = (key: string) => `nexus:${tenant}:${key}`;
  const deputy = () => new DeputyClient(temporalNexus.getClient(), { taskQueue });
  /** The run `key` names, if it was started through this tenant's door; else as if it did not exist. */
  const own = async (key: string): Promise<string> => {
    const id = runId(key);
    const described = await temporalNexus
      .getClient()
      .workflow.getHandle(id)
      .describe()
      .catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return undefined;
        throw err;
      });
    if (described?.type !== 'agentRun' || described.memo?.[FRONT_DOOR_MEMO] !== tenant) {
      throw new nexus.HandlerError('NOT_FOUND', `no run "${key}" was started through this endpoint`);
    }
    return id;
  };
  return nexus.serviceHandler(deputyService, {
    run: new temporalNexus.WorkflowRunOperationHandler<unknown, RunResult>(async (ctx, input) => {
      const request = parsed(RunRequest, input);
      const known = config.current.presets.map((preset) => preset.id);
      if (request.preset !== undefined && !known.includes(request.preset)) {
        throw new nexus.HandlerError('BAD_REQUEST', `unknown preset "${request.preset}"; offered: ${known.join(', ')}`);
      }
      const started = await temporalNexus.startWorkflow(ctx, 'agentRun', {
        workflowId: runId(request.key),
        taskQueue,
        args: [
          {
            task: request.task,
            tenant,
            ...(request.preset !== undefined && { preset: request.preset }),
            limits: narrowLimits(config.current, request.limits),
          },
        ],
        memo: { [FRONT_DOOR_MEMO]: tenant },
        // A repeat of a key whose run is still going finds that run, as a retried request does.
        workflowIdConflictPolicy: 'USE_EXISTING',
        staticSummary: `agentRun (Nexus, ${tenant}): ${request.task.replace(/\s+/g, ' ').slice(0, 60)}`,
      });
      return started as temporalNexus.WorkflowHandle<RunResult>;
    }),
    state: async (_ctx, input) => {
      const id = await own(parsed(StateRequest, input).key);
      const client = deputy();
      const [state, questions, approvals] = await Promise.all([
        client.getState(id),
        client.openQuestions(id),
        client.approvals(id),
      ]);
      return {
        runId: id,
        status: state.status,
        openQuestions: questions.map((q) => ({ questionId: q.questionId, child: q.taskName, question: q.question })),
        // Each call's arguments whole (or plainly cut: `argumentsChars` says how long they are), and what a proof
        // covers, so a caller decides on exactly what would run.
        openApprovals: approvals.map((r) => ({
          requestId: r.requestId,
          path: r.path,
          tool: r.tool,
          preview: r.preview,
          arguments: r.arguments,
          argumentsChars: r.argumentsChars,
          digest: r.digest,
          firstRunId: r.firstRunId,
          deadline: r.deadline,
        })),
      };
    },
    answer: async (_ctx, input) => {
      const request = parsed(AnswerRequest, input);
      const id = await own(request.key);
      const client = deputy();
      const open = await client.openQuestions(id);
      const question =
        request.questionId === undefined ? open[0] : open.find((q) => q.questionId === request.questionId);
      if (!question) throw new nexus.HandlerError('NOT_FOUND', `no open question in run "${request.key}"`);
      const questionId = await client.answer(question.childWorkflowId, request.answer, question.questionId);
      return { questionId, child: question.taskName };
    },
    decide: async (_ctx, input) => {
      const { key, requestId, decision, ...options } = parsed(DecideRequest, input);
      const id = await own(key);
      try {
        return await deputy().decideApproval(id, requestId, decision, options);
      } catch (err) {
        if (err instanceof DeputyError) throw new nexus.HandlerError('BAD_REQUEST', err.message);
        throw err;
      }
    },
  });
}
