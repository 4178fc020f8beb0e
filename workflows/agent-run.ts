/**
 * The `agentRun` workflow: one agent run, durable on Temporal. Deterministic code only: every effect (model calls,
 * tools, config lookups) is an activity, so retries, timeouts and cancellation come from history (R1.1).
 */
import { FAILURE } from '../src/contract/failures.js';
import {
  allHandlersFinished,
  ContinueAsNew,
  continueAsNew,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { SearchAttributeUpdatePair } from '@temporalio/common';
import type { z } from 'zod';
import type { DeputyActivities } from '../activities/index.js';
import type { ResolveRunResult, RunToolResult } from '../src/contract/activities.js';
import { nextStep, type NextStep } from '../src/rules/agent-loop.js';
import { resolveLimits, remaining } from '../src/rules/limits.js';
import {
  endConversationUpdate,
  interjectionSignal,
  interjectUpdate,
  sendMessageUpdate,
  stateQuery,
} from '../src/contract/messages.js';
import {
  EndConversationInput,
  RunInput,
  SendMessageInput,
  type LedgerEntry,
  type LimitName,
  type LiveStatus,
  type ResolvedLimits,
  type RunResult,
  type RunStatus,
} from '../src/contract/run.js';
import {
  DEPUTY_CONTEXT_MODE,
  DEPUTY_COST_USD,
  DEPUTY_DEPTH,
  DEPUTY_PARENT_ID,
  DEPUTY_PRESET,
  DEPUTY_ROOT_ID,
  DEPUTY_STATUS,
  DEPUTY_TASK_NAME,
} from '../src/contract/search-attributes.js';
import {
  bestOutput,
  SESSION_VERSION,
  toChatMessages,
  type SessionEvent,
  type ToolCall,
} from '../src/contract/session.js';
import { available, budgetOf, ZERO_AMOUNT, type Amount, type CallBudget } from '../src/rules/budget.js';
import { DEFAULT_PAYLOAD_LIMITS, formatBytes, jsonBytes, PAYLOAD_TOO_LARGE_TYPE } from '../src/rules/payloads.js';
import { budgetExceeded } from './model-budget.js';
import { DELEGATE_TOOL, FOLLOWUP_TOOL, InterjectArgs, INTERJECT_TOOL } from '../src/rules/delegation.js';
import { addModelCall, addSpend, addToolCalls, callCostMicroUsd, microToUsd, ZERO_USAGE } from '../src/rules/usage.js';
import { applyCompaction, compactionPrompt, planCompaction } from '../src/rules/compaction.js';
import { failureMessage, rootMessage } from '../src/rules/failure-message.js';
import { describeIssues } from '../src/rules/zod-issues.js';
import { joinAll, LOOKUP_OPTIONS, MODEL_CALL_OPTIONS } from './activity-options.js';
import {
  CHILD_FAILED_TYPE,
  deliverInterjection,
  runDelegation,
  runFollowup,
  runInterjection,
  type DelegationHost,
} from './delegate.js';

/** Appended to a synthesis call, which offers no tools (R1.4). */
export const SYNTHESIS_INSTRUCTION =
  'Your budget for this run is nearly used up. Do not call any tools. Give your final answer now, using what you already know.';

const { callModel, runTool, compactSession } = proxyActivities<DeputyActivities>(MODEL_CALL_OPTIONS);
const { resolveRun } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

const DEFAULT_IDLE_TIMEOUT_SECONDS = 3600;

/** How the loop ended, before it becomes a `RunResult`. */
interface Outcome {
  status: Extract<RunStatus, 'completed' | 'limit_reached'>;
  output: string | null;
  limit?: LimitName | undefined;
}

/** Runs one agent: resolves its composition, then loops model calls and tool calls until an answer or a limit. */
export async function agentRun(rawInput: RunInput): Promise<RunResult> {
  const parsed = RunInput.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.create({
      type: FAILURE.RunInputInvalid,
      message: `invalid RunInput: ${describeIssues(parsed.error).join('; ')}`,
      nonRetryable: true,
    });
  }
  const input = parsed.data;
  const info = workflowInfo();
  const sessionId = info.workflowId;
  if (input.origin && info.parent?.workflowId !== input.origin.parentId) {
    // R1.9: origin grants a parent's tools and composition; only a real Temporal child of that parent may carry it.
    throw ApplicationFailure.create({
      type: FAILURE.RunInputInvalid,
      message: `invalid RunInput: origin: this run claims to be a child of "${input.origin.parentId}", but Temporal records ${info.parent ? `"${info.parent.workflowId}" as its parent` : 'no parent'}; origin is set only by a parent run on the children it starts`,
      nonRetryable: true,
    });
  }
  const mode = input.mode ?? 'task';
  const origin = input.origin;
  const rootId = origin?.rootId ?? sessionId;
  const depth = origin?.depth ?? 0;

  const events: SessionEvent[] = [];
  /** User messages and interjections wait here and join the dialogue between turns. */
  const inbox: ({ from: 'user'; content: string } | { from: string; content: string; interjection: true })[] = [];
  const snapshotMarks = new Map<string, number>();
  let appended = 0;
  let segment = 1;
  let usage = ZERO_USAGE;
  let status: LiveStatus = 'starting';
  let composition: ResolveRunResult | null = null;
  let limits: ResolvedLimits | null = null;
  let endRequested = false;
  let reserved: Amount = ZERO_AMOUNT;
  const ledger: LedgerEntry[] = [];

  const now = () => new Date(Date.now()).toISOString();
  const append = (event: SessionEvent) => {
    appended += 1;
    events.push(event);
  };
  const setStatus = (next: LiveStatus, extra: SearchAttributeUpdatePair[] = []) => {
    status = next;
    upsertSearchAttributes([{ key: DEPUTY_STATUS, value: next }, ...extra]);
  };

  setHandler(stateQuery, () => ({
    status,
    model: composition?.model ?? null,
    preset: composition?.preset ?? null,
    usage,
    limits,
    remaining: limits ? remaining(limits, usage, Date.now()) : null,
    composition: composition?.presetDefinition
      ? { preset: composition.presetDefinition, revision: composition.presetRevision ?? '', model: composition.model }
      : null,
    reserved,
    delegations: ledger,
    session: events,
  }));
  setHandler(
    sendMessageUpdate,
    (message) => {
      inbox.push({ from: 'user', content: message.message });
      return { accepted: true as const };
    },
    { validator: (message) => validateUpdate(SendMessageInput, message, 'sendMessage', isEnded()) },
  );
  setHandler(
    endConversationUpdate,
    () => {
      endRequested = true;
      return { accepted: true as const };
    },
    {
      validator: (payload) => {
        validateUpdate(EndConversationInput, payload, 'endConversation', isEnded());
        if (mode !== 'conversation') throw new Error('endConversation: this run is in task mode; cancel it instead');
      },
    },
  );
  setHandler(interjectionSignal, ({ from, content }) => {
    inbox.push({ from, content, interjection: true });
  });
  setHandler(
    interjectUpdate,
    async (args) => {
      const delivered = await deliverInterjection(args, delegationHost(composition!, limits!)).catch(
        (err: unknown) => ({ ok: false as const, error: `could not deliver: ${failureMessage(err)}` }),
      );
      if (!delivered.ok)
        throw ApplicationFailure.create({
          type: FAILURE.InterjectNotDelivered,
          message: delivered.error,
          nonRetryable: true,
        });
      return { delivered: true as const, childWorkflowId: delivered.childWorkflowId };
    },
    {
      validator: (args: InterjectArgs) => {
        validateUpdate(InterjectArgs, args, 'interject', isEnded());
        const entry = ledger.findLast((e) => e.taskName === args.task_name);
        if (entry?.status !== 'running') {
          throw new Error(`interject: no running child named "${args.task_name}" (status ${entry?.status ?? 'none'})`);
        }
      },
    },
  );
  function isEnded() {
    return status === 'completed' || status === 'failed' || status === 'cancelled' || status === 'limit_reached';
  }

  upsertSearchAttributes([
    { key: DEPUTY_ROOT_ID, value: rootId },
    { key: DEPUTY_DEPTH, value: depth },
    { key: DEPUTY_STATUS, value: status },
    ...(origin
      ? [
          { key: DEPUTY_PARENT_ID, value: origin.parentId },
          { key: DEPUTY_TASK_NAME, value: origin.taskName },
          { key: DEPUTY_CONTEXT_MODE, value: String(origin.contextMode) },
        ]
      : []),
  ]);

  const result = (outcome: Omit<RunResult, 'usage' | 'sessionId'>): RunResult => ({ ...outcome, usage, sessionId });
  const end = (final: RunStatus, output: string | null) => {
    append({ type: 'run/ended', at: now(), status: final, output });
    setStatus(final, [{ key: DEPUTY_COST_USD, value: microToUsd(usage.costMicroUsd) }]);
    upsertMemo({ deputyUsage: usage }); // readable with describe(), without a worker, however the run ended
    setCurrentDetails(`${final}; ${usage.modelCalls} model calls, $${microToUsd(usage.costMicroUsd).toFixed(6)}`);
  };

  const loopScope = new CancellationScope();
  let deadlineHit = false;
  try {
    const resume = input.resume;
    if (resume) {
      // A new segment of a run that continued as new (R1.6): its composition, limits and session go on as they were.
      composition = resume.composition;
      limits = resume.limits;
      usage = resume.usage;
      events.push(...resume.session);
      ledger.push(...resume.delegations);
      inbox.push(
        ...resume.inbox.map((item) =>
          item.interjection
            ? { ...item, interjection: true as const }
            : { from: 'user' as const, content: item.content },
        ),
      );
      appended = resume.appended;
      for (const [child, mark] of Object.entries(resume.snapshotMarks)) snapshotMarks.set(child, mark);
      segment = resume.segment;
    } else {
      composition = await resolveRun({
        preset: input.preset,
        model: input.model,
        effort: input.effort,
        scopes: input.scopes,
        depth,
        allowedTools: origin?.allowedTools,
        presetDefinition: origin?.preset?.definition ?? (input.restore?.select ? undefined : input.restore?.preset),
        ...(input.restore?.select && { preset: input.restore.select.presetId }),
        ...(input.restore?.model && !input.model && !input.restore.select && { model: input.restore.model }),
      });
      limits = resolveLimits(input.limits, composition.defaultLimits, Date.now());
      startSession(composition);
    }
    const run = composition;
    const runLimits = limits;
    setStatus('running', [{ key: DEPUTY_PRESET, value: run.preset }]);

    if (runLimits.deadlineMs !== null) {
      // The deadline cancels only the loop; cancelling the run cancels the root scope and this timer with it.
      sleep(Math.max(1, runLimits.deadlineMs - Date.now()), {
        summary: `deadline ${new Date(runLimits.deadlineMs).toISOString()}`,
      }).then(
        () => {
          deadlineHit = true;
          loopScope.cancel();
        },
        () => undefined,
      );
    }

    const outcome = await loopScope.run(() => agentLoop(run, runLimits));
    end(outcome.status, outcome.output);
    return result({ status: outcome.status, output: outcome.output, ...(outcome.limit && { limit: outcome.limit }) });
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    if (isCancellation(err) && deadlineHit && !CancellationScope.current().consideredCancelled) {
      const output = bestOutput(events);
      end('limit_reached', output);
      return result({ status: 'limit_reached', output, limit: 'deadline' });
    }
    const cancelled = isCancellation(err);
    end(cancelled ? 'cancelled' : 'failed', bestOutput(events));
    if (origin && !cancelled) {
      // A child's parent reads the child's spend from the failure's details (R2.6, R2.9).
      throw ApplicationFailure.create({
        type: CHILD_FAILED_TYPE,
        message: failureMessage(err),
        nonRetryable: true,
        cause: err instanceof Error ? err : undefined,
        details: [result({ status: 'failed', output: bestOutput(events), error: failureMessage(err) })],
      });
    }
    throw err;
  }

  function startSession(run: ResolveRunResult) {
    append({
      type: 'session/header',
      at: now(),
      version: SESSION_VERSION,
      sessionId,
      parentId: origin?.parentId ?? null,
      depth,
      preset: run.preset,
      model: run.model,
    });
    // R4.4: an independently selected child records its selection before its own descriptor; an implicit one does not.
    if (origin?.preset?.selected) {
      append({ type: 'agent-preset/selected', at: now(), presetId: run.preset, revision: origin.preset.revision });
    }
    if (origin) {
      append({ type: 'subagent/descriptor', at: now(), taskName: origin.taskName, parentId: origin.parentId });
    }
    for (const message of input.messages ?? []) {
      append(
        message.role === 'user'
          ? { type: 'message/user', at: now(), content: message.content }
          : { type: 'message/assistant', at: now(), content: message.content, toolCalls: [] },
      );
    }
    if (origin?.background) append({ type: 'context/background', at: now(), ...origin.background });
    // A restored session's dialogue (a fork's is marked inherited) goes on under this run's own header.
    for (const event of input.restore?.events ?? []) {
      if (event.type !== 'session/header' && event.type !== 'run/ended') append(event);
    }
    append({ type: 'message/user', at: now(), content: input.task });
  }

  /** What one model call may spend now (R2.13): what is free after reservations; none when the run has no caps. */
  function callBudget(run: ResolveRunResult, runLimits: ResolvedLimits, maxCompletionTokens?: number) {
    const free = available(budgetOf(runLimits, usage, reserved));
    if (free.tokens === null && free.costMicroUsd === null && maxCompletionTokens === undefined) return undefined;
    const budget: CallBudget = { ...free, price: run.price, maxCompletionTokens };
    return budget;
  }

  /**
   * R1.6: summarises the oldest turns once the effective dialogue passes the threshold (or, `forced`, whenever there
   * are turns to spare, because the next input is too large); their raw form is gone. Returns the limit that stopped
   * a compaction that does not fit the budget, else `null`.
   */
  async function maybeCompact(
    run: ResolveRunResult,
    runLimits: ResolvedLimits,
    forced = false,
  ): Promise<LimitName | null> {
    if (!run.compaction) return null;
    const plan = forced
      ? planCompaction(events, 0, 1)
      : planCompaction(events, run.compaction.thresholdTokens, run.compaction.keepRecentTurns);
    if (!plan) return null;
    setCurrentDetails(`compacting ${plan.replaced.length} events`);
    let compacted;
    try {
      compacted = await compactSession.executeWithOptions(
        { summary: `compactSession ${run.model} (${plan.replacesTurns} turns so far)` },
        [
          {
            model: run.model,
            messages: compactionPrompt(plan.replaced, payloads(run).maxInputBytes),
            budget: callBudget(run, runLimits, COMPACTION_MAX_COMPLETION_TOKENS),
          },
        ],
      );
    } catch (err) {
      const limit = budgetExceeded(err);
      if (limit) return limit;
      throw err;
    }
    usage = addSpend(usage, { ...compacted, costMicroUsd: callCostMicroUsd(compacted, run.price) });
    events.splice(0, events.length, ...applyCompaction(plan, compacted.summary, now()));
    return null;
  }

  /** R1.6: continues as new when Temporal suggests it (or history grows long), at a point where nothing is in flight. */
  async function maybeContinueAsNew(run: ResolveRunResult, runLimits: ResolvedLimits) {
    if (!run.compaction) return;
    const info = workflowInfo();
    if (!info.continueAsNewSuggested && info.historyLength <= run.compaction.continueAsNewAfterEvents) return;
    if (ledger.some((entry) => entry.status === 'reserved' || entry.status === 'running')) return;
    await condition(allHandlersFinished);
    await continueAsNew<typeof agentRun>({
      ...input,
      resume: {
        segment: segment + 1,
        session: events,
        usage,
        limits: runLimits,
        composition: run,
        delegations: ledger,
        inbox: inbox.map((item) => ({ ...item, interjection: 'interjection' in item })),
        appended,
        snapshotMarks: Object.fromEntries(snapshotMarks),
      },
    });
  }

  async function agentLoop(run: ResolveRunResult, runLimits: ResolvedLimits): Promise<Outcome> {
    for (;;) {
      const step: NextStep = nextStep({ events, limits: runLimits, usage, nowMs: Date.now(), mode });
      if (step.type !== 'run_tools' && inbox.length > 0) {
        // User messages join the dialogue only between turns, never between a tool call and its result.
        for (const item of inbox.splice(0)) {
          append(
            'interjection' in item
              ? { type: 'interjection', at: now(), from: item.from, content: item.content }
              : { type: 'message/user', at: now(), content: item.content },
          );
        }
        continue;
      }
      switch (step.type) {
        case 'call_model': {
          await maybeContinueAsNew(run, runLimits);
          await maybeCompact(run, runLimits);
          const stopped = await modelTurn(run, runLimits, step.synthesisFor, step.offerTools);
          // R2.13: a call whose worst case no longer fits is not made; the run ends with its best output so far.
          if (stopped) return { status: 'limit_reached', output: bestOutput(events), limit: stopped };
          break;
        }
        case 'run_tools':
          await toolTurn(run, runLimits, step.calls, step.refused);
          break;
        case 'wait_for_user': {
          setStatus('waiting_for_user');
          setCurrentDetails('waiting for the next message (sendMessage update)');
          const woke = await condition(
            () => inbox.length > 0 || endRequested,
            `${input.idleTimeoutSeconds ?? DEFAULT_IDLE_TIMEOUT_SECONDS} seconds`,
          );
          if (!woke || endRequested) return { status: 'completed', output: bestOutput(events) };
          setStatus('running');
          break;
        }
        case 'final': {
          const last = events.findLast((e) => e.type === 'message/assistant');
          return { status: 'completed', output: step.output, limit: last?.synthesisFor };
        }
        case 'limit_reached':
          return { status: 'limit_reached', output: step.output, limit: step.limit };
      }
    }
  }

  /** The messages of the next model call: the effective dialogue after the persona, and the synthesis instruction. */
  function turnInput(run: ResolveRunResult, synthesisFor: LimitName | null, offerTools: boolean) {
    const messages = toChatMessages(events, run.persona);
    if (synthesisFor) messages.push({ role: 'system', content: SYNTHESIS_INSTRUCTION });
    return { messages, tools: offerTools ? run.tools : [] };
  }

  /**
   * One model call. R1.8: an input past the payload budget forces a compaction first, and fails the run (typed,
   * non-retryable) if that cannot help. R2.13: a call that does not fit the budget becomes a synthesis call when
   * tools were offered; returns the limit when not even that fits, else `null`.
   */
  async function modelTurn(
    run: ResolveRunResult,
    runLimits: ResolvedLimits,
    synthesisFor: LimitName | null,
    offerTools: boolean,
  ): Promise<LimitName | null> {
    const turn = usage.modelCalls + 1;
    let input = turnInput(run, synthesisFor, offerTools);
    const maxInputBytes = payloads(run).maxInputBytes;
    if (jsonBytes(input) > maxInputBytes) {
      const stopped = await maybeCompact(run, runLimits, true);
      if (stopped) return stopped;
      input = turnInput(run, synthesisFor, offerTools);
      const size = jsonBytes(input);
      if (size > maxInputBytes) {
        throw ApplicationFailure.create({
          type: PAYLOAD_TOO_LARGE_TYPE,
          message: `the next model call's input is ${formatBytes(size)} even after compaction, past the payload budget of ${formatBytes(maxInputBytes)} (payloads.maxInputBytes); shorten the task or the messages given to this run`,
          nonRetryable: true,
        });
      }
    }
    setCurrentDetails(`turn ${turn}: calling ${run.model}${synthesisFor ? ` (synthesis: ${synthesisFor})` : ''}`);
    let reply;
    try {
      reply = await callModel.executeWithOptions(
        { summary: `callModel ${run.model} turn ${turn}${synthesisFor ? ' synthesis' : ''}` },
        [{ model: run.model, effort: run.effort, ...input, budget: callBudget(run, runLimits) }],
      );
    } catch (err) {
      const limit = budgetExceeded(err);
      if (!limit) throw err;
      // Without tools the input is smaller and the model is asked to answer now: the reserve's purpose (R1.4).
      if (synthesisFor === null && runLimits.synthesis) return modelTurn(run, runLimits, limit, false);
      return limit;
    }
    usage = addModelCall(usage, reply, run.price);
    append({
      type: 'message/assistant',
      at: now(),
      content: reply.content,
      toolCalls: reply.toolCalls,
      ...(synthesisFor && { synthesisFor }),
    });
    upsertSearchAttributes([{ key: DEPUTY_COST_USD, value: microToUsd(usage.costMicroUsd) }]);
    return null;
  }

  function delegationHost(run: ResolveRunResult, runLimits: ResolvedLimits): DelegationHost {
    return {
      sessionId,
      rootId,
      depth,
      tenant: input.tenant,
      composition: run,
      settings: run.delegation!,
      limits: runLimits,
      ledger,
      events: () => events,
      appendedCount: () => appended,
      snapshotMarks,
      usage: () => usage,
      reserved: () => reserved,
      setReserved: (amount) => (reserved = amount),
      debit: (spend) => {
        usage = addSpend(usage, spend);
        upsertSearchAttributes([{ key: DEPUTY_COST_USD, value: microToUsd(usage.costMicroUsd) }]);
      },
      setStatus: (next) => setStatus(next),
      payloads: payloads(run),
    };
  }

  async function executeTool(
    run: ResolveRunResult,
    runLimits: ResolvedLimits,
    call: ToolCall,
    allowedTools: string[],
  ): Promise<RunToolResult> {
    const steering = {
      [DELEGATE_TOOL]: runDelegation,
      [INTERJECT_TOOL]: runInterjection,
      [FOLLOWUP_TOOL]: runFollowup,
    };
    const steer = Object.hasOwn(steering, call.name) ? steering[call.name as keyof typeof steering] : undefined;
    if (steer && allowedTools.includes(call.name) && run.delegation) {
      // R2.4: no infrastructure error on a delegation path fails the parent: the model reads it as a tool error.
      try {
        return await steer(call, delegationHost(run, runLimits));
      } catch (err) {
        if (isCancellation(err)) throw err;
        return { content: `"${call.name}" failed: ${failureMessage(err)}; nothing more was done`, isError: true };
      }
    }
    try {
      return await runTool.executeWithOptions({ summary: `runTool ${call.name}` }, [
        { runId: sessionId, call, allowedTools, scopes: run.scopes },
      ]);
    } catch (err) {
      if (isCancellation(err)) throw err;
      return { content: `tool "${call.name}" failed: ${rootMessage(err)}`, isError: true };
    }
  }

  async function toolTurn(run: ResolveRunResult, runLimits: ResolvedLimits, calls: ToolCall[], refused: ToolCall[]) {
    setCurrentDetails(`turn ${usage.modelCalls}: running ${calls.map((c) => c.name).join(', ') || 'no tools'}`);
    const allowedTools = run.tools.map((tool) => tool.name);
    // Each result joins the session as soon as it is in, so a child dispatched meanwhile sees it (R3.2).
    await joinAll(
      calls.map(async (call) => {
        const { content, isError } = await executeTool(run, runLimits, call, allowedTools);
        append({ type: 'tool/result', at: now(), toolCallId: call.id, name: call.name, content, isError });
      }),
    );
    usage = addToolCalls(usage, calls.length);
    for (const call of refused) {
      append({
        type: 'tool/result',
        at: now(),
        toolCallId: call.id,
        name: call.name,
        content: 'not run: this run has used all of its tool calls (maxToolCalls)',
        isError: true,
      });
    }
  }
}

/** The most a compaction summary may write (the prompt asks for 300 words). */
const COMPACTION_MAX_COMPLETION_TOKENS = 1024;

/** A run's payload budgets (R1.8); histories recorded before they existed use the defaults. */
function payloads(run: ResolveRunResult) {
  return run.payloads ?? DEFAULT_PAYLOAD_LIMITS;
}

/** Update validators reject bad payloads naming the field (R1.7), and any update once the run has ended. */
function validateUpdate(schema: z.ZodType, payload: unknown, name: string, ended: boolean): void {
  if (ended) throw new Error(`${name}: the run has ended`);
  const parsed = schema.safeParse(payload);
  if (!parsed.success) throw new Error(`invalid ${name} payload: ${describeIssues(parsed.error).join('; ')}`);
}
