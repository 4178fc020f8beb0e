/**
 * One child's life as its parent sees it: hooks, the background, the start, the join, and the
 * settlement of its reservation. Deterministic code only.
 */
import type { ContextRendering } from '../../src/contract/preset.js';
import {
  ChildWorkflowCancellationType,
  isCancellation,
  ParentClosePolicy,
  patched,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import { budgetOf } from '../../src/rules/budget.js';
import { cutText, jsonBytes, type PayloadLimits } from '../../src/rules/payloads.js';
import { bounded, callEvidence, MAX_CHILD_SUMMARY_CHARS, type ChildOutcome } from '../../src/rules/children.js';

/** Children's results carry their call counts and an evidence note. */
const CALL_EVIDENCE_PATCH = 'deputy-child-call-evidence';
import type { ContextMode } from '../../src/rules/delegation.js';
import type { LedgerEntry } from '../../src/contract/run.js';
import {
  DEPUTY_CONTEXT_MODE,
  DEPUTY_DEPTH,
  DEPUTY_PARENT_ID,
  DEPUTY_PRESET,
  DEPUTY_ROOT_ID,
  DEPUTY_STATUS,
  DEPUTY_TASK_NAME,
  DEPUTY_TENANT,
} from '../../src/contract/search-attributes.js';
import type { SessionEvent } from '../../src/contract/session.js';
import { hasHooks, runHooks } from '../hooks.js';
import { failureMessage } from '../../src/rules/failure-message.js';
import { renderParentContext, renderParentDialogue, selectContext } from '../../src/rules/context.js';
import { microToUsd, type Spend } from '../../src/rules/usage.js';
import type { AgentRunState } from '../run-state.js';
import type { ChildBackground, ChildPlan, Snapshot } from './plan.js';
import { generateBackground } from './background.js';
import { closeQuestions } from './questions.js';
import { admit, release } from './admission.js';
import { joinAttached, joinChild, startChildOrExplain } from './spawn.js';
import { childInput, settleReservation } from '../../src/rules/child-run.js';
import { countDelegationSettled, countRefusal } from '../metrics.js';

/** The background a child gets for its context mode, rendered as its preset asks; none for `none`. */
function prepareBackground(
  mode: ContextMode,
  rendering: ContextRendering,
  snapshot: readonly SessionEvent[],
  payloads: PayloadLimits,
): ChildBackground | undefined {
  const selected = selectContext(snapshot, mode);
  if (selected.length === 0) return undefined;
  // The copy goes into the child's input; past the budget it is cut (the block) or its oldest turns dropped.
  const content = cutText(renderParentContext(selected), payloads.maxTextBytes);
  if (rendering !== 'dialogue') return { source: 'parent-chat', content };
  const dialogue = renderParentDialogue(selected).map((m) => ({
    ...m,
    content: cutText(m.content, payloads.maxTextBytes),
  }));
  while (dialogue.length > 1 && jsonBytes(dialogue) > payloads.maxTextBytes) dialogue.shift();
  return { source: 'parent-chat', content, dialogue };
}

/** Starts one child, waits for it, and settles its reservation; the child's end never cancels the parent. */
export async function runChild(
  plan: ChildPlan,
  entry: LedgerEntry,
  invocation: number,
  returnShape: Record<string, unknown> | undefined,
  run: AgentRunState,
  snapshot: Snapshot,
): Promise<ChildOutcome> {
  const { brief } = plan;
  const mode = plan.contextMode;
  const hooks = run.composition.hooks ?? [];
  const hookInput = {
    parentId: run.sessionId,
    rootId: run.rootId,
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
    run.preparing.delete(entry);
    const { reserved, charge, overrun } = settleReservation(
      budgetOf(run.limits, run.usage, run.reserved),
      plan.reservation,
      spent,
    );
    run.reserved = reserved;
    run.debit(charge);
    entry.status = status;
    countDelegationSettled(run, status, overrun);
    entry.actual = { tokens: charge.inputTokens + charge.outputTokens, costMicroUsd: charge.costMicroUsd };
    if (overrun) entry.overrun = overrun;
    entry.summary = bounded(summary, MAX_CHILD_SUMMARY_CHARS);
    closeQuestions(entry);
  };
  const outcome = (
    status: ChildOutcome['status'],
    output: unknown,
    summary: string,
    error?: string,
    evidence?: Pick<ChildOutcome, 'calls' | 'evidence'>,
  ): ChildOutcome => {
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
      ...evidence,
    };
  };

  let task = brief.message;
  let holdsSlot: string | undefined;
  try {
    // Preparation: the child's slot, id and cost are reserved, but it is not started and has no identity yet.
    const trail: string[] = [];
    for (const event of ['task.submitted', 'subagent.start'] as const) {
      // No await where no hook listens (fewer promises: see workflows/index.ts).
      if (!hasHooks(event, hooks)) continue;
      const decided = await runHooks(event, { ...hookInput, task }, hooks);
      trail.push(...decided.trail);
      entry.preparation.hookOutcome = trail.join('; ') || null;
      if (decided.decision === 'reject') {
        const reason = `${decided.reason ?? 'rejected'}; the child was not started`;
        return outcome('rejected', null, reason, reason);
      }
      task = decided.task;
    }
    // The snapshot was taken at the delegate call and never changes; it waits for no sibling. A follow-up's
    // restored session already holds its background, and its interjections continue from its source's mark.
    run.snapshotMarks.set(entry.childWorkflowId, plan.restore ? (plan.snapshotMark ?? snapshot.mark) : snapshot.mark);
    let background = plan.restore
      ? undefined
      : prepareBackground(mode, plan.contextRendering, snapshot.events, run.payloads);
    if (mode === 'summary' && !plan.restore) {
      // The background is written for the hook-accepted task; its cost is the parent's.
      const generated = await generateBackground(task, brief.task_name, run, snapshot.events);
      if (!generated.ok) return outcome('rejected', null, generated.error, generated.error);
      background = generated.background;
    }
    entry.preparation.backgroundChars = background ? background.content.length : null;

    // Its limits are given now: a later overrun of the parent can no longer shrink them.
    run.preparing.delete(entry);
    const input = childInput(
      plan,
      { ...brief, message: task },
      invocation,
      returnShape,
      {
        sessionId: run.sessionId,
        rootId: run.rootId,
        depth: run.depth,
        tenant: run.tenant,
        composition: run.composition,
        invocationId: entry.invocationId,
      },
      background,
    );
    // Under a tenant cap, the child starts only with a slot, and at a lower priority than interactive runs.
    const admission = run.delegationSettings.admission;
    if (admission) {
      const admitted = await admit(
        run,
        entry,
        admission,
        plan.limits.deadline ? Date.parse(plan.limits.deadline) : null,
      );
      if (!admitted.ok) return outcome('failed', null, admitted.reason, admitted.reason);
      holdsSlot = admission.tenant;
    }
    const started = await startChildOrExplain(entry, {
      ...(admission && { priority: { priorityKey: 4 } }),
      workflowId: entry.childWorkflowId,
      taskQueue: run.delegationSettings.backgroundTaskQueue,
      args: [input],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
      // A closed child keeps its id: the same invocation after a reset attaches to it instead of running it twice.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      // Its parent is Temporal's own link (and in its id): the summary says what it was asked.
      // Temporal UI lists a background child as such (replay does not compare summaries).
      staticSummary: `${brief.task_name}${brief.wait === false ? ' (background)' : ''}: ${bounded(task.replace(/\s+/g, ' '), 100)}`,
      // The tree the child belongs to, searchable from its start, with all of its attributes: the child writes none
      // when it starts running (no visibility update of its own).
      typedSearchAttributes: [
        { key: DEPUTY_ROOT_ID, value: run.rootId },
        { key: DEPUTY_PARENT_ID, value: run.sessionId },
        { key: DEPUTY_DEPTH, value: run.depth + 1 },
        { key: DEPUTY_TASK_NAME, value: brief.task_name },
        { key: DEPUTY_CONTEXT_MODE, value: String(mode) },
        { key: DEPUTY_PRESET, value: plan.preset },
        { key: DEPUTY_STATUS, value: 'running' },
        ...(run.tenant ? [{ key: DEPUTY_TENANT, value: run.tenant }] : []),
      ],
    });
    if (started.kind === 'refused') {
      countRefusal(run, 'start_failed');
      return outcome('failed', null, started.reason, started.reason);
    }
    entry.status = 'running';
    entry.started = true;
    spent = null;
    const ended =
      started.kind === 'started'
        ? await joinChild(started.handle.result(), returnShape)
        : await joinAttached(entry.childWorkflowId, returnShape);
    spent = ended.spent;
    // The child's call counts, and a mark when it answered without a tool (runs recorded before show
    // their models what they were shown then: patched).
    const evidence = ended.spent && patched(CALL_EVIDENCE_PATCH) ? callEvidence(ended.status, ended.spent) : undefined;
    const result = outcome(ended.status, ended.output, ended.summary, ended.error, evidence);
    if (!hasHooks('subagent.end', hooks)) return result;
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
    // An infrastructure error on this brief's path is an error for this brief only; a started child that can no
    // longer be followed is charged its whole reservation (never under-count).
    const reason = `this brief's delegation failed: ${failureMessage(err)}`;
    return outcome('failed', null, reason, reason);
  } finally {
    // The slot goes back however the child ended (and while the parent is being cancelled, too).
    if (holdsSlot !== undefined) await release(holdsSlot, entry.childWorkflowId);
  }
}

const ZERO_SPEND = { inputTokens: 0, outputTokens: 0, costMicroUsd: 0 };
