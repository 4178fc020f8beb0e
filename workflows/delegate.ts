/**
 * The `delegate` tool inside the workflow (R2.2–R2.11): check the invocation, resolve roles, narrow tools, derive
 * limits, reserve cost all or nothing, start one child `agentRun` per brief on the background queue, and join them
 * into one tool result. Deterministic code only.
 */
import type { ContextRendering } from '../src/contract/preset.js';
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  startChild,
  type ChildWorkflowHandle,
  type ChildWorkflowOptions,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { DeputyActivities } from '../activities/index.js';
import type { ResolveRunResult, RunToolResult } from '../src/contract/activities.js';
import { type Preset } from '../src/contract/preset.js';
import {
  available,
  budgetOf,
  chargeFor,
  deriveChildLimits,
  release,
  reservationFor,
  reserve,
  sum,
  type Amount,
  type CallBudget,
} from '../src/rules/budget.js';
import { cutText, jsonBytes, formatBytes, type PayloadLimits } from '../src/rules/payloads.js';
import {
  bounded,
  checkCaps,
  checkReturnShape,
  childWorkflowId,
  MAX_CHILD_OUTPUT_CHARS,
  MAX_CHILD_SUMMARY_CHARS,
  narrowGrant,
  parseInvocation,
  renderChildResults,
  renderChildTask,
  type Brief,
  type ChildGrant,
  type ChildOutcome,
  InterjectArgs,
  type ContextMode,
  type DelegationSettings,
} from '../src/rules/delegation.js';
import {
  CHILD_FAILED_TYPE,
  type ChildOrigin,
  type LedgerEntry,
  type LiveStatus,
  type Limits,
  type ResolvedLimits,
  type RunInput,
  type RunResult,
  type Usage,
} from '../src/contract/run.js';

type ChildBackground = NonNullable<ChildOrigin['background']>;
import {
  DEPUTY_CONTEXT_MODE,
  DEPUTY_DEPTH,
  DEPUTY_PARENT_ID,
  DEPUTY_PRESET,
  DEPUTY_ROOT_ID,
  DEPUTY_STATUS,
  DEPUTY_TASK_NAME,
} from '../src/contract/search-attributes.js';
import type { SessionEvent, ToolCall } from '../src/contract/session.js';
import { joinAll, LOOKUP_OPTIONS, MODEL_CALL_OPTIONS } from './activity-options.js';
import { runHooks } from './hooks.js';
import { decideRestoration } from '../src/rules/sessions.js';
import { interjectionSignal } from '../src/contract/messages.js';
import { describeIssues } from '../src/rules/zod-issues.js';
import { failureMessage } from '../src/rules/failure-message.js';
import {
  BACKGROUND_HEADING,
  renderParentContext,
  renderParentDialogue,
  selectContext,
  summaryPrompt,
  takeSnapshot,
} from '../src/rules/context.js';
import { callCostMicroUsd, microToUsd, type Spend } from '../src/rules/usage.js';
import { budgetExceeded, upperBoundTokens } from './model-budget.js';

// Cancelling the parent aborts the generation's HTTP request before the run ends (R3.4).
const { summarizeContext } = proxyActivities<DeputyActivities>({
  ...MODEL_CALL_OPTIONS,
  retry: { ...MODEL_CALL_OPTIONS.retry, maximumAttempts: 5 },
});
const { resolvePresets, loadSession, describeRun } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);
// Waits on a run this parent did not start in this execution (R2.4 attach): as long as the run lives.
const { awaitRun } = proxyActivities<DeputyActivities>({
  startToCloseTimeout: '7 days',
  heartbeatTimeout: '30 seconds',
  cancellationType: ActivityCancellationType.TRY_CANCEL,
  retry: { maximumAttempts: 5 },
});

/** The most a background summary may write (the prompt asks for 250 words). */
export const SUMMARY_MAX_COMPLETION_TOKENS = 1024;

export { CHILD_FAILED_TYPE };

/** What the delegation code reads and changes of the run that delegates. */
export interface DelegationHost {
  sessionId: string;
  rootId: string;
  depth: number;
  tenant: string | undefined;
  composition: ResolveRunResult;
  settings: DelegationSettings;
  limits: ResolvedLimits;
  ledger: LedgerEntry[];
  /** The run's session as it is now (its effective dialogue). */
  events(): readonly SessionEvent[];
  /** How many events the run has appended over its life (compaction does not lower it). */
  appendedCount(): number;
  /** Per child: `appendedCount()` when its context was last sent (R3.7). */
  snapshotMarks: Map<string, number>;
  usage(): Usage;
  reserved(): Amount;
  setReserved(amount: Amount): void;
  /** Debits a child's spend to the run's usage. */
  debit(spend: Spend): void;
  setStatus(status: LiveStatus): void;
  /** Size budgets of what the run writes to history (R1.8). */
  payloads: PayloadLimits;
}

/** The parent's context frozen at the `delegate` call (R3.2): its effective dialogue and its append count. */
interface Snapshot {
  events: SessionEvent[];
  mark: number;
}

interface ChildPlan {
  brief: Brief;
  preset: string;
  /** What the child runs with, carried in its input; `selected` when its brief named a role (R4.4). */
  composition: { definition: Preset; revision: string; selected: boolean };
  /** A follow-up: the finished child whose session this one goes on from. */
  restore?: { from: string; events: SessionEvent[] };
  contextRendering: ContextRendering;
  /** What the child sees of the parent (R3.1); a follow-up keeps its source's (the choice made at dispatch sticks). */
  contextMode: ContextMode;
  /** A follow-up: its source's snapshot mark, so an interjection continues from what the source saw (R3.7). */
  snapshotMark?: number | undefined;
  grant: ChildGrant;
  limits: Limits;
  reservation: Amount;
}

const toolError = (content: string): RunToolResult => ({ content, isError: true });

/** Executes one `delegate` tool call; every refusal is a tool error the model sees, with nothing spawned. */
export async function runDelegation(call: ToolCall, host: DelegationHost): Promise<RunToolResult> {
  const { settings, composition } = host;
  // R3.2: the evidence is frozen at the call, before any await: a sibling result that lands later never gets in.
  const snapshot: Snapshot = { events: takeSnapshot(host.events()), mark: host.appendedCount() };
  const check = parseInvocation(call.arguments);
  if (!check.ok) return toolError(check.error);
  const { briefs, return_shape: returnShape } = check.args;

  // R4.2: an explicit role resolves the preset registered now. R4.3: no role joins the parent's exact composition
  // (histories from before revisions existed look the parent's preset up instead).
  const inherited = composition.presetDefinition;
  const lookUp = briefs.filter((brief) => brief.role !== undefined || !inherited);
  const { presets } = lookUp.length
    ? await resolvePresets({ ids: [...new Set(lookUp.map((brief) => brief.role ?? composition.preset))] })
    : { presets: [] };
  const unknown = presets.filter((preset) => !preset.ok);
  if (unknown.length > 0) {
    return toolError(`${unknown.map((p) => (p.ok ? '' : p.error)).join('; ')}; nothing was spawned`);
  }
  const compositionOf = (brief: Brief): ChildPlan['composition'] => {
    if (brief.role === undefined && inherited) {
      return { definition: inherited, revision: composition.presetRevision ?? '', selected: false };
    }
    const found = presets.find((p) => p.id === (brief.role ?? composition.preset));
    if (!found?.ok) throw new Error(`preset of brief "${brief.task_name}" was not resolved`); // cannot happen: checked above
    // Histories recorded before presets carried definitions answered only tools and rendering.
    const definition = found.definition ?? {
      id: found.id,
      persona: '',
      tools: found.tools,
      skills: {},
      contextRendering: found.contextRendering,
    };
    return { definition, revision: found.revision ?? '', selected: brief.role !== undefined };
  };

  // From here to the reservation there is no await: the caps and names checked hold when the children are booked.
  const capError = checkCaps(
    check.args,
    settings,
    host.ledger.map((entry) => entry.taskName),
    host.ledger.length,
  );
  if (capError) return toolError(capError);
  const plans: ChildPlan[] = [];
  for (const brief of briefs) {
    const plan = planChild(brief, compositionOf(brief), host);
    if (!plan.ok) return toolError(`${plan.error}; nothing was spawned`);
    plans.push(plan.plan);
  }
  return bookAndRun(call, plans, returnShape, host, snapshot);
}

/** R2.5/R2.7: one child's tools, scopes and limits from its brief and composition. */
function planChild(
  brief: Brief,
  childComposition: ChildPlan['composition'],
  host: DelegationHost,
): { ok: true; plan: ChildPlan } | { ok: false; error: string } {
  const { composition, settings } = host;
  const grant = narrowGrant({
    parentTools: composition.tools,
    parentScopes: composition.scopes,
    allowedTools: brief.allowed_tools,
    presetTools: childComposition.definition.tools,
    childDepth: host.depth + 1,
    settings,
  });
  if (!grant.ok) return { ok: false, error: `brief "${brief.task_name}": ${grant.error}` };
  const limits = deriveChildLimits({
    parentLimits: host.limits,
    parentUsage: host.usage(),
    reserved: host.reserved(),
    nowMs: Date.now(),
    requested: brief.limits,
    defaults: settings.childDefaults,
  });
  if (limits.maxTurns === 0 || limits.maxTokens === 0 || limits.maxCostUsd === 0) {
    return {
      ok: false,
      error: `brief "${brief.task_name}": nothing is left of this run's budget for a child (limits ${JSON.stringify(limits)})`,
    };
  }
  return {
    ok: true,
    plan: {
      brief,
      preset: childComposition.definition.id,
      composition: childComposition,
      contextRendering: childComposition.definition.contextRendering,
      contextMode: brief.context ?? 'none',
      grant: grant.grant,
      limits,
      reservation: reservationFor(limits),
    },
  };
}

/** R2.6/R2.8: reserves for every plan all or nothing, books them in the ledger, runs them and joins them. */
async function bookAndRun(
  call: ToolCall,
  plans: ChildPlan[],
  returnShape: Record<string, unknown> | undefined,
  host: DelegationHost,
  snapshot: Snapshot,
): Promise<RunToolResult> {
  // R2.3: checked again here, with no await before the booking: a follow-up and a delegate of one turn both awaited
  // look-ups since their first check.
  if (host.ledger.length + plans.length > host.settings.maxChildrenPerRun) {
    return toolError(
      `this run has started ${host.ledger.length} of its ${host.settings.maxChildrenPerRun} children; ${plans.length} more do not fit; nothing was spawned`,
    );
  }
  const reservation = reserve(
    budgetOf(host.limits, host.usage(), host.reserved()),
    plans.map((plan) => plan.reservation),
  );
  if (!reservation.ok) return toolError(`${reservation.error}; nothing was spawned`);
  host.setReserved(reservation.budget.reserved);

  const invocation = new Set(host.ledger.map((entry) => entry.invocation)).size + 1;
  const entries = plans.map((plan) => {
    const entry: LedgerEntry = {
      invocation,
      invocationId: call.id,
      childWorkflowId: childWorkflowId(host.sessionId, plan.brief.task_name, invocation),
      taskName: plan.brief.task_name,
      preset: plan.preset,
      status: 'reserved',
      reserved: plan.reservation,
      actual: null,
      summary: null,
      artifacts: plan.brief.artifacts ?? [],
      preparation: { contextMode: plan.contextMode, backgroundChars: null, hookOutcome: null },
      ...(plan.restore && { followupOf: plan.restore.from }),
    };
    host.ledger.push(entry);
    return entry;
  });

  host.setStatus('waiting_for_children');
  let outcomes: ChildOutcome[];
  try {
    outcomes = await joinAll(
      plans.map((plan, i) => runChild(plan, entries[i]!, invocation, returnShape, host, snapshot)),
    );
  } finally {
    // Another invocation of the same turn may still have live children.
    const live = host.ledger.some((entry) => entry.status === 'reserved' || entry.status === 'running');
    host.setStatus(live ? 'waiting_for_children' : 'running');
  }
  return { content: renderChildResults(outcomes), isError: outcomes.every((o) => o.status !== 'completed') };
}

/** R3.1/R3.3: the background a child gets for its context mode, rendered as its preset asks; none for `none`. */
function prepareBackground(
  mode: ContextMode,
  rendering: ContextRendering,
  snapshot: readonly SessionEvent[],
  payloads: PayloadLimits,
): ChildBackground | undefined {
  const selected = selectContext(snapshot, mode);
  if (selected.length === 0) return undefined;
  // R1.8: the copy goes into the child's input; past the budget it is cut (the block) or its oldest turns dropped.
  const content = cutText(renderParentContext(selected), payloads.maxTextBytes);
  if (rendering !== 'dialogue') return { source: 'parent-chat', content };
  const dialogue = renderParentDialogue(selected).map((m) => ({
    ...m,
    content: cutText(m.content, payloads.maxTextBytes),
  }));
  while (dialogue.length > 1 && jsonBytes(dialogue) > payloads.maxTextBytes) dialogue.shift();
  return { source: 'parent-chat', content, dialogue };
}

/** Starts one child, waits for it, and settles its reservation; the child's end never cancels the parent (R2.9). */
async function runChild(
  plan: ChildPlan,
  entry: LedgerEntry,
  invocation: number,
  returnShape: Record<string, unknown> | undefined,
  host: DelegationHost,
  snapshot: Snapshot,
): Promise<ChildOutcome> {
  const { brief } = plan;
  const mode = plan.contextMode;
  const hooks = host.composition.hooks ?? [];
  const hookInput = {
    parentId: host.sessionId,
    rootId: host.rootId,
    taskName: brief.task_name,
    task: brief.message,
    role: plan.preset,
    contextMode: String(mode),
    childWorkflowId: entry.childWorkflowId,
  };

  // Nothing spent until the child starts; a child that ends without reporting its spend is charged its whole
  // reservation: never under-count.
  let spent: Spend | null = ZERO_SPEND;
  let settled = false;
  const settle = (status: LedgerEntry['status'], summary: string) => {
    if (settled) return;
    settled = true;
    // R2.13: a child's reservation is its hard cap: its debit never exceeds it.
    const charge = chargeFor(
      spent ?? { inputTokens: plan.reservation.tokens, outputTokens: 0, costMicroUsd: plan.reservation.costMicroUsd },
      plan.reservation,
    );
    host.setReserved(release(budgetOf(host.limits, host.usage(), host.reserved()), plan.reservation).reserved);
    host.debit(charge);
    entry.status = status;
    entry.actual = { tokens: charge.inputTokens + charge.outputTokens, costMicroUsd: charge.costMicroUsd };
    entry.summary = bounded(summary, MAX_CHILD_SUMMARY_CHARS);
  };
  const outcome = (status: ChildOutcome['status'], output: unknown, summary: string, error?: string): ChildOutcome => {
    settle(status, summary);
    return {
      task_name: brief.task_name,
      workflow_id: entry.childWorkflowId,
      status,
      output,
      summary: bounded(summary, MAX_CHILD_SUMMARY_CHARS),
      ...(error !== undefined && { error }),
      usage: entry.actual && { tokens: entry.actual.tokens, cost_usd: microToUsd(entry.actual.costMicroUsd) },
      artifacts: entry.artifacts,
    };
  };

  let task = brief.message;
  try {
    // Preparation: the child's slot, id and cost are reserved, but it is not started and has no identity yet.
    const trail: string[] = [];
    for (const event of ['task.submitted', 'subagent.start'] as const) {
      const decided = await runHooks(event, { ...hookInput, task }, hooks);
      trail.push(...decided.trail);
      entry.preparation.hookOutcome = trail.join('; ') || null;
      if (decided.decision === 'reject') {
        const reason = `${decided.reason ?? 'rejected'}; the child was not started`;
        return outcome('rejected', null, reason, reason);
      }
      task = decided.task;
    }
    // R3.2: the snapshot was taken at the delegate call and never changes; it waits for no sibling. A follow-up's
    // restored session already holds its background, and its interjections continue from its source's mark.
    host.snapshotMarks.set(entry.childWorkflowId, plan.restore ? (plan.snapshotMark ?? snapshot.mark) : snapshot.mark);
    let background = plan.restore
      ? undefined
      : prepareBackground(mode, plan.contextRendering, snapshot.events, host.payloads);
    if (mode === 'summary' && !plan.restore) {
      // R3.4: the background is written for the hook-accepted task; its cost is the parent's.
      const generated = await generateBackground(task, brief.task_name, host, snapshot.events);
      if (!generated.ok) return outcome('rejected', null, generated.error, generated.error);
      background = generated.background;
    }
    entry.preparation.backgroundChars = background ? background.content.length : null;

    const input = childInput(plan, { ...brief, message: task }, invocation, returnShape, host, background);
    const started = await startChildOrExplain(entry, {
      workflowId: entry.childWorkflowId,
      taskQueue: host.settings.backgroundTaskQueue,
      args: [input],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
      staticSummary: `${brief.task_name} (child of ${host.sessionId}): ${bounded(task.replace(/\s+/g, ' '), 100)}`,
      typedSearchAttributes: [
        { key: DEPUTY_ROOT_ID, value: host.rootId },
        { key: DEPUTY_PARENT_ID, value: host.sessionId },
        { key: DEPUTY_DEPTH, value: host.depth + 1 },
        { key: DEPUTY_TASK_NAME, value: brief.task_name },
        { key: DEPUTY_PRESET, value: plan.preset },
        { key: DEPUTY_STATUS, value: 'starting' },
        { key: DEPUTY_CONTEXT_MODE, value: String(mode) },
      ],
      // R2.4: who started it and for which invocation, so a later attempt of this invocation can recognise it.
      memo: { deputyParentId: host.sessionId, deputyInvocationId: entry.invocationId, deputyTaskName: brief.task_name },
    });
    if (started.kind === 'refused') return outcome('failed', null, started.reason, started.reason);
    entry.status = 'running';
    spent = null;
    const ended =
      started.kind === 'started'
        ? await joinChild(started.handle.result(), returnShape)
        : await joinAttached(entry.childWorkflowId, returnShape);
    spent = ended.spent;
    const result = outcome(ended.status, ended.output, ended.summary, ended.error);
    await runHooks(
      'subagent.end',
      { ...hookInput, task, status: result.status, output: typeof ended.output === 'string' ? ended.output : null },
      hooks,
    ).catch((err: unknown) => {
      if (isCancellation(err)) throw err; // a failing end hook changes nothing; a cancelled parent still stops
    });
    return result;
  } catch (err) {
    if (isCancellation(err)) {
      // The parent itself is being cancelled (or hit its deadline): settle, then let the cancellation through.
      settle('cancelled', 'cancelled with its parent');
      throw err;
    }
    // R2.4: an infrastructure error on this brief's path is an error for this brief only; a started child that can no
    // longer be followed is charged its whole reservation (never under-count).
    const reason = `this brief's delegation failed: ${failureMessage(err)}`;
    return outcome('failed', null, reason, reason);
  }
}

const ZERO_SPEND = { inputTokens: 0, outputTokens: 0, costMicroUsd: 0 };

/**
 * R3.4: asks the parent's model for a task-focused background; a failure means the child never starts. R2.13: the
 * call's worst case is held as a reservation while it runs (other invocations of the turn reserve meanwhile), capped
 * by what is free; the activity counts the input exactly and asks for no more answer than the hold pays for.
 */
async function generateBackground(
  task: string,
  taskName: string,
  host: DelegationHost,
  snapshot: readonly SessionEvent[],
): Promise<{ ok: true; background: ChildBackground } | { ok: false; error: string }> {
  const { composition } = host;
  const messages = summaryPrompt(task, snapshot, host.payloads.maxInputBytes);
  const bound = upperBoundTokens(messages);
  const free = available(budgetOf(host.limits, host.usage(), host.reserved()));
  const hold: Amount = {
    tokens: free.tokens === null ? 0 : Math.min(free.tokens, bound + SUMMARY_MAX_COMPLETION_TOKENS),
    costMicroUsd:
      free.costMicroUsd === null
        ? 0
        : Math.min(
            free.costMicroUsd,
            callCostMicroUsd({ inputTokens: bound, outputTokens: SUMMARY_MAX_COMPLETION_TOKENS }, composition.price),
          ),
  };
  const budget: CallBudget = {
    tokens: free.tokens === null ? null : hold.tokens,
    costMicroUsd: free.costMicroUsd === null ? null : hold.costMicroUsd,
    price: composition.price,
    maxCompletionTokens: SUMMARY_MAX_COMPLETION_TOKENS,
  };
  host.setReserved(sum(host.reserved(), hold));
  try {
    const generated = await summarizeContext.executeWithOptions(
      { summary: `summarizeContext ${composition.model} for ${taskName}` },
      [{ model: composition.model, messages, budget }],
    );
    host.setReserved(release(budgetOf(host.limits, host.usage(), host.reserved()), hold).reserved);
    host.debit({
      inputTokens: generated.inputTokens,
      outputTokens: generated.outputTokens,
      costMicroUsd: callCostMicroUsd(generated, composition.price),
    });
    const content = cutText(`${BACKGROUND_HEADING}\n${generated.summary}`, host.payloads.maxTextBytes);
    return { ok: true, background: { source: 'summary', content } };
  } catch (err) {
    host.setReserved(release(budgetOf(host.limits, host.usage(), host.reserved()), hold).reserved);
    if (isCancellation(err)) throw err;
    const limit = budgetExceeded(err);
    const why = limit
      ? `not enough of this run's budget is left to write its background (${limit}): ${failureMessage(err)}`
      : `could not prepare the background: ${failureMessage(err)}`;
    return { ok: false, error: `${why}; the child was not started` };
  }
}

/**
 * R2.4: starts a child, or says why not. An id already held by this invocation's own child from an earlier attempt
 * (a reset parent) is attached to; an id held by anything else refuses this brief only; no error of the start ever
 * fails the parent.
 */
async function startChildOrExplain(
  entry: LedgerEntry,
  options: ChildWorkflowOptions & { args: [RunInput]; memo: { deputyParentId: string } },
): Promise<
  | { kind: 'started'; handle: ChildWorkflowHandle<(input: RunInput) => Promise<RunResult>> }
  | { kind: 'attached' }
  | { kind: 'refused'; reason: string }
> {
  try {
    return { kind: 'started', handle: await startChild<(input: RunInput) => Promise<RunResult>>('agentRun', options) };
  } catch (err) {
    if (isCancellation(err)) throw err;
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
      return { kind: 'refused', reason: `the child could not be started: ${failureMessage(err)}` };
    }
  }
  const existing = await describeRun({ workflowId: entry.childWorkflowId }).catch((err: unknown) => {
    if (isCancellation(err)) throw err;
    return null;
  });
  // Temporal itself records the parent; the memo names the invocation and the task.
  if (
    existing?.parentId === options.memo?.deputyParentId &&
    existing?.invocationId === entry.invocationId &&
    existing?.taskName === entry.taskName &&
    existing.running
  ) {
    return { kind: 'attached' };
  }
  const holder = existing
    ? `a ${existing.running ? 'running' : 'closed'} ${existing.workflowType} run${existing.parentId ? ` started by ${existing.parentId}` : ''}`
    : 'another run';
  return {
    kind: 'refused',
    reason: `workflow id "${entry.childWorkflowId}" is already taken by ${holder}, not by this invocation's child; this brief was not started (its siblings go on)`,
  };
}

/** Waits for an attached child (R2.4); cancelling the parent cancels it, as it would a child it started. */
async function joinAttached(
  workflowId: string,
  returnShape: Record<string, unknown> | undefined,
): ReturnType<typeof joinChild> {
  try {
    const ended = await awaitRun({ workflowId });
    if (ended.kind === 'result') return joinChild(Promise.resolve(ended.result), returnShape);
    if (ended.kind === 'cancelled') {
      const error = 'the child was cancelled before it finished';
      return { status: 'cancelled', output: null, summary: 'the child was cancelled', error, spent: null };
    }
    return { status: 'failed', output: null, summary: ended.error, error: ended.error, spent: ended.usage };
  } catch (err) {
    if (isCancellation(err)) {
      await CancellationScope.nonCancellable(() => getExternalWorkflowHandle(workflowId).cancel()).catch(
        () => undefined,
      );
    }
    throw err;
  }
}

/** The child's `RunInput`: its task, preset, model, derived limits, narrowed scopes and origin. */
function childInput(
  plan: ChildPlan,
  brief: Brief,
  invocation: number,
  returnShape: Record<string, unknown> | undefined,
  host: DelegationHost,
  background: ChildBackground | undefined,
): RunInput {
  // No role: the child runs with the parent's exact model; a role brings its preset's model unless the brief names one.
  const model = brief.model ?? (brief.role ? undefined : host.composition.model);
  return {
    task: renderChildTask(brief, returnShape),
    preset: plan.preset,
    ...(model && { model }),
    ...(brief.effort && { effort: brief.effort }),
    limits: plan.limits,
    scopes: plan.grant.scopes,
    ...(host.tenant && { tenant: host.tenant }),
    origin: {
      parentId: host.sessionId,
      rootId: host.rootId,
      depth: host.depth + 1,
      taskName: brief.task_name,
      invocation,
      allowedTools: plan.grant.tools,
      contextMode: plan.contextMode,
      preset: plan.composition,
      ...(background && { background }),
    },
    ...(plan.restore && { restore: { kind: 'followup' as const, events: plan.restore.events } }),
  };
}

/** How a started child ended, read from its result or its failure; a child's end never cancels its parent (R2.9). */
async function joinChild(
  result: Promise<RunResult>,
  returnShape: Record<string, unknown> | undefined,
): Promise<{
  status: ChildOutcome['status'];
  output: unknown;
  summary: string;
  error?: string;
  spent: RunResult['usage'] | null;
}> {
  try {
    const ended = await result;
    const text = ended.output ?? '';
    if (ended.status === 'completed' && returnShape) {
      const checked = checkReturnShape(ended.output, returnShape);
      return checked.ok
        ? { status: 'completed', output: checked.value, summary: text, spent: ended.usage }
        : {
            status: 'failed',
            output: bounded(text, MAX_CHILD_OUTPUT_CHARS),
            summary: text,
            error: checked.error,
            spent: ended.usage,
          };
    }
    if (ended.status === 'completed') {
      return { status: 'completed', output: bounded(text, MAX_CHILD_OUTPUT_CHARS), summary: text, spent: ended.usage };
    }
    return {
      status: ended.status,
      output: ended.output && bounded(ended.output, MAX_CHILD_OUTPUT_CHARS),
      summary: text || ended.status,
      error: `the child ended ${ended.status}${ended.limit ? ` (${ended.limit})` : ''}; its output is its best so far`,
      spent: ended.usage,
    };
  } catch (err) {
    if (CancellationScope.current().consideredCancelled || !(err instanceof ChildWorkflowFailure)) throw err;
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type === CHILD_FAILED_TYPE) {
      const details = cause.details?.[0] as RunResult | undefined;
      return {
        status: 'failed',
        output: null,
        summary: cause.message,
        error: cause.message,
        spent: details?.usage ?? null,
      };
    }
    if (cause instanceof CancelledFailure || isCancellation(err)) {
      const error = 'the child was cancelled before it finished';
      return { status: 'cancelled', output: null, summary: 'the child was cancelled', error, spent: null };
    }
    const message = cause?.message ?? err.message;
    return { status: 'failed', output: null, summary: message, error: message, spent: null };
  }
}

/**
 * R3.7: sends a message to a live child. A child dispatched with context also gets the parent's dialogue since its
 * snapshot, as a continued block; a `none` child gets only the message. The choice made at dispatch sticks.
 */
export async function deliverInterjection(
  args: InterjectArgs,
  host: DelegationHost,
): Promise<{ ok: true; childWorkflowId: string } | { ok: false; error: string }> {
  const entry = host.ledger.findLast((e) => e.taskName === args.task_name);
  if (!entry)
    return {
      ok: false,
      error: `no child named "${args.task_name}"; the children are: ${host.ledger.map((e) => e.taskName).join(', ') || 'none'}`,
    };
  if (entry.status !== 'running') {
    return { ok: false, error: `child "${args.task_name}" is not running (status ${entry.status}); nothing was sent` };
  }
  let content = args.message;
  const mark = host.snapshotMarks.get(entry.childWorkflowId);
  if (entry.preparation.contextMode !== 'none' && mark !== undefined) {
    const events = host.events();
    const fresh = takeSnapshot(events.slice(Math.max(0, events.length - (host.appendedCount() - mark))));
    if (fresh.length > 0)
      content = `${renderParentContext(fresh, true)}\n\n## Message from your parent\n${args.message}`;
    host.snapshotMarks.set(entry.childWorkflowId, host.appendedCount());
  }
  content = cutText(content, host.payloads.maxTextBytes);
  await getExternalWorkflowHandle(entry.childWorkflowId).signal(interjectionSignal, { from: host.sessionId, content });
  return { ok: true, childWorkflowId: entry.childWorkflowId };
}

/** Reads the `{ task_name, message }` arguments of `interject` and `followup`; a problem is a tool error (R1.7). */
function parseChildMessage(call: ToolCall): { ok: true; args: InterjectArgs } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(call.arguments);
  } catch {
    return { ok: false, error: `arguments for "${call.name}" are not valid JSON; send {"task_name": …, "message": …}` };
  }
  const parsed = InterjectArgs.safeParse(raw);
  return parsed.success
    ? { ok: true, args: parsed.data }
    : { ok: false, error: `invalid ${call.name} arguments: ${describeIssues(parsed.error).join('; ')}` };
}

/** The `interject` tool: delivers, or explains as a tool error why it could not. */
export async function runInterjection(call: ToolCall, host: DelegationHost): Promise<RunToolResult> {
  const parsed = parseChildMessage(call);
  if (!parsed.ok) return toolError(parsed.error);
  const delivered = await deliverInterjection(parsed.args, host);
  return delivered.ok
    ? { content: `delivered to ${delivered.childWorkflowId}`, isError: false }
    : toolError(delivered.error);
}

/**
 * The `followup` tool (R4.5): a finished child goes on with a new message in a new child run that restores its
 * session (its background included) and its composition: the preset it selected, resolved now (or refused if gone),
 * else this run's own. The ledger links the new run to the old one.
 */
export async function runFollowup(call: ToolCall, host: DelegationHost): Promise<RunToolResult> {
  const parsed = parseChildMessage(call);
  if (!parsed.ok) return toolError(parsed.error);
  const { task_name: taskName, message } = parsed.args;
  const source = host.ledger.findLast((e) => e.taskName === taskName);
  if (!source) return toolError(`no child named "${taskName}"; nothing was spawned`);
  if (source.status === 'reserved' || source.status === 'running' || source.status === 'rejected') {
    return toolError(
      `child "${taskName}" is ${source.status}; follow up once it has finished (or interject while it runs)`,
    );
  }
  if (host.ledger.length + 1 > host.settings.maxChildrenPerRun) {
    return toolError(
      `this run has started ${host.ledger.length} of its ${host.settings.maxChildrenPerRun} children; nothing was spawned`,
    );
  }
  const { events } = await loadSession({ workflowId: source.childWorkflowId });
  const decision = decideRestoration(events);
  let childComposition: ChildPlan['composition'];
  if (decision.kind === 'independent') {
    const { presets } = await resolvePresets({ ids: [decision.presetId] });
    const found = presets[0];
    if (!found?.ok) {
      return toolError(
        `cannot restore "${taskName}": it selected preset "${decision.presetId}" (revision ${decision.revision}), which is no longer registered; nothing was spawned`,
      );
    }
    childComposition = { definition: found.definition, revision: found.revision, selected: true };
  } else {
    const definition = host.composition.presetDefinition;
    if (!definition) return toolError('this run has no preset definition to share (an older run); nothing was spawned');
    childComposition = { definition, revision: host.composition.presetRevision ?? '', selected: false };
  }
  const plan = planChild({ task_name: taskName, message }, childComposition, host);
  if (!plan.ok) return toolError(`${plan.error}; nothing was spawned`);
  if (jsonBytes(events) > host.payloads.maxInputBytes) {
    return toolError(
      `cannot follow up "${taskName}": its session is ${formatBytes(jsonBytes(events))}, past this run's payload budget (${formatBytes(host.payloads.maxInputBytes)}); nothing was spawned`,
    );
  }
  const followup: ChildPlan = {
    ...plan.plan,
    // The choice made at dispatch sticks (R3.7): the follow-up keeps its source's context mode and snapshot.
    contextMode: source.preparation.contextMode,
    snapshotMark: host.snapshotMarks.get(source.childWorkflowId),
    restore: { from: source.childWorkflowId, events },
  };
  return bookAndRun(call, [followup], undefined, host, { events: [], mark: host.appendedCount() });
}
