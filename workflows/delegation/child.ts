/**
 * One child's life as its parent sees it, in named steps: prepare (hooks, the background), admit (a tenant's
 * slot), start, join, and settle its reservation. Deterministic code only.
 */
import type { ContextRendering } from '../../src/contract/preset.js';
import {
  ChildWorkflowCancellationType,
  isCancellation,
  ParentClosePolicy,
  WorkflowIdReusePolicy,
  type ChildWorkflowOptions,
} from '@temporalio/workflow';
import { cutText, jsonBytes, type PayloadLimits } from '../../src/rules/payloads.js';
import { bounded, callEvidence, MAX_CHILD_SUMMARY_CHARS, type ChildOutcome } from '../../src/rules/children.js';
import type { ContextMode } from '../../src/rules/delegation.js';
import type { LedgerEntry, RunInput } from '../../src/contract/run.js';
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
import { admit, release } from './slot.js';
import { endOfFailure, explainStartFailure, joinAttached, readResult, startAgentRun } from './spawn.js';
import { childInput, type ChildEnd } from '../../src/rules/child-run.js';
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
export function runChild(
  plan: ChildPlan,
  entry: LedgerEntry,
  invocation: number,
  returnShape: Record<string, unknown> | undefined,
  run: AgentRunState,
  snapshot: Snapshot,
): Promise<ChildOutcome> {
  return new ChildLife(run, { plan, entry, invocation, returnShape, snapshot }).live();
}

/** What a child's life is given by its invocation. */
interface ChildOrder {
  plan: ChildPlan;
  entry: LedgerEntry;
  invocation: number;
  returnShape: Record<string, unknown> | undefined;
  snapshot: Snapshot;
}

/** The hooks a child's task goes through before it is prepared, in order. */
const TASK_HOOK_EVENTS = ['task.submitted', 'subagent.start'] as const;

/** A step that ends the child's life early says so with the outcome to report. */
type Step<T> = { ok: true; value: T } | { ok: false; outcome: ChildOutcome };

/** One child, from its preparation to its settlement; each step names what it does to the parent's state. */
class ChildLife {
  readonly #hooks;
  readonly #hookInput;
  /** The task as the hooks accepted (or rewrote) it. */
  #task: string;
  /**
   * Nothing spent until the child starts; a child that ends without reporting its spend is charged its whole
   * reservation: never under-count.
   */
  #spent: Spend | null = ZERO_SPEND;
  #settled = false;
  /** The tenant whose admission slot the child holds, to give it back however the child ends. */
  #holdsSlot: string | undefined;

  constructor(
    private readonly run: AgentRunState,
    private readonly order: ChildOrder,
  ) {
    const { plan, entry } = order;
    this.#task = plan.brief.message;
    this.#hooks = run.composition.hooks ?? [];
    this.#hookInput = {
      parentId: run.sessionId,
      rootId: run.rootId,
      taskName: plan.brief.task_name,
      task: plan.brief.message,
      role: plan.preset,
      contextMode: String(plan.contextMode),
      childWorkflowId: entry.childWorkflowId,
    };
  }

  /**
   * The steps in order: admit, prepare, start. One that has nothing to wait for (no tenant cap, no hook listens, no
   * summary to write) answers at once and is not awaited, and those that wait are chained with `then`, each with its
   * failure (fewer promises: see workflows/index.ts). Under a tenant cap the slot goes back however the child ended, and while the
   * parent is being cancelled, too.
   */
  live(): Promise<ChildOutcome> {
    // The slot comes first: a background is written and paid for only for a child that has one.
    const life = this.#guard(() =>
      this.#then(this.admit(), (admitted) =>
        !admitted.ok
          ? admitted.outcome
          : this.#then(this.prepare(), (prepared) => (prepared.ok ? this.#start(prepared.value) : prepared.outcome)),
      ),
    );
    if (!this.run.delegationSettings.admission) return Promise.resolve(life);
    const released = () =>
      this.#holdsSlot === undefined ? Promise.resolve() : release(this.#holdsSlot, this.order.entry.childWorkflowId);
    return Promise.resolve(life).then(
      (outcome) => released().then(() => outcome),
      (err: unknown) =>
        released().then(() => {
          throw err;
        }),
    );
  }

  /** Starts the child (or attaches to this invocation's own from an earlier attempt) and follows it to its end. */
  #start(input: RunInput): Life {
    const { entry, returnShape } = this.order;
    return startAgentRun(this.#startOptions(input)).then(
      (handle) =>
        this.#guard(() => {
          this.started();
          return handle.result().then(
            (result) => this.#guard(() => this.#ended(readResult(result, returnShape))),
            (err: unknown) => this.#guard(() => this.#ended(endOfFailure(err))),
          );
        }),
      (err: unknown) =>
        this.#guard(() =>
          this.#then(explainStartFailure(entry, err), (notStarted) => {
            if (notStarted.kind === 'refused') return this.refused(notStarted.reason);
            this.started();
            return this.#then(joinAttached(entry.childWorkflowId, returnShape), (ended) => this.#ended(ended));
          }),
        ),
    );
  }

  /** `next` of a step's value, at once when the step did not wait; a failure on the way ends in `#failed`. */
  #then<T>(value: T | Promise<T>, next: (value: T) => Life): Life {
    if (!(value instanceof Promise)) return this.#guard(() => next(value));
    return value.then(
      (done) => this.#guard(() => next(done)),
      (err: unknown) => this.#failed(err),
    );
  }

  #guard(step: () => Life): Life {
    try {
      return step();
    } catch (err) {
      return this.#failed(err);
    }
  }

  /**
   * The parent itself is being cancelled (or hit its deadline): the child is settled, and the cancellation goes
   * through. Any other error on this brief's path is an error for this brief only; a started child that can no
   * longer be followed is charged its whole reservation (never under-count).
   */
  #failed(err: unknown): ChildOutcome {
    if (isCancellation(err)) {
      this.settle('cancelled', 'cancelled with its parent');
      throw err;
    }
    const reason = `this brief's delegation failed: ${failureMessage(err)}`;
    return this.outcome('failed', null, reason, reason);
  }

  /** The child ended (and is settled): its outcome, once the end hooks (if any listen) were told. */
  #ended(ended: ChildEnd): Life {
    const outcome = this.ended(ended);
    return hasHooks('subagent.end', this.#hooks) ? this.tellEnd(outcome, ended.output) : outcome;
  }

  /**
   * The child's slot, id and cost are reserved, but it is not started and has no identity yet: the task hooks run,
   * and the background is prepared from the snapshot taken at the delegate call. Its input is fixed at the end.
   */
  prepare(): Step<RunInput> | Promise<Step<RunInput>> {
    const { plan } = this.order;
    const waits =
      TASK_HOOK_EVENTS.some((event) => hasHooks(event, this.#hooks)) ||
      (plan.contextMode === 'summary' && !plan.restore);
    return waits ? this.#prepareWaiting() : this.#prepared(this.#background());
  }

  async #prepareWaiting(): Promise<Step<RunInput>> {
    const { plan, entry, snapshot } = this.order;
    const trail: string[] = [];
    for (const event of TASK_HOOK_EVENTS) {
      if (!hasHooks(event, this.#hooks)) continue;
      const decided = await runHooks(event, { ...this.#hookInput, task: this.#task }, this.#hooks, this.run.grant);
      trail.push(...decided.trail);
      entry.preparation.hookOutcome = trail.join('; ') || null;
      if (decided.decision === 'reject') {
        const reason = `${decided.reason ?? 'rejected'}; the child was not started`;
        return { ok: false, outcome: this.outcome('rejected', null, reason, reason) };
      }
      this.#task = decided.task;
    }
    let background = this.#background();
    if (plan.contextMode === 'summary' && !plan.restore) {
      // The background is written for the hook-accepted task; its cost is the parent's.
      const generated = await generateBackground(this.#task, plan.brief.task_name, this.run, snapshot.events);
      if (!generated.ok)
        return { ok: false, outcome: this.outcome('rejected', null, generated.error, generated.error) };
      background = generated.background;
    }
    return this.#prepared(background);
  }

  /**
   * The snapshot was taken at the delegate call and never changes; it waits for no sibling. A follow-up's restored
   * session already holds its background, and its interjections continue from its source's mark.
   */
  #background(): ChildBackground | undefined {
    const { plan, entry, snapshot } = this.order;
    this.run.markSnapshot(entry.childWorkflowId, plan.restore ? (plan.snapshotMark ?? snapshot.mark) : snapshot.mark);
    return plan.restore
      ? undefined
      : prepareBackground(plan.contextMode, plan.contextRendering, snapshot.events, this.run.payloads);
  }

  /** The child's input, with its background; its limits are given now: a later overrun can no longer shrink them. */
  #prepared(background: ChildBackground | undefined): Step<RunInput> {
    const { run } = this;
    const { plan, entry, invocation, returnShape } = this.order;
    entry.preparation.backgroundChars = background ? background.content.length : null;
    run.prepared(entry);
    const parent = {
      sessionId: run.sessionId,
      rootId: run.rootId,
      depth: run.depth,
      tenant: run.tenant,
      composition: run.composition,
      invocationId: entry.invocationId,
    };
    const input = childInput(plan, { ...plan.brief, message: this.#task }, invocation, returnShape, parent, background);
    return { ok: true, value: input };
  }

  /** Under a tenant cap, the child starts only with a slot. */
  admit(): Step<void> | Promise<Step<void>> {
    const admission = this.run.delegationSettings.admission;
    if (!admission) return { ok: true, value: undefined };
    const { deadline } = this.order.plan.limits;
    return admit(this.run, this.order.entry, admission, deadline ? Date.parse(deadline) : null).then((admitted) => {
      if (!admitted.ok) return { ok: false, outcome: this.outcome('failed', null, admitted.reason, admitted.reason) };
      this.#holdsSlot = admission.tenant;
      return { ok: true, value: undefined };
    });
  }

  /** The child started (or this invocation's own child from an earlier attempt was found, to attach to). */
  started(): void {
    const { entry } = this.order;
    entry.status = 'running';
    entry.started = true;
    this.#spent = null;
  }

  /** The child could not be started: this brief fails, its siblings go on. */
  refused(reason: string): ChildOutcome {
    countRefusal(this.run, 'start_failed');
    return this.outcome('failed', null, reason, reason);
  }

  #startOptions(input: RunInput): ChildWorkflowOptions & { args: [RunInput] } {
    const { run } = this;
    const { plan, entry } = this.order;
    const { brief } = plan;
    const admission = run.delegationSettings.admission;
    return {
      // Under a tenant cap, at a lower priority than interactive runs.
      ...(admission && { priority: { priorityKey: 4 } }),
      workflowId: entry.childWorkflowId,
      taskQueue: run.delegationSettings.childTaskQueue,
      args: [input],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
      // A closed child keeps its id: the same invocation after a reset attaches to it instead of running it twice.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      // Its parent is Temporal's own link (and in its id): the summary says what it was asked.
      // Temporal UI lists a background child as such (replay does not compare summaries).
      staticSummary: `${brief.task_name}${brief.wait === false ? ' (background)' : ''}: ${bounded(this.#task.replace(/\s+/g, ' '), 100)}`,
      // The tree the child belongs to, searchable from its start, with all of its attributes: the child writes none
      // when it starts running (no visibility update of its own).
      typedSearchAttributes: [
        { key: DEPUTY_ROOT_ID, value: run.rootId },
        { key: DEPUTY_PARENT_ID, value: run.sessionId },
        { key: DEPUTY_DEPTH, value: run.depth + 1 },
        { key: DEPUTY_TASK_NAME, value: brief.task_name },
        { key: DEPUTY_CONTEXT_MODE, value: String(plan.contextMode) },
        { key: DEPUTY_PRESET, value: plan.preset },
        { key: DEPUTY_STATUS, value: 'running' },
        ...(run.tenant ? [{ key: DEPUTY_TENANT, value: run.tenant }] : []),
      ],
    };
  }

  /** The child ended: what it spent, and its outcome (the child is settled). */
  ended(ended: ChildEnd): ChildOutcome {
    this.#spent = ended.spent;
    this.order.entry.artifacts = this.run.artifacts.handedBack(this.order.entry.childWorkflowId, ended.artifacts);
    // The child's call counts, and a mark when it answered without a tool.
    const evidence = ended.spent ? callEvidence(ended.status, ended.spent) : undefined;
    return this.outcome(ended.status, ended.output, ended.summary, ended.error, evidence);
  }

  /** Tells the end hooks how the child ended; their failure changes nothing. */
  async tellEnd(result: ChildOutcome, ended: unknown): Promise<ChildOutcome> {
    const output = typeof ended === 'string' ? ended : null;
    await runHooks(
      'subagent.end',
      { ...this.#hookInput, task: this.#task, status: result.status, output },
      this.#hooks,
      this.run.grant,
    ).catch((err: unknown) => {
      if (isCancellation(err)) throw err; // a failing end hook changes nothing; a cancelled parent still stops
    });
    return result;
  }

  /** Releases the child's reservation and debits what it spent (all of it when it did not say), once. */
  settle(status: LedgerEntry['status'], summary: string): void {
    if (this.#settled) return;
    this.#settled = true;
    const { run } = this;
    const { entry, plan } = this.order;
    run.prepared(entry);
    const { charge, overrun } = run.settleChild(plan.reservation, this.#spent);
    entry.status = status;
    countDelegationSettled(run, status, overrun);
    entry.actual = { tokens: charge.inputTokens + charge.outputTokens, costMicroUsd: charge.costMicroUsd };
    if (overrun) entry.overrun = overrun;
    entry.summary = bounded(summary, MAX_CHILD_SUMMARY_CHARS);
    closeQuestions(entry);
  }

  /** The child's outcome as its parent's model reads it; the child is settled first. */
  outcome(
    status: ChildOutcome['status'],
    output: unknown,
    summary: string,
    error?: string,
    evidence?: Pick<ChildOutcome, 'calls' | 'evidence'>,
  ): ChildOutcome {
    this.settle(status, summary);
    const { entry, plan } = this.order;
    return {
      task_name: plan.brief.task_name,
      workflow_id: entry.childWorkflowId,
      status,
      output,
      summary: bounded(summary, MAX_CHILD_SUMMARY_CHARS),
      ...(error !== undefined && { error }),
      usage: entry.actual && { tokens: entry.actual.tokens, cost_usd: microToUsd(entry.actual.costMicroUsd) },
      artifacts: this.run.artifacts.describe(entry.artifacts),
      ...evidence,
    };
  }
}

/** A step of a child's life: its outcome, at once or once it has waited. */
type Life = ChildOutcome | Promise<ChildOutcome>;

const ZERO_SPEND = { inputTokens: 0, outputTokens: 0, costMicroUsd: 0 };
