/**
 * The `delegate` tool inside the workflow: check the invocation, resolve roles, plan the children,
 * reserve cost all or nothing, book them in the ledger, run them and join them into one tool result. Deterministic
 * code only.
 */
import type { DeputyActivities } from '../../activities/index.js';
import { CancellationScope, condition, proxyActivities } from '@temporalio/workflow';
import type { ResolvePresetsResult, RunToolResult } from '../../src/contract/activities.js';
import type { DelegateArgs } from '../../src/contract/delegation.js';
import { checkCaps, childWorkflowId, renderChildResults, type ChildOutcome } from '../../src/rules/children.js';
import type { Brief } from '../../src/rules/delegation.js';
import { parseInvocation } from '../../src/rules/contract-checks.js';
import type { LedgerEntry } from '../../src/contract/run.js';
import type { ToolCall } from '../../src/contract/session.js';
import { joinAll, LOOKUP_OPTIONS } from '../activity-options.js';
import { takeSnapshot } from '../../src/rules/context.js';
import type { AgentRunState } from '../run-state.js';
import { planChild, toolError, type ChildPlan, type Snapshot } from './plan.js';
import { runChild } from './child.js';
import { adoptInBackground, dispatchInBackground, renderDispatched } from './in-background.js';
import { questionWaiting } from './questions.js';
import { countDelegationsStarted, countRefusal, type RefusalReason } from '../metrics.js';

const { resolvePresets } = proxyActivities<DeputyActivities>(LOOKUP_OPTIONS);

/** A refusal: the tool error the model sees, counted by its reason. */
function refused(run: AgentRunState, reason: RefusalReason, error: string): RunToolResult {
  countRefusal(run, reason);
  return toolError(error);
}

/**
 * Executes one `delegate` tool call; every refusal is a tool error the model sees, with nothing spawned. The presets
 * are looked up only when a brief needs one, and the call is a `then` chain, not an `async` frame (fewer promises:
 * see workflows/index.ts).
 */
export function runDelegation(call: ToolCall, run: AgentRunState): Promise<RunToolResult> {
  // The evidence is frozen at the call, before any await: a sibling result that lands later never gets in.
  const snapshot: Snapshot = { events: takeSnapshot(run.events), mark: run.appended };
  const check = parseInvocation(call.arguments);
  if (!check.ok) return Promise.resolve(refused(run, 'invalid_arguments', check.error));
  const invocation = check.args;

  // An explicit role resolves the preset registered now. No role joins the parent's exact composition.
  const roles = invocation.briefs.flatMap((brief) => (brief.role === undefined ? [] : [brief.role]));
  if (roles.length === 0) return Promise.resolve(planAndRun(call, invocation, [], run, snapshot));
  return resolvePresets({ ids: [...new Set(roles)] }).then(({ presets }) =>
    planAndRun(call, invocation, presets, run, snapshot),
  );
}

/** Plans a child for each brief of a checked invocation, with the presets looked up for it, and runs them. */
function planAndRun(
  call: ToolCall,
  invocation: DelegateArgs,
  presets: ResolvedPreset[],
  run: AgentRunState,
  snapshot: Snapshot,
): RunToolResult | Promise<RunToolResult> {
  const { delegationSettings: settings, composition } = run;
  const { briefs, return_shape: returnShape } = invocation;
  const inherited = composition.presetDefinition;
  const unknown = presets.filter((preset) => !preset.ok);
  if (unknown.length > 0) {
    return refused(
      run,
      'unknown_preset',
      `${unknown.map((p) => (p.ok ? '' : p.error)).join('; ')}; nothing was spawned`,
    );
  }
  const compositionOf = (brief: Brief): ChildPlan['composition'] => {
    if (brief.role === undefined) {
      return { definition: inherited, revision: composition.presetRevision, selected: false };
    }
    const found = presets.find((p) => p.id === brief.role);
    if (!found?.ok) throw new Error(`preset of brief "${brief.task_name}" was not resolved`); // cannot happen: checked above
    return { definition: found.definition, revision: found.revision, selected: true };
  };

  // From here to the reservation there is no await: the caps and names checked hold when the children are booked.
  const capError = checkCaps(
    invocation,
    settings,
    run.ledger.map((entry) => entry.taskName),
    run.ledger.length,
  );
  if (capError) return refused(run, 'caps', capError);
  const plans: ChildPlan[] = [];
  for (const brief of briefs) {
    const plan = planChild(brief, compositionOf(brief), run);
    if (!plan.ok) return refused(run, 'plan', `${plan.error}; nothing was spawned`);
    plans.push(plan.plan);
  }
  return bookAndRun(call, plans, returnShape, run, snapshot);
}

type ResolvedPreset = ResolvePresetsResult['presets'][number];

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

/**
 * Reserves for every plan all or nothing, books them in the ledger, runs them and joins them; a `then` chain, not an
 * `async` frame (fewer promises: see workflows/index.ts).
 */
export function bookAndRun(
  call: ToolCall,
  plans: ChildPlan[],
  returnShape: Record<string, unknown> | undefined,
  run: AgentRunState,
  snapshot: Snapshot,
): Promise<RunToolResult> {
  // Checked again here, with no await before the booking: a follow-up and a delegate of one turn both awaited
  // look-ups since their first check.
  if (run.ledger.length + plans.length > run.delegationSettings.maxChildrenPerRun) {
    return Promise.resolve(
      refused(
        run,
        'max_children',
        `this run has started ${run.ledger.length} of its ${run.delegationSettings.maxChildrenPerRun} children; ${plans.length} more do not fit; nothing was spawned`,
      ),
    );
  }
  const reservation = run.reserveChildren(plans.map((plan) => plan.reservation));
  if (!reservation.ok) return Promise.resolve(refused(run, 'budget', `${reservation.error}; nothing was spawned`));
  countDelegationsStarted(run, plans.length);

  const invocation = new Set(run.ledger.map((entry) => entry.invocation)).size + 1;
  const booked = plans.map((plan) => ({ plan, entry: book(run, call, plan, invocation, returnShape) }));
  const start = ({ plan, entry }: Booked) => runChild(plan, entry, invocation, returnShape, run, snapshot);

  // A brief with `wait: false` runs in the background; the parent goes on and hears of its end later.
  const dispatched: LedgerEntry[] = [];
  for (const child of booked) {
    if (child.plan.brief.wait !== false) continue;
    dispatchInBackground(run, child.entry, () => start(child));
    dispatched.push(child.entry);
  }
  const toWait = booked.filter(({ plan }) => plan.brief.wait !== false);
  if (toWait.length === 0) return Promise.resolve({ content: renderDispatched(dispatched), isError: false });

  run.setStatus('waiting_for_children');
  // The waited children share a scope apart from the run's, so those still live when a question ends the wait go on
  // in the background, where the run's end cancels them all at once (one scope, fewer promises: see
  // workflows/index.ts). The scope runs its function at once, so every child has started its life when it returns.
  const scope = new CancellationScope();
  const waited: Waited[] = [];
  const allEnded = () => waited.every((child) => child.outcome !== undefined || child.failure !== undefined);
  const ids = toWait.map(({ entry }) => entry.childWorkflowId);
  // Another invocation of the same turn may still have live children (background ones do not hold the parent).
  const waitEnded = () => run.setStatusWithCost(run.liveStatus());
  // A question from a child this call waits for ends the wait: the model must be able to answer it. Cancelled, the
  // wait leaves the answer to a join of every child's life, which settles only once each has stopped.
  return scope
    .run(() => {
      for (const child of toWait) waited.push(followed({ ...child, scope, life: start(child) }));
      return condition(() => allEnded() || questionWaiting(run, ids)).then(
        () => (allEnded() ? joined(waited) : undefined),
        () => joinAll(waited.map(({ life }) => life)),
      );
    })
    .then(
      (outcomes) => {
        try {
          // The waited children still live go on in the background.
          if (!outcomes) {
            for (const child of waited) {
              if (child.outcome === undefined) adoptInBackground(run, child.entry, child.scope, child.life);
            }
          }
        } finally {
          waitEnded();
        }
        return answer(waited, outcomes, dispatched, run);
      },
      (err: unknown) => {
        waitEnded();
        throw err;
      },
    );
}

/** The call's result: the children that ended, those a question left running, those dispatched to the background. */
function answer(
  waited: readonly Waited[],
  outcomes: ChildOutcome[] | undefined,
  dispatched: readonly LedgerEntry[],
  run: AgentRunState,
): RunToolResult {
  const done = outcomes ?? waited.flatMap(({ outcome }) => (outcome ? [outcome] : []));
  const stillLive = waited.filter(({ outcome }) => !outcome).map(({ entry }) => entry);
  const parts = [
    ...(done.length > 0 ? [renderChildResults(done)] : []),
    ...(outcomes ? [] : [renderAsked(stillLive, run)]),
    ...(dispatched.length > 0 ? [renderDispatched(dispatched)] : []),
  ];
  return { content: parts.join('\n\n'), isError: done.length > 0 && done.every((o) => o.status !== 'completed') };
}

/** A child booked by this invocation: its plan and its ledger entry. */
interface Booked {
  plan: ChildPlan;
  entry: LedgerEntry;
}

/** A child this call waits for: its scope, its life, and its outcome once it ended. */
interface Waited extends Booked {
  scope: CancellationScope;
  life: Promise<ChildOutcome>;
  /** How its life ended, once it has: its outcome, or the failure that ended it. */
  outcome?: ChildOutcome;
  failure?: { reason: unknown };
}

/** The child, noting how its life ends as it ends. */
function followed(child: Waited): Waited {
  child.life.then(
    (outcome) => {
      child.outcome = outcome;
    },
    (reason: unknown) => {
      child.failure = { reason };
    },
  );
  return child;
}

/** What every child ended with, as a join of their lives gives it: the first failure, in order, if any. */
function joined(waited: readonly Waited[]): ChildOutcome[] {
  const failed = waited.find((child) => child.failure);
  if (failed) throw failed.failure!.reason;
  return waited.map(({ outcome }) => outcome!);
}

/** The child's ledger entry, booked with its reservation; its limits may still shrink while it is prepared. */
function book(
  run: AgentRunState,
  call: ToolCall,
  plan: ChildPlan,
  invocation: number,
  returnShape: Record<string, unknown> | undefined,
): LedgerEntry {
  const entry: LedgerEntry = {
    invocation,
    invocationId: call.id,
    childWorkflowId: childWorkflowId(run.sessionId, plan.brief.task_name, invocation),
    taskName: plan.brief.task_name,
    preset: plan.preset,
    status: 'reserved',
    reserved: plan.reservation,
    actual: null,
    summary: null,
    artifacts: [],
    preparation: { contextMode: plan.contextMode, backgroundChars: null, hookOutcome: null },
    ...(plan.restore && { followupOf: plan.restore.from }),
    ...narrowingOf(plan.brief, returnShape),
  };
  run.book(entry, plan);
  return entry;
}

/** What the call answers for the children it stopped waiting for because one asked a question. */
function renderAsked(live: readonly LedgerEntry[], run: AgentRunState): string {
  const asking = live.filter((e) => questionWaiting(run, [e.childWorkflowId])).map((e) => e.taskName);
  const list = live.map((e) => `${e.taskName} (child run ${e.childWorkflowId})`).join(', ');
  return `${asking.join(', ')} asked you a question, which follows this result: answer it with answer_child (or ask whoever can). Still running, now in the background: ${list}. Each result arrives as a message when its child ends; call wait to join them.`;
}
