/**
 * One child's life as its parent lives it, in named steps: admit (a tenant's slot), prepare (hooks, its parent
 * context), start, follow, and settle: every change to the child goes through its `Child` value. Deterministic code
 * only.
 */
import {
  ChildWorkflowCancellationType,
  isCancellation,
  ParentClosePolicy,
  startChild,
  WorkflowIdReusePolicy,
  type ChildWorkflowOptions,
} from '@temporalio/workflow';
import { bounded, callEvidence, MAX_CHILD_SUMMARY_CHARS, type ChildOutcome } from '../../src/rules/children.js';
import type { RunInput, RunResult } from '../../src/contract/run.js';
import { treeAttributes } from '../../src/contract/search-attributes.js';
import { hasHooks, runHooks } from '../hooks.js';
import { failureMessage } from '../../src/rules/failure-message.js';
import { microToUsd, type Spend } from '../../src/rules/usage.js';
import type { Run } from '../run/run.js';
import type { DelegateCall } from './plan.js';
import type { Child, Settlement } from './child.js';
import { copyParentBackground, summariseParentBackground, type ParentBackground } from './parent-background.js';
import { forgetChildApprovals } from '../approvals.js';
import { admit, release } from './slot.js';
import { endOfFailure, explainStartFailure, joinAttached } from './spawn.js';
import { childInput } from '../../src/rules/run-start.js';
import { childPriority } from '../../src/rules/fleet.js';
import { endOfResult, type ChildEnd } from '../../src/rules/child-end.js';
import { countDelegationSettled, countRefusal } from '../metrics.js';

/** The hooks a child's task goes through before it is prepared, in order. */
const TASK_HOOK_EVENTS = ['task.submitted', 'subagent.start'] as const;

/** A step that ends the child's life early says so with the outcome to report. */
type Step<T> = { ok: true; value: T } | { ok: false; outcome: ChildOutcome };

/** How a child's life ended, as its parent's model reads it. */
interface Ending {
  status: Settlement['status'];
  summary: string;
  /** What it answered; `null` when it answered nothing. */
  output?: unknown;
  error?: string;
  evidence?: Pick<ChildOutcome, 'calls' | 'evidence'>;
}

/** An ending that is a failure or a refusal: its reason is its summary and its error. */
const because = (status: 'failed' | 'rejected', reason: string): Ending => ({ status, summary: reason, error: reason });

/** One child, from its preparation to its settlement; each step names what it does to the parent's state. */
export class ChildLife {
  readonly #hooks;
  readonly #hookInput;
  /** The task as the hooks accepted (or rewrote) it. */
  #task: string;
  /** What the child said it spent, once it ended and said so. */
  #reportedSpend: Spend | null = null;
  /** The tenant whose admission slot the child holds, to give it back however the child ends. */
  #holdsSlot: string | undefined;

  constructor(
    private readonly run: Run,
    private readonly call: DelegateCall,
    private readonly child: Child,
  ) {
    const { plan } = child;
    this.#task = plan.brief.message;
    this.#hooks = run.composition.hooks ?? [];
    this.#hookInput = {
      parentId: run.workflowId,
      rootId: run.rootId,
      taskName: plan.brief.task_name,
      task: plan.brief.message,
      role: plan.preset,
      contextMode: String(plan.contextMode),
      childWorkflowId: child.id,
    };
  }

  /**
   * The steps in order: admit (the slot comes first, so a parent context is written and paid for only for a child
   * that has one), prepare, start and follow. Any failure on the way is this brief's alone, unless the parent itself
   * is being cancelled. A slot goes back however the child ended.
   */
  async live(): Promise<ChildOutcome> {
    try {
      const admitted = await this.#admit();
      if (!admitted.ok) return admitted.outcome;
      const prepared = await this.#prepare();
      if (!prepared.ok) return prepared.outcome;
      return await this.#startAndFollow(prepared.value);
    } catch (err) {
      return this.#failed(err);
    } finally {
      if (this.#holdsSlot !== undefined) await release(this.run, this.#holdsSlot, this.child.id);
    }
  }

  /** Starts the child (or attaches to this invocation's own from an earlier attempt) and follows it to its end. */
  async #startAndFollow(input: RunInput): Promise<ChildOutcome> {
    const { child } = this;
    const { returnShape } = this.call;
    let handle;
    try {
      handle = await startChild<(input: RunInput) => Promise<RunResult>>('agentRun', this.#startOptions(input));
    } catch (err) {
      const notStarted = await explainStartFailure(child.entry, err);
      if (notStarted.kind === 'refused') return this.#refused(notStarted.reason);
      child.started();
      return this.#ended(await joinAttached(child.id, returnShape));
    }
    child.started();
    let result;
    try {
      result = await handle.result();
    } catch (err) {
      return this.#ended(endOfFailure(err));
    }
    return this.#ended(endOfResult(result, returnShape));
  }

  /**
   * The parent itself is being cancelled (or hit its deadline): the child is settled, and the cancellation goes
   * through. Any other error on this brief's path is an error for this brief only; a started child that can no
   * longer be followed is charged its whole reservation (never under-count).
   */
  #failed(err: unknown): ChildOutcome {
    if (isCancellation(err)) {
      // Cancelled while its end hooks ran: it is settled already, and the cancellation still goes through.
      if (this.child.phase !== 'settled') this.#settle({ status: 'cancelled', summary: 'cancelled with its parent' });
      throw err;
    }
    return this.#settle(because('failed', `this brief's delegation failed: ${failureMessage(err)}`));
  }

  /**
   * The child's slot, id and cost are reserved, but it is not started and has no identity yet: the task hooks run,
   * and its parent context is prepared from the snapshot taken at the delegate call. Its input is fixed at the end.
   */
  async #prepare(): Promise<Step<RunInput>> {
    const { plan } = this.child;
    const trail: string[] = [];
    for (const event of TASK_HOOK_EVENTS) {
      if (!hasHooks(event, this.#hooks)) continue;
      const decided = await runHooks(event, { ...this.#hookInput, task: this.#task }, this.#hooks, this.run.treeGrant);
      trail.push(...decided.trail);
      this.child.noteHooks(trail);
      if (decided.decision === 'reject') {
        const reason = `${decided.reason ?? 'rejected'}; the child was not started`;
        return { ok: false, outcome: this.#settle(because('rejected', reason)) };
      }
      this.#task = decided.task;
    }
    let context = this.#copiedBackground();
    if (plan.contextMode === 'summary' && !plan.restore) {
      // The summary is written for the hook-accepted task; its cost is the parent's.
      const generated = await summariseParentBackground(
        this.#task,
        plan.brief.task_name,
        this.run,
        this.call.snapshot.events,
      );
      if (!generated.ok) return { ok: false, outcome: this.#settle(because('rejected', generated.error)) };
      context = generated.context;
    }
    return { ok: true, value: this.#input(context) };
  }

  /**
   * The snapshot was taken at the delegate call and never changes; it waits for no sibling. A follow-up's restored
   * session already holds its parent context, and its interjections continue from its source's mark.
   */
  #copiedBackground(): ParentBackground | undefined {
    const { plan, id } = this.child;
    const { snapshot } = this.call;
    this.run.children.markSnapshot(id, plan.restore ? (plan.snapshotMark ?? snapshot.mark) : snapshot.mark);
    return plan.restore
      ? undefined
      : copyParentBackground(plan.contextMode, plan.contextRendering, snapshot.events, this.run.payloads);
  }

  /** The child's input, with its parent context; its limits are given now: a later overrun can no longer shrink them. */
  #input(context: ParentBackground | undefined): RunInput {
    const { run, child } = this;
    child.ready(context ? context.content.length : null);
    const { plan, entry } = child;
    const parent = {
      sessionId: run.workflowId,
      rootId: run.rootId,
      depth: run.depth,
      tenant: run.tenant,
      composition: run.composition,
      invocationId: entry.invocationId,
    };
    const brief = { ...plan.brief, message: this.#task };
    return childInput(plan, brief, this.call.number, this.call.returnShape, parent, context);
  }

  /** Under a tenant cap, the child starts only with a slot. */
  async #admit(): Promise<Step<void>> {
    const admission = this.run.delegationSettings.admission;
    if (!admission) return { ok: true, value: undefined };
    const { deadline } = this.child.plan.limits;
    const admitted = await admit(this.run, this.child, admission, deadline ? Date.parse(deadline) : null);
    if (!admitted.ok) return { ok: false, outcome: this.#settle(because('failed', admitted.reason)) };
    this.#holdsSlot = admission.tenant;
    return { ok: true, value: undefined };
  }

  /** The child could not be started: this brief fails, its siblings go on. */
  #refused(reason: string): ChildOutcome {
    countRefusal(this.run, 'start_failed');
    return this.#settle(because('failed', reason));
  }

  #startOptions(input: RunInput): ChildWorkflowOptions & { args: [RunInput] } {
    const { run } = this;
    const { plan, id } = this.child;
    const { brief } = plan;
    return {
      // Behind its tree's own turns, in its tree's share of the queues.
      priority: childPriority(run.priority),
      workflowId: id,
      taskQueue: run.delegationSettings.childTaskQueue,
      // The child acts with its tree's grant: Temporal records it as this run's child, which is what a worker checks.
      args: [{ ...input, grant: run.treeGrant }],
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
      // A closed child keeps its id: the same invocation after a reset attaches to it instead of running it twice.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      // Its parent is Temporal's own link (and in its id): the summary says what it was asked.
      // Temporal UI lists a background child as such (replay does not compare summaries).
      staticSummary: `${brief.task_name}${brief.wait === false ? ' (background)' : ''}: ${bounded(this.#task.replace(/\s+/g, ' '), 100)}`,
      // The tree the child belongs to, searchable from its start, with all of its attributes: the child writes none
      // when it starts running (no visibility update of its own).
      typedSearchAttributes: treeAttributes({
        rootId: run.rootId,
        depth: run.depth + 1,
        tenant: run.tenant,
        preset: plan.preset,
        child: { parentId: run.workflowId, taskName: brief.task_name, contextMode: String(plan.contextMode) },
      }),
    };
  }

  /** The child ended: what it spent, and its outcome (settled), once the end hooks (if any listen) were told. */
  async #ended(ended: ChildEnd): Promise<ChildOutcome> {
    const { run, child } = this;
    this.#reportedSpend = ended.spent;
    child.handedBack(run.artifacts.handedBack(child.id, ended.artifacts));
    const { status, output, summary, error } = ended;
    // The child's call counts, and a mark when it answered without a tool.
    const evidence = ended.spent ? callEvidence(ended.status, ended.spent) : undefined;
    const outcome = this.#settle({ status, output, summary, ...(error !== undefined && { error }), evidence });
    if (hasHooks('subagent.end', this.#hooks)) await this.#tellEnd(outcome, ended.output);
    return outcome;
  }

  /** Tells the end hooks how the child ended; their failure changes nothing, a cancelled parent still stops. */
  async #tellEnd(result: ChildOutcome, ended: unknown): Promise<void> {
    const output = typeof ended === 'string' ? ended : null;
    const input = { ...this.#hookInput, task: this.#task, status: result.status, output };
    try {
      await runHooks('subagent.end', input, this.#hooks, this.run.treeGrant);
    } catch (err) {
      if (isCancellation(err)) throw err;
    }
  }

  /**
   * Settles the child: its reservation is released and what it spent debited (nothing when it never started; its
   * whole reservation when it started and did not say: never under-count). Returns its outcome as its parent's model
   * reads it.
   */
  #settle({ status, summary, output = null, error, evidence }: Ending): ChildOutcome {
    const { run, child } = this;
    const spent = child.entry.started ? this.#reportedSpend : ZERO_SPEND;
    const { charge, overrun } = run.account.settleChild(child.reservation, spent);
    child.settle({ status, charge, overrun, summary });
    countDelegationSettled(run, status, overrun);
    run.sends.track(`report approvals after ${child.id} ended`, forgetChildApprovals(run, child.id));
    const { actual, artifacts } = child.entry;
    return {
      task_name: child.taskName,
      workflow_id: child.id,
      status,
      output,
      summary: bounded(summary, MAX_CHILD_SUMMARY_CHARS),
      ...(error !== undefined && { error }),
      usage: actual && { tokens: actual.tokens, cost_usd: microToUsd(actual.costMicroUsd) },
      artifacts: run.artifacts.describe(artifacts),
      ...evidence,
    };
  }
}

const ZERO_SPEND: Spend = { inputTokens: 0, outputTokens: 0, costMicroUsd: 0 };
