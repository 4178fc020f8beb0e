/**
 * The `delegate` tool inside the workflow: a `Delegation` checks the call, resolves its roles, plans its children,
 * reserves their cost all or nothing, books them in the ledger, runs them and joins them into one tool result.
 * Deterministic code only.
 */
import type { DeputyActivities } from '../../activities/index.js';
import { CancellationScope, condition, proxyActivities } from '@temporalio/workflow';
import type { ResolvePresetsResult, RunToolResult } from '../../src/contract/activities.js';
import { checkCaps, childWorkflowId, renderChildResults, type ChildOutcome } from '../../src/rules/children.js';
import type { Brief, DelegateArgs } from '../../src/contract/delegation.js';
import { parseInvocation } from '../../src/contract/checks/contract-checks.js';
import type { LedgerEntry } from '../../src/contract/run.js';
import type { ToolCall } from '../../src/contract/session.js';
import { LOOKUP_OPTIONS } from '../activity-options.js';
import { takeSnapshot } from '../../src/rules/context.js';
import type { Run } from '../run/run.js';
import { toolError, type DelegateCall, type Snapshot } from './plan.js';
import { planChild, type ChildPlan } from '../../src/rules/run-start.js';
import { Child } from './child.js';
import { ChildLife } from './life.js';
import { detach, renderDetached } from './detached.js';
import { questionWaiting } from './questions.js';
import { countDelegationsStarted, countRefusal, type RefusalReason } from '../metrics.js';
import { awaitApproval } from '../approvals.js';
import { whyDelegationApproval } from '../../src/rules/approvals.js';
import { microToUsd } from '../../src/rules/usage.js';

const { resolvePresets } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

type ResolvedPreset = ResolvePresetsResult['presets'][number];

/** Executes one `delegate` tool call; every refusal is a tool error the model sees, with nothing spawned. */
export function runDelegation(call: ToolCall, run: Run): Promise<RunToolResult> {
  return new Delegation(run, call).delegate();
}

/** What booking a call's children came to: booked, refused (the tool error), or a decision to ask for first. */
type Booking = { kind: 'booked' } | { kind: 'refused'; result: RunToolResult } | { kind: 'ask'; why: string };

/**
 * One `delegate` call (or a follow-up of a finished child): its number, return shape and snapshot, and its children.
 */
export class Delegation implements DelegateCall {
  /** The count of calls that booked children before this one, plus one, given when its children are booked. */
  number = 0;
  /** The call's `return_shape`, set with its number: a follow-up's comes from the child it follows. */
  returnShape: Record<string, unknown> | undefined;
  readonly snapshot: Snapshot;
  readonly children: Child[] = [];

  constructor(
    readonly run: Run,
    readonly call: ToolCall,
    /** The evidence is frozen at the call, before any await: a sibling result that lands later never gets in. */
    snapshot: Snapshot = { events: takeSnapshot(run.events), mark: run.appended },
  ) {
    this.snapshot = snapshot;
  }

  /**
   * The model's call: checked, its roles resolved (an explicit role is the preset registered now), planned and
   * booked; past the approval threshold, asked for first, then resolved, planned and booked again (its caps and
   * budget may have moved while it waited).
   */
  async delegate(): Promise<RunToolResult> {
    const check = parseInvocation(this.call.arguments);
    if (!check.ok) return this.#refused('invalid_arguments', check.error);
    for (let approved = false; ; approved = true) {
      const resolved = await this.#resolveRoles(check.args.briefs);
      if (!resolved.ok) return resolved.result;
      const booking = this.#book(check.args, resolved.presets, approved);
      if (booking.kind === 'refused') return booking.result;
      if (booking.kind === 'booked') return this.#run();
      const gate = await awaitApproval(this.run, this.call, booking.why);
      if (!gate.ok)
        return this.#refused('not_approved', `${gate.result.content.replace(/\.$/, '')}; nothing was spawned`);
    }
  }

  /** The presets the briefs name by role, as registered now; a role nobody registered refuses the call. */
  async #resolveRoles(
    briefs: readonly Brief[],
  ): Promise<{ ok: true; presets: ResolvedPreset[] } | { ok: false; result: RunToolResult }> {
    const roles = briefs.flatMap((brief) => (brief.role === undefined ? [] : [brief.role]));
    const presets = roles.length === 0 ? [] : (await resolvePresets({ ids: [...new Set(roles)] })).presets;
    const unknown = presets.filter((preset) => !preset.ok);
    if (unknown.length === 0) return { ok: true, presets };
    const errors = unknown.map((p) => (p.ok ? '' : p.error));
    return { ok: false, result: this.#refused('unknown_preset', `${errors.join('; ')}; nothing was spawned`) };
  }

  /**
   * Checks the caps, plans every brief and, unless a decision is needed first, reserves and books them. Synchronous:
   * what it checked still holds when the children are booked.
   */
  #book(args: DelegateArgs, presets: readonly ResolvedPreset[], approved: boolean): Booking {
    const { ledger } = this.run.children;
    const capError = checkCaps(
      args,
      this.run.delegationSettings,
      ledger.map((entry) => entry.taskName),
      ledger.length,
    );
    if (capError) return { kind: 'refused', result: this.#refused('caps', capError) };
    const plans: ChildPlan[] = [];
    for (const brief of args.briefs) {
      const plan = planChild(brief, this.#compositionOf(brief, presets), this.run.planningView(), Date.now());
      if (!plan.ok) return { kind: 'refused', result: this.#refused('plan', `${plan.error}; nothing was spawned`) };
      plans.push(plan.plan);
    }
    // Past the threshold nothing is reserved before a decision. The threshold is on what this model answer's
    // delegations reserve together, this one included.
    const reserving = microToUsd(plans.reduce((sum, plan) => sum + plan.reservation.costMicroUsd, 0));
    const earlier = microToUsd(this.run.reservedInAnswer);
    const why = approved ? undefined : whyDelegationApproval(this.run.composition.approvals, reserving, earlier);
    if (why) return { kind: 'ask', why };
    return this.#reserve(plans, args.return_shape);
  }

  /** A brief's composition: its role's preset, or without one the parent's exact composition. */
  #compositionOf(brief: Brief, presets: readonly ResolvedPreset[]): ChildPlan['composition'] {
    const { composition } = this.run;
    if (brief.role === undefined) {
      return { definition: composition.presetDefinition, revision: composition.presetRevision, selected: false };
    }
    const found = presets.find((p) => p.id === brief.role);
    if (!found?.ok) throw new Error(`preset of brief "${brief.task_name}" was not resolved`); // checked by the caller
    return { definition: found.definition, revision: found.revision, selected: true };
  }

  /** Books `plans` made elsewhere (a follow-up's), then runs them as `delegate` runs its own. */
  async launch(plans: ChildPlan[], returnShape: Record<string, unknown> | undefined): Promise<RunToolResult> {
    const booking = this.#reserve(plans, returnShape);
    return booking.kind === 'booked' ? this.#run() : booking.result;
  }

  /**
   * Reserves for every plan all or nothing (within the run's count of children) and books each child. Synchronous:
   * the count and the budget it checked hold when the children are booked.
   */
  #reserve(plans: ChildPlan[], returnShape: Record<string, unknown> | undefined): Exclude<Booking, { kind: 'ask' }> {
    const { run } = this;
    const max = run.delegationSettings.maxChildrenPerRun;
    if (run.children.count + plans.length > max) {
      const started = `this run has started ${run.children.count} of its ${max} children`;
      const error = `${started}; ${plans.length} more do not fit; nothing was spawned`;
      return { kind: 'refused', result: this.#refused('max_children', error) };
    }
    const reservation = run.account.reserveChildren(plans.map((plan) => plan.reservation));
    if (!reservation.ok) {
      return { kind: 'refused', result: this.#refused('budget', `${reservation.error}; nothing was spawned`) };
    }
    run.reservedInAnswer += plans.reduce((sum, plan) => sum + plan.reservation.costMicroUsd, 0);
    countDelegationsStarted(run, plans.length);
    this.returnShape = returnShape;
    this.number = new Set(run.children.ledger.map((entry) => entry.invocation)).size + 1;
    for (const plan of plans) {
      const child = new Child(plan, this.#entryOf(plan));
      this.children.push(child);
      run.children.book(child);
    }
    return { kind: 'booked' };
  }

  /** Dispatches the detached children and waits for the others (until they end, or one asks a question). */
  async #run(): Promise<RunToolResult> {
    const { run } = this;
    // A brief with `wait: false` runs detached; the parent goes on and hears of its end later.
    const detached = this.children.filter((child) => child.plan.brief.wait === false);
    for (const child of detached) {
      const scope = new CancellationScope();
      child.lives(
        scope,
        scope.run(() => this.#live(child)),
      );
      detach(run, child);
    }
    const waited = this.children.filter((child) => child.plan.brief.wait !== false);
    const dispatched = detached.map((child) => child.entry);
    if (waited.length === 0) return { content: renderDetached(dispatched), isError: false };

    run.setStatus('waiting_for_children');
    try {
      const outcomes = await this.#follow(waited);
      // A question ended the wait: the waited children still live go on detached.
      if (!outcomes) for (const child of waited) if (!child.over) detach(run, child);
      return this.#answer(waited, outcomes, dispatched);
    } finally {
      // Another invocation of the same turn may still have live children (detached ones do not hold the parent).
      run.setStatus(run.liveStatus());
    }
  }

  /**
   * Runs the waited children in one scope apart from the run's, so those still live when a question ends the wait go
   * on detached, where the run's end cancels them. Their outcomes once all ended; `undefined` when a question from one
   * of them ended the wait (the model must be able to answer it). Cancelled, the wait joins every child's life, which
   * ends only once each has stopped.
   */
  #follow(waited: Child[]): Promise<ChildOutcome[] | undefined> {
    const scope = new CancellationScope();
    const allEnded = () => waited.every((child) => child.over);
    const ids = waited.map((child) => child.id);
    return scope.run(async () => {
      for (const child of waited) child.lives(scope, this.#live(child));
      try {
        await condition(() => allEnded() || questionWaiting(this.run, ids));
      } catch {
        await Promise.all(waited.map((child) => child.life));
        return joined(waited);
      }
      return allEnded() ? joined(waited) : undefined;
    });
  }

  /** The child's life, in the scope it is called in; how it ended is the child's to say. Never rejects. */
  async #live(child: Child): Promise<void> {
    try {
      child.end({ outcome: await new ChildLife(this.run, this, child).live() });
    } catch (failure) {
      child.end({ failure });
    }
  }

  /** The child's ledger entry, booked with its reservation. */
  #entryOf(plan: ChildPlan): LedgerEntry {
    return {
      invocation: this.number,
      invocationId: this.call.id,
      childWorkflowId: childWorkflowId(this.run.workflowId, plan.brief.task_name, this.number),
      taskName: plan.brief.task_name,
      preset: plan.preset,
      status: 'reserved',
      reserved: plan.reservation,
      actual: null,
      summary: null,
      artifacts: [],
      preparation: { contextMode: plan.contextMode, backgroundChars: null, hookOutcome: null },
      ...(plan.restore && { followupOf: plan.restore.from }),
      ...narrowingOf(plan.brief, this.returnShape),
    };
  }

  /** The call's result: the children that ended, those a question left running, those dispatched detached. */
  #answer(
    waited: readonly Child[],
    outcomes: ChildOutcome[] | undefined,
    dispatched: readonly LedgerEntry[],
  ): RunToolResult {
    const done = outcomes ?? waited.flatMap(({ outcome }) => (outcome ? [outcome] : []));
    const stillLive = waited.filter(({ outcome }) => !outcome).map(({ entry }) => entry);
    const parts = [
      ...(done.length > 0 ? [renderChildResults(done)] : []),
      ...(outcomes ? [] : [renderAsked(stillLive, this.run)]),
      ...(dispatched.length > 0 ? [renderDetached(dispatched)] : []),
    ];
    return { content: parts.join('\n\n'), isError: done.length > 0 && done.every((o) => o.status !== 'completed') };
  }

  /** A refusal: the tool error the model sees, counted by its reason. */
  #refused(reason: RefusalReason, error: string): RunToolResult {
    countRefusal(this.run, reason);
    return toolError(error);
  }
}

/** What every child ended with, as a join of their lives gives it: the first failure, in order, if any. */
function joined(waited: readonly Child[]): ChildOutcome[] {
  const failed = waited.find((child) => child.failure);
  if (failed) throw failed.failure!.reason;
  return waited.map(({ outcome }) => outcome!);
}

/** What a brief narrowed, for the ledger: a follow-up of its child keeps it. Nothing when it narrowed nothing. */
function narrowingOf(brief: Brief, returnShape: Record<string, unknown> | undefined): Pick<LedgerEntry, 'narrowing'> {
  const narrowing: NonNullable<LedgerEntry['narrowing']> = {
    ...(brief.role !== undefined && { role: brief.role }),
    ...(brief.model !== undefined && { model: brief.model }),
    ...(brief.effort !== undefined && { effort: brief.effort }),
    ...(brief.allowed_tools !== undefined && { allowedTools: brief.allowed_tools }),
    ...(brief.limits !== undefined && { limits: brief.limits }),
    ...(returnShape !== undefined && { returnShape }),
  };
  return Object.keys(narrowing).length > 0 ? { narrowing } : {};
}

/** What the call answers for the children it stopped waiting for because one asked a question. */
function renderAsked(live: readonly LedgerEntry[], run: Run): string {
  const asking = live.filter((e) => questionWaiting(run, [e.childWorkflowId])).map((e) => e.taskName);
  const list = live.map((e) => `${e.taskName} (child run ${e.childWorkflowId})`).join(', ');
  return `${asking.join(', ')} asked you a question, which follows this result: answer it with answer_child (or ask whoever can). Still running, now in the background: ${list}. Each result arrives as a message when its child ends; call wait to join them.`;
}
