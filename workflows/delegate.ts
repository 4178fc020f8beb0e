/**
 * The `delegate` tool inside the workflow (R2.2–R2.11): check the invocation, resolve roles, narrow tools, derive
 * limits, reserve cost all or nothing, start one child `agentRun` per brief on the background queue, and join them
 * into one tool result. Deterministic code only.
 */
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  isCancellation,
  ParentClosePolicy,
  proxyActivities,
  startChild,
} from '@temporalio/workflow';
import type { DeputyActivities } from '../activities/index.js';
import type { ResolveRunResult, RunToolResult } from '../src/activity-types.js';
import { budgetOf, deriveChildLimits, release, reservationFor, reserve, type Amount } from '../src/budget.js';
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
  type DelegationSettings,
} from '../src/delegation.js';
import type { LedgerEntry, LiveStatus, Limits, ResolvedLimits, RunInput, RunResult, Usage } from '../src/run-schema.js';
import {
  DEPUTY_CONTEXT_MODE,
  DEPUTY_DEPTH,
  DEPUTY_PARENT_ID,
  DEPUTY_PRESET,
  DEPUTY_ROOT_ID,
  DEPUTY_STATUS,
  DEPUTY_TASK_NAME,
} from '../src/search-attributes.js';
import type { ToolCall } from '../src/session.js';
import { microToUsd } from '../src/usage.js';

const { resolvePresets } = proxyActivities<DeputyActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
});

/** Failure type a child throws so its parent can still read its usage from the failure's details. */
export const CHILD_FAILED_TYPE = 'AgentRun.Failed';

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
  usage(): Usage;
  reserved(): Amount;
  setReserved(amount: Amount): void;
  /** Debits a child's spend to the run's usage. */
  debit(spend: { inputTokens: number; outputTokens: number; costMicroUsd: number }): void;
  setStatus(status: LiveStatus): void;
}

interface ChildPlan {
  brief: Brief;
  preset: string;
  grant: ChildGrant;
  limits: Limits;
  reservation: Amount;
}

const toolError = (content: string): RunToolResult => ({ content, isError: true });

/** Executes one `delegate` tool call; every refusal is a tool error the model sees, with nothing spawned. */
export async function runDelegation(call: ToolCall, host: DelegationHost): Promise<RunToolResult> {
  const { settings, composition } = host;
  const check = parseInvocation(call.arguments);
  if (!check.ok) return toolError(check.error);
  const { briefs, return_shape: returnShape } = check.args;

  const withContext = briefs.filter((brief) => (brief.context ?? 'none') !== 'none');
  if (withContext.length > 0) {
    return toolError(
      `context ${JSON.stringify(withContext[0]!.context)} (brief "${withContext[0]!.task_name}") is not available yet; use "none" and put what the child needs in message or inline_context; nothing was spawned`,
    );
  }

  const roleOf = (brief: Brief) => brief.role ?? composition.preset;
  const { presets } = await resolvePresets({ ids: [...new Set(briefs.map(roleOf))] });
  const unknown = presets.filter((preset) => !preset.ok);
  if (unknown.length > 0) {
    return toolError(`${unknown.map((p) => (p.ok ? '' : p.error)).join('; ')}; nothing was spawned`);
  }

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
    const preset = presets.find((p) => p.id === roleOf(brief));
    const grant = narrowGrant({
      parentTools: composition.tools,
      parentScopes: composition.scopes,
      allowedTools: brief.allowed_tools,
      presetTools: preset?.ok ? preset.tools : [],
      childDepth: host.depth + 1,
      settings,
    });
    if (!grant.ok) return toolError(`brief "${brief.task_name}": ${grant.error}; nothing was spawned`);
    const limits = deriveChildLimits({
      parentLimits: host.limits,
      parentUsage: host.usage(),
      reserved: host.reserved(),
      nowMs: Date.now(),
      requested: brief.limits,
      defaults: settings.childDefaults,
    });
    if (limits.maxTurns === 0 || limits.maxTokens === 0 || limits.maxCostUsd === 0) {
      return toolError(
        `brief "${brief.task_name}": nothing is left of this run's budget for a child (limits ${JSON.stringify(limits)}); nothing was spawned`,
      );
    }
    plans.push({ brief, preset: roleOf(brief), grant: grant.grant, limits, reservation: reservationFor(limits) });
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
      preparation: { contextMode: plan.brief.context ?? 'none', backgroundChars: null, hookOutcome: null },
    };
    host.ledger.push(entry);
    return entry;
  });

  host.setStatus('waiting_for_children');
  const outcomes = await Promise.all(
    plans.map((plan, i) => runChild(plan, entries[i]!, invocation, returnShape, host)),
  );
  host.setStatus('running');
  return { content: renderChildResults(outcomes), isError: outcomes.every((o) => o.status !== 'completed') };
}

/** Starts one child, waits for it, and settles its reservation; the child's end never cancels the parent (R2.9). */
async function runChild(
  plan: ChildPlan,
  entry: LedgerEntry,
  invocation: number,
  returnShape: Record<string, unknown> | undefined,
  host: DelegationHost,
): Promise<ChildOutcome> {
  const { brief } = plan;
  const input: RunInput = {
    task: renderChildTask(brief, returnShape),
    preset: plan.preset,
    // No role: the child runs with the parent's exact model; a role brings its preset's model unless the brief names one.
    ...((brief.model ?? (brief.role ? undefined : host.composition.model)) && {
      model: brief.model ?? host.composition.model,
    }),
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
      contextMode: brief.context ?? 'none',
    },
  };

  let spent: { inputTokens: number; outputTokens: number; costMicroUsd: number } | null = null;
  const settle = (status: LedgerEntry['status'], summary: string) => {
    // A child that ended without reporting its spend is charged its whole reservation: never under-count.
    const charge = spent ?? {
      inputTokens: plan.reservation.tokens,
      outputTokens: 0,
      costMicroUsd: plan.reservation.costMicroUsd,
    };
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

  try {
    const handle = await startChild('agentRun', {
      workflowId: entry.childWorkflowId,
      taskQueue: host.settings.backgroundTaskQueue,
      args: [input],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
      staticSummary: `${brief.task_name} (child of ${host.sessionId}): ${bounded(brief.message.replace(/\s+/g, ' '), 100)}`,
      typedSearchAttributes: [
        { key: DEPUTY_ROOT_ID, value: host.rootId },
        { key: DEPUTY_PARENT_ID, value: host.sessionId },
        { key: DEPUTY_DEPTH, value: host.depth + 1 },
        { key: DEPUTY_TASK_NAME, value: brief.task_name },
        { key: DEPUTY_PRESET, value: plan.preset },
        { key: DEPUTY_STATUS, value: 'starting' },
        { key: DEPUTY_CONTEXT_MODE, value: String(brief.context ?? 'none') },
      ],
    });
    entry.status = 'running';
    const result = (await handle.result()) as RunResult;
    spent = result.usage;
    const text = result.output ?? '';
    if (result.status === 'completed' && returnShape) {
      const checked = checkReturnShape(result.output, returnShape);
      if (!checked.ok) return outcome('failed', bounded(text, MAX_CHILD_OUTPUT_CHARS), text, checked.error);
      return outcome('completed', checked.value, text);
    }
    if (result.status === 'completed') return outcome('completed', bounded(text, MAX_CHILD_OUTPUT_CHARS), text);
    return outcome(
      result.status,
      result.output && bounded(result.output, MAX_CHILD_OUTPUT_CHARS),
      text || result.status,
      `the child ended ${result.status}${result.limit ? ` (${result.limit})` : ''}; its output is its best so far`,
    );
  } catch (err) {
    if (CancellationScope.current().consideredCancelled) {
      // The parent itself is being cancelled (or hit its deadline): settle, then let the cancellation through.
      settle('cancelled', 'cancelled with its parent');
      throw err;
    }
    if (!(err instanceof ChildWorkflowFailure)) throw err;
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type === CHILD_FAILED_TYPE) {
      const details = cause.details?.[0] as RunResult | undefined;
      spent = details?.usage ?? null;
      return outcome('failed', null, cause.message, cause.message);
    }
    if (cause instanceof CancelledFailure || isCancellation(err)) {
      return outcome('cancelled', null, 'the child was cancelled', 'the child was cancelled before it finished');
    }
    const message = cause?.message ?? err.message;
    return outcome('failed', null, message, message);
  }
}
