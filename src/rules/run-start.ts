/**
 * How a run starts, in pure code: a child planned from its brief (tools, scopes, limits, what it sees of its parent),
 * the `RunInput` it is started with (the parent context in its origin), and the events every session opens with (that
 * context recorded before the task). No Temporal, no I/O: the workflow does the effects.
 */
import type { ArtifactRef } from '../contract/artifacts.js';
import type { ContextRendering } from '../contract/preset.js';
import type { ChildOrigin, RunInput, Usage } from '../contract/run.js';
import type { ResolveRunResult } from '../contract/composition.js';
import type { SessionEvent } from '../contract/session.js';
import { renderChildTask, type ToolGrant } from './children.js';
import type { Brief, ContextMode } from '../contract/delegation.js';
import type { DelegationSettings } from '../contract/delegation.js';
import type { ResolvedLimits } from '../contract/run.js';
import { SESSION_VERSION } from '../contract/dialogue.js';
import { closeUnansweredToolCalls } from './restoration.js';
import {
  asLimits,
  childReserve,
  type ChildLimits,
  DEFAULT_CHILD_SYNTHESIS_RESERVE,
  deriveChildLimits,
  reservationFor,
  reserveUncovered,
  type Amount,
} from './budget.js';
import { narrowGrant } from './children.js';
import { inheritComposition, presetForChild, type PresetChoice } from './child-composition.js';
import { splitTurns } from './context.js';

/** One child as planned before anything is reserved or started. */
export interface ChildPlan {
  readonly brief: Brief;
  readonly preset: string;
  /**
   * The preset the child runs with, `selected` when its brief named a role: its input carries the definition, or
   * only its revision when the definition is large (the child then looks it up, see `presetForChild`).
   */
  readonly composition: PresetChoice;
  /** A follow-up: the finished child whose session this one goes on from. */
  readonly restore?: { from: string; events: SessionEvent[] };
  readonly contextRendering: ContextRendering;
  /** What the child sees of the parent; a follow-up keeps its source's (the choice made at dispatch sticks). */
  readonly contextMode: ContextMode;
  /** A follow-up: its source's snapshot mark, so an interjection continues from what the source saw. */
  readonly snapshotMark?: number | undefined;
  readonly toolGrant: ToolGrant;
  /** Its limits, cost in micro-USD; its input carries them in USD. */
  readonly limits: ChildLimits;
  readonly reservation: Amount;
  /** The artifacts its brief gives it to read (every one readable by the parent). */
  readonly artifacts?: ArtifactRef[];
}

/**
 * The plan re-made with `cut` taken off its reservation (the parent's overrun, before the child started): its token
 * and cost limits shrink with it. The plan given is left as it was.
 */
export function shrunkPlan(plan: ChildPlan, cut: Amount): ChildPlan {
  const { maxTokens, maxCostMicroUsd } = plan.limits;
  const limits = {
    ...plan.limits,
    ...(maxTokens !== undefined && { maxTokens: maxTokens - cut.tokens }),
    ...(maxCostMicroUsd !== undefined && { maxCostMicroUsd: maxCostMicroUsd - cut.costMicroUsd }),
  };
  return { ...plan, reservation: reservationFor(limits), limits };
}

/** What a child's input needs of its parent. */
export interface ParentOfChild {
  sessionId: string;
  rootId: string;
  depth: number;
  tenant: string | undefined;
  /** The parent's composition: a child without a role runs with its model exactly and inherits the rest. */
  composition: ResolveRunResult;
  /** The tool call spawning the child, recorded in its origin (not in a memo written twice). */
  invocationId?: string;
}

/** The child's `RunInput`: its task, preset, model, derived limits, narrowed scopes and origin. */
export function childInput(
  plan: ChildPlan,
  brief: Brief,
  invocation: number,
  returnShape: Record<string, unknown> | undefined,
  parent: ParentOfChild,
  parentBackground: NonNullable<ChildOrigin['parentBackground']> | undefined,
): RunInput {
  // No role: the child runs with the parent's exact model; a role brings its preset's model unless the brief names one.
  const model = brief.model ?? (brief.role ? undefined : parent.composition.model);
  const composition = inheritComposition(parent.composition, plan, brief, parent.depth + 1);
  return {
    task: renderChildTask(brief, returnShape),
    preset: plan.preset,
    ...(model && { model }),
    ...(brief.effort && { effort: brief.effort }),
    limits: asLimits(plan.limits),
    scopes: plan.toolGrant.scopes,
    ...(parent.tenant && { tenant: parent.tenant }),
    origin: {
      parentId: parent.sessionId,
      rootId: parent.rootId,
      depth: parent.depth + 1,
      taskName: brief.task_name,
      invocation,
      ...(parent.invocationId && { invocationId: parent.invocationId }),
      allowedTools: plan.toolGrant.tools,
      contextMode: plan.contextMode,
      preset: presetForChild(plan.composition),
      ...(composition && { composition }),
      ...(parentBackground && { parentBackground }),
      ...(plan.artifacts && plan.artifacts.length > 0 && { artifacts: plan.artifacts }),
      // The child's calls wait for approval wherever its parent's would: whatever its preset, it needs no fewer.
      ...(parent.composition.approvals && { approvals: parent.composition.approvals }),
    },
    ...(plan.restore && { restore: { kind: 'followup' as const, events: plan.restore.events } }),
  };
}

/** What planning a child needs of its parent, as the parent's state holds it at the `delegate` call. */
export interface PlanningParent {
  readonly composition: ResolveRunResult;
  readonly delegationSettings: DelegationSettings;
  readonly depth: number;
  readonly limits: ResolvedLimits;
  readonly usage: Usage;
  readonly reserved: Amount;
  /** What the parent keeps for its own final answer: never lent to a child. */
  readonly synthesisKeep: Amount;
  /** The artifacts a brief names, each readable by the parent, or why not. */
  readonly artifacts: {
    forBrief(ids: readonly string[] | undefined): { ok: true; refs: ArtifactRef[] } | { ok: false; error: string };
  };
}

/** One child's tools, scopes and limits from its brief and composition. */
export function planChild(
  brief: Brief,
  childComposition: ChildPlan['composition'],
  run: PlanningParent,
  nowMs: number,
): { ok: true; plan: ChildPlan } | { ok: false; error: string } {
  const { composition, delegationSettings: settings } = run;
  const narrowed = narrowGrant({
    parentTools: composition.tools,
    parentScopes: composition.scopes,
    allowedTools: brief.allowed_tools,
    presetTools: childComposition.definition.tools,
    childDepth: run.depth + 1,
    settings,
  });
  if (!narrowed.ok) return { ok: false, error: `brief "${brief.task_name}": ${narrowed.error}` };
  const given = run.artifacts.forBrief(brief.artifacts);
  if (!given.ok) return { ok: false, error: `brief "${brief.task_name}": ${given.error}` };
  const derived = deriveChildLimits({
    parentLimits: run.limits,
    parentUsage: run.usage,
    reserved: run.reserved,
    nowMs,
    requested: brief.limits,
    defaults: settings.childDefaults,
    keep: run.synthesisKeep,
  });
  if (derived.maxTurns === 0 || derived.maxTokens === 0 || derived.maxCostMicroUsd === 0) {
    return {
      ok: false,
      error: `brief "${brief.task_name}": nothing is left of this run's budget for a child (limits ${JSON.stringify(asLimits(derived))})`,
    };
  }
  // The child's own reserve, inside its limits: a child too small for one is refused rather than started toolless.
  const synthesisReserve = childReserve(derived, settings.childSynthesisReserve ?? DEFAULT_CHILD_SYNTHESIS_RESERVE);
  const uncovered = reserveUncovered(derived, synthesisReserve);
  if (uncovered) return { ok: false, error: `brief "${brief.task_name}": ${uncovered}` };
  const limits = { ...derived, synthesisReserve };
  return {
    ok: true,
    plan: {
      brief,
      preset: childComposition.definition.id,
      composition: childComposition,
      contextRendering: childComposition.definition.contextRendering,
      // A brief without `context` gets the delegating run's default: its preset's, else the config's, else none.
      contextMode: brief.context ?? composition.presetDefinition.defaultContext ?? settings.defaultContext ?? 'none',
      toolGrant: narrowed.toolGrant,
      limits,
      reservation: reservationFor(limits),
      artifacts: given.refs,
    },
  };
}

/**
 * The part of a snapshot a mode selects. `all`: everything; N: the last N turns, preceded by the compaction
 * summaries and inherited context they follow; `none` and `summary` copy nothing.
 */
export function selectContext(snapshot: readonly SessionEvent[], mode: ContextMode): SessionEvent[] {
  if (mode === 'none' || mode === 'summary') return [];
  if (mode === 'all') return [...snapshot];
  const isPrefix = (e: SessionEvent) => e.type === 'compaction/summary' || e.type === 'context/background';
  const turns = splitTurns(snapshot.filter((e) => !isPrefix(e)));
  const chosen = turns.slice(-mode).flat();
  const firstChosen = chosen[0] ? snapshot.indexOf(chosen[0]) : snapshot.length;
  return [...snapshot.slice(0, firstChosen).filter(isPrefix), ...chosen];
}

/** Who the run is, as its session header says. */
export interface Opener {
  sessionId: string;
  depth: number;
  composition: Pick<ResolveRunResult, 'preset' | 'model'>;
}

/**
 * The events a new session opens with: its header, a child's selection and descriptor, seed messages, the parent
 * context a child was given, a restored dialogue, then the task.
 */
export function openingEvents(
  input: Pick<RunInput, 'task' | 'messages' | 'origin' | 'restore'>,
  { sessionId, depth, composition }: Opener,
  at: string,
): SessionEvent[] {
  const { origin } = input;
  const events: SessionEvent[] = [
    {
      type: 'session/header',
      at,
      version: SESSION_VERSION,
      sessionId,
      parentId: origin?.parentId ?? null,
      depth,
      preset: composition.preset,
      model: composition.model,
    },
  ];
  // An independently selected child records its selection before its own descriptor; an implicit one does not.
  if (origin?.preset?.selected) {
    events.push({ type: 'agent-preset/selected', at, presetId: composition.preset, revision: origin.preset.revision });
  }
  if (origin) events.push({ type: 'subagent/descriptor', at, taskName: origin.taskName, parentId: origin.parentId });
  for (const message of input.messages ?? []) {
    events.push(
      message.role === 'user'
        ? { type: 'message/user', at, content: message.content }
        : { type: 'message/assistant', at, content: message.content, toolCalls: [] },
    );
  }
  if (origin?.parentBackground) events.push({ type: 'context/background', at, ...origin.parentBackground });
  // A restored session's dialogue (a fork's is marked inherited) goes on under this run's own header.
  for (const event of closeUnansweredToolCalls(input.restore?.events ?? [])) {
    if (event.type !== 'session/header' && event.type !== 'run/ended') events.push(event);
  }
  events.push({ type: 'message/user', at, content: input.task });
  return events;
}
