/**
 * The `delegate` tool inside the workflow: a `Delegation` checks the call, resolves its roles, plans its children,
 * reserves their cost all or nothing, books them in the ledger, runs them and joins them into one tool result.
 * Deterministic code only.
 */
import type { DeputyActivities } from '../../activities/index.js';
import { CancellationScope, condition, proxyActivities } from '@temporalio/workflow';
import type { ResolvePresetsResult, RunToolResult } from '../../src/contract/activities.js';
import { checkCaps, childWorkflowId, renderChildResults, type ChildOutcome } from '../../src/rules/children.js';
import type { Brief } from '../../src/contract/delegation.js';
import { parseInvocation } from '../../src/contract/checks/contract-checks.js';
import type { LedgerEntry } from '../../src/contract/run.js';
import type { ToolCall } from '../../src/contract/session.js';
import { joinAll, LOOKUP_OPTIONS } from '../activity-options.js';
import { takeSnapshot } from '../../src/rules/context.js';
import type { AgentRunState } from '../run-state.js';
import { toolError, type DelegateCall, type DelegatedChild, type Snapshot } from './plan.js';
import { planChild, type ChildPlan } from '../../src/rules/run-start.js';
import { ChildLife } from './child.js';
import { detach, renderDetached } from './detached.js';
import { questionWaiting } from './questions.js';
import { countDelegationsStarted, countRefusal, type RefusalReason } from '../metrics.js';
import { awaitApproval } from '../approvals.js';
import { whyDelegationApproval } from '../../src/rules/approvals.js';
import { microToUsd } from '../../src/rules/usage.js';

const { resolvePresets } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

type ResolvedPreset = ResolvePresetsResult['presets'][number];

/** Executes one `delegate` tool call; every refusal is a tool error the model sees, with nothing spawned. */
export function runDelegation(call: ToolCall, run: AgentRunState): Promise<RunToolResult> {
  return new Delegation(run, call).delegate();
}

/**
 * One `delegate` call (or a follow-up of a finished child): its number, return shape and snapshot, and per child its
 * plan, ledger entry, scope and life.
 */
export class Delegation implements DelegateCall {
  /**
   * Given when its children are booked, with no await before it: the count of calls that booked children before
   * this one, plus one (a call refused before booking takes no number). Until then 0.
   */
  number = 0;
  /** The call's `return_shape`, set with its number: a follow-up's comes from the child it follows. */
  returnShape: Record<string, unknown> | undefined;
  readonly snapshot: Snapshot;
  readonly children: DelegatedChild[] = [];
  /** A decision let this call go past the approval threshold. */
  #approved = false;

  constructor(
    readonly run: AgentRunState,
    readonly call: ToolCall,
    /** The evidence is frozen at the call, before any await: a sibling result that lands later never gets in. */
    snapshot: Snapshot = { events: takeSnapshot(run.events), mark: run.appended },
  ) {
    this.snapshot = snapshot;
  }

  /** The model's call: checked, its roles resolved (an explicit role is the preset registered now), planned, run. */
  async delegate(): Promise<RunToolResult> {
    const check = parseInvocation(this.call.arguments);
    if (!check.ok) return this.#refused('invalid_arguments', check.error);
    const roles = check.args.briefs.flatMap((brief) => (brief.role === undefined ? [] : [brief.role]));
    const presets = roles.length === 0 ? [] : (await resolvePresets({ ids: [...new Set(roles)] })).presets;
    const unknown = presets.filter((preset) => !preset.ok);
    if (unknown.length > 0) {
      const errors = unknown.map((p) => (p.ok ? '' : p.error));
      return this.#refused('unknown_preset', `${errors.join('; ')}; nothing was spawned`);
    }
    // From here to the reservation there is no await: the caps and names checked hold when the children are booked.
    const settings = this.run.delegationSettings;
    const ledger = this.run.ledger;
    const capError = checkCaps(
      check.args,
      settings,
      ledger.map((entry) => entry.taskName),
      ledger.length,
    );
    if (capError) return this.#refused('caps', capError);
    const plans: ChildPlan[] = [];
    for (const brief of check.args.briefs) {
      const plan = planChild(brief, this.#compositionOf(brief, presets), this.run, Date.now());
      if (!plan.ok) return this.#refused('plan', `${plan.error}; nothing was spawned`);
      plans.push(plan.plan);
    }
    // Past the threshold nothing is reserved before a decision; once approved, the call is checked and planned again
    // (its caps and budget may have moved while it waited).
    // The threshold is on what this model answer's delegations reserve together, this one included.
    const reserving = microToUsd(plans.reduce((sum, plan) => sum + plan.reservation.costMicroUsd, 0));
    const earlier = microToUsd(this.run.reservedInAnswer);
    const why = this.#approved ? undefined : whyDelegationApproval(this.run.composition.approvals, reserving, earlier);
    if (why) {
      const gate = await awaitApproval(this.run, this.call, why);
      if (!gate.ok)
        return this.#refused('not_approved', `${gate.result.content.replace(/\.$/, '')}; nothing was spawned`);
      this.#approved = true;
      return this.delegate();
    }
    return this.launch(plans, check.args.return_shape);
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

  /**
   * Reserves for every plan all or nothing, books them in the ledger, dispatches the detached ones, and waits for
   * the others (until they end, or one asks a question).
   */
  async launch(plans: ChildPlan[], returnShape: Record<string, unknown> | undefined): Promise<RunToolResult> {
    const { run } = this;
    // Checked again here, with no await before the booking: a follow-up and a delegate of one turn both awaited
    // look-ups since their first check.
    const max = run.delegationSettings.maxChildrenPerRun;
    if (run.ledger.length + plans.length > max) {
      const started = `this run has started ${run.ledger.length} of its ${max} children`;
      return this.#refused('max_children', `${started}; ${plans.length} more do not fit; nothing was spawned`);
    }
    const reservation = run.reserveChildren(plans.map((plan) => plan.reservation));
    if (!reservation.ok) return this.#refused('budget', `${reservation.error}; nothing was spawned`);
    run.reservedInAnswer += plans.reduce((sum, plan) => sum + plan.reservation.costMicroUsd, 0);
    countDelegationsStarted(run, plans.length);
    this.returnShape = returnShape;
    this.number = new Set(run.ledger.map((entry) => entry.invocation)).size + 1;
    for (const plan of plans) this.#book(plan);

    // A brief with `wait: false` runs detached; the parent goes on and hears of its end later.
    const detached = this.children.filter((child) => child.plan.brief.wait === false);
    for (const child of detached) {
      const scope = new CancellationScope();
      detach(
        run,
        child.entry,
        scope,
        scope.run(() => this.#live(child)),
      );
    }
    const waited = this.children.filter((child) => child.plan.brief.wait !== false);
    const dispatched = detached.map((child) => child.entry);
    if (waited.length === 0) return { content: renderDetached(dispatched), isError: false };

    run.setStatus('waiting_for_children');
    try {
      const outcomes = await this.#follow(waited);
      // A question ended the wait: the waited children still live go on detached.
      if (!outcomes) {
        for (const child of waited) {
          if (child.outcome === undefined) detach(run, child.entry, child.scope!, child.life!);
        }
      }
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
   * settles only once each has stopped.
   */
  #follow(waited: DelegatedChild[]): Promise<ChildOutcome[] | undefined> {
    const scope = new CancellationScope();
    const allEnded = () => waited.every((child) => child.outcome !== undefined || child.failure !== undefined);
    const ids = waited.map(({ entry }) => entry.childWorkflowId);
    return scope.run(async () => {
      for (const child of waited) {
        child.scope = scope;
        child.life = this.#live(child);
        void noteEnd(child, child.life);
      }
      try {
        await condition(() => allEnded() || questionWaiting(this.run, ids));
      } catch {
        return joinAll(waited.map((child) => child.life!));
      }
      return allEnded() ? joined(waited) : undefined;
    });
  }

  #live(child: DelegatedChild): Promise<ChildOutcome> {
    return new ChildLife(this.run, this, child).live();
  }

  /** The child's ledger entry, booked with its reservation; its limits may still shrink while it is prepared. */
  #book(plan: ChildPlan): void {
    const { run, call } = this;
    const entry: LedgerEntry = {
      invocation: this.number,
      invocationId: call.id,
      childWorkflowId: childWorkflowId(run.sessionId, plan.brief.task_name, this.number),
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
    const child: DelegatedChild = { plan, entry };
    this.children.push(child);
    run.book(entry, child);
  }

  /** The call's result: the children that ended, those a question left running, those dispatched detached. */
  #answer(
    waited: readonly DelegatedChild[],
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

/** Notes how a child's life ended, as it ends. */
async function noteEnd(child: DelegatedChild, life: Promise<ChildOutcome>): Promise<void> {
  try {
    child.outcome = await life;
  } catch (reason) {
    child.failure = { reason };
  }
}

/** What every child ended with, as a join of their lives gives it: the first failure, in order, if any. */
function joined(waited: readonly DelegatedChild[]): ChildOutcome[] {
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
function renderAsked(live: readonly LedgerEntry[], run: AgentRunState): string {
  const asking = live.filter((e) => questionWaiting(run, [e.childWorkflowId])).map((e) => e.taskName);
  const list = live.map((e) => `${e.taskName} (child run ${e.childWorkflowId})`).join(', ');
  return `${asking.join(', ')} asked you a question, which follows this result: answer it with answer_child (or ask whoever can). Still running, now in the background: ${list}. Each result arrives as a message when its child ends; call wait to join them.`;
}
