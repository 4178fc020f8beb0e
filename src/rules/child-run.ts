/**
 * The pure parts of one child's life: what it is given (its `RunInput`), how its end reads to the parent
 * (the outcome), and how its reservation is settled. No Temporal, no I/O: the workflow does the effects.
 */
import type { ArtifactRef } from '../contract/artifacts.js';
import type { ContextRendering, Preset } from '../contract/preset.js';
import type { ChildOrigin, Limits, ParsedRunInput, RunInput, RunResult, Usage } from '../contract/run.js';
import type { InheritedComposition, ResolveRunResult } from '../contract/composition.js';
import type { RunTool } from '../contract/tools.js';
import { asRunResult } from '../contract/checks/contract-checks.js';
import { DELEGATE_SCOPE } from '../contract/scopes.js';
import { DEFAULT_PAYLOAD_LIMITS } from './payloads.js';
import type { SessionEvent } from '../contract/session.js';
import { overrunOf, release, type Amount, type Budget } from './budget.js';
import {
  bounded,
  DELEGATE_TOOL,
  depthLimit,
  MAX_CHILD_OUTPUT_CHARS,
  renderChildTask,
  STEERING_TOOLS,
  type ChildGrant,
  type ChildOutcome,
} from './children.js';
import type { Brief, ContextMode } from '../contract/delegation.js';
import type { ReturnShapeCheck } from '../contract/checks/contract-checks.js';
import { microToUsd, type Spend } from './usage.js';

/** The parent's context as prepared for a child. */

/** The preset as a child's input carries it. */
export type ChildPreset = NonNullable<ChildOrigin['preset']>;

/** One child as planned before anything is reserved or started. */
export interface ChildPlan {
  readonly brief: Brief;
  readonly preset: string;
  /**
   * The preset the child runs with, `selected` when its brief named a role: its input carries the definition, or
   * only its revision when the definition is large (the child then looks it up, see `presetForChild`).
   */
  readonly composition: { definition: Preset; revision: string; selected: boolean };
  /** A follow-up: the finished child whose session this one goes on from. */
  readonly restore?: { from: string; events: SessionEvent[] };
  readonly contextRendering: ContextRendering;
  /** What the child sees of the parent; a follow-up keeps its source's (the choice made at dispatch sticks). */
  readonly contextMode: ContextMode;
  /** A follow-up: its source's snapshot mark, so an interjection continues from what the source saw. */
  readonly snapshotMark?: number | undefined;
  readonly grant: ChildGrant;
  readonly limits: Limits;
  readonly reservation: Amount;
  /** The artifacts its brief gives it to read (every one readable by the parent). */
  readonly artifacts?: ArtifactRef[];
}

/**
 * The plan re-made with `cut` taken off its reservation (the parent's overrun, before the child started): its token
 * and cost limits shrink with it. The plan given is left as it was.
 */
export function shrunkPlan(plan: ChildPlan, cut: Amount): ChildPlan {
  const reservation = {
    tokens: plan.reservation.tokens - cut.tokens,
    costMicroUsd: plan.reservation.costMicroUsd - cut.costMicroUsd,
  };
  const limits = {
    ...plan.limits,
    ...(plan.limits.maxTokens !== undefined && { maxTokens: reservation.tokens }),
    ...(plan.limits.maxCostUsd !== undefined && { maxCostUsd: microToUsd(reservation.costMicroUsd) }),
  };
  return { ...plan, reservation, limits };
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

/**
 * What an implicit child (no role, the parent's model, not a follow-up) takes from its parent's
 * composition, so it starts without a `resolveRun` look-up: what `resolveComposition` would answer for its input,
 * with the config the parent started under. Its tools are the parent's, in its preset's order, granted and with their
 * scopes held; the steering tools when it may delegate (and only then the delegation settings and hooks).
 */
export function inheritComposition(
  parent: ResolveRunResult,
  plan: Pick<ChildPlan, 'composition' | 'grant' | 'restore' | 'limits'>,
  brief: Pick<Brief, 'role' | 'model' | 'effort'>,
  childDepth: number,
): InheritedComposition | undefined {
  const { definition, selected } = plan.composition;
  const sameModel = brief.model === undefined || brief.model === parent.model;
  if (selected || brief.role !== undefined || !sameModel || plan.restore) return undefined;
  const { tools: granted, scopes } = plan.grant;
  const byName = new Map(parent.tools.map((tool) => [tool.name, tool]));
  const tools = definition.tools
    .map((name) => byName.get(name))
    .filter((tool): tool is RunTool => tool !== undefined && granted.includes(tool.name))
    .filter((tool) => tool.scopes.every((scope) => scopes.includes(scope)))
    // A tool recorded whole (its source can change, an MCP server's) stays whole: the child sees what the parent saw.
    .map((tool): RunTool => (tool.description === undefined ? { name: tool.name, scopes: tool.scopes } : tool));
  const delegation = parent.delegation;
  const mayDelegate =
    delegation !== undefined &&
    delegation.enabled &&
    scopes.includes(DELEGATE_SCOPE) &&
    childDepth < depthLimit(delegation) &&
    granted.includes(DELEGATE_TOOL);
  if (mayDelegate) tools.push(...STEERING_TOOLS.map((name) => ({ name, scopes: [DELEGATE_SCOPE] })));
  // Only what the child reads: the defaults its own limits leave open, tool scopes when it may delegate (it narrows
  // its children's grants with them), the payload budgets when they are not the defaults.
  const defaults = Object.entries(parent.defaultLimits).filter(
    ([key]) => key === 'maxDurationSeconds' || plan.limits[key as keyof Limits] === undefined,
  );
  const effort = brief.effort ?? definition.effort;
  const { payloads } = parent;
  const customPayloads =
    payloads &&
    (payloads.maxTextBytes !== DEFAULT_PAYLOAD_LIMITS.maxTextBytes ||
      payloads.maxInputBytes !== DEFAULT_PAYLOAD_LIMITS.maxInputBytes);
  return {
    ...(effort !== undefined && { effort }),
    tools: mayDelegate ? tools : tools.map((tool) => (tool.description === undefined ? tool.name : tool)),
    price: parent.price,
    defaultLimits: Object.fromEntries(defaults),
    ...(mayDelegate && { delegation, hooks: parent.hooks ?? [] }),
    compaction: parent.compaction,
    ...(customPayloads && { payloads }),
    ...(parent.modelRetry && { modelRetry: parent.modelRetry }),
    ...(parent.tenantLabel !== undefined && { tenantLabel: parent.tenantLabel }),
  };
}

/**
 * Past this many characters a child's preset definition (persona, skills) goes by reference, its revision only: the
 * child's one recorded look-up (a local activity's marker, about 350 bytes besides the definition) then costs less
 * than the two copies Temporal records of every start input (the parent's initiated event, the child's started one).
 */
export const PRESET_INLINE_MAX_CHARS = 1024;

/** The preset a child's input carries: whole, or by its revision when it is large. */
export function presetForChild({ definition, revision, selected }: ChildPlan['composition']): ChildPreset {
  return JSON.stringify(definition).length > PRESET_INLINE_MAX_CHARS
    ? { revision, selected }
    : { definition, revision, selected };
}

/**
 * Whether a child starts from the composition its parent passed down (an implicit one, its preset maybe still to be
 * looked up by reference), not from `resolveRun`.
 */
export function startsFromInput(input: ParsedRunInput): boolean {
  return input.origin?.composition !== undefined && input.origin.preset !== undefined && input.model !== undefined;
}

/** The child's composition from its input, when its parent passed it down (no look-up needed). */
export function compositionFromInput(input: ParsedRunInput): ResolveRunResult | undefined {
  const { origin } = input;
  if (!origin?.composition || !origin.preset?.definition || input.model === undefined) return undefined;
  const { definition, revision } = origin.preset;
  const { effort, tools, ...rest } = origin.composition;
  return {
    ...rest,
    effort: effort ?? null,
    // A child that may not delegate was given names only: it never narrows a grant with their scopes.
    tools: tools.map((tool) => (typeof tool === 'string' ? { name: tool, scopes: [] } : tool)),
    preset: definition.id,
    presetRevision: revision,
    presetDefinition: definition,
    model: input.model,
    scopes: input.scopes ?? [],
  };
}

/** The child's `RunInput`: its task, preset, model, derived limits, narrowed scopes and origin. */
export function childInput(
  plan: ChildPlan,
  brief: Brief,
  invocation: number,
  returnShape: Record<string, unknown> | undefined,
  parent: ParentOfChild,
  parentContext: NonNullable<ChildOrigin['parentContext']> | undefined,
): RunInput {
  // No role: the child runs with the parent's exact model; a role brings its preset's model unless the brief names one.
  const model = brief.model ?? (brief.role ? undefined : parent.composition.model);
  const composition = inheritComposition(parent.composition, plan, brief, parent.depth + 1);
  return {
    task: renderChildTask(brief, returnShape),
    preset: plan.preset,
    ...(model && { model }),
    ...(brief.effort && { effort: brief.effort }),
    limits: plan.limits,
    scopes: plan.grant.scopes,
    ...(parent.tenant && { tenant: parent.tenant }),
    origin: {
      parentId: parent.sessionId,
      rootId: parent.rootId,
      depth: parent.depth + 1,
      taskName: brief.task_name,
      invocation,
      ...(parent.invocationId && { invocationId: parent.invocationId }),
      allowedTools: plan.grant.tools,
      contextMode: plan.contextMode,
      preset: presetForChild(plan.composition),
      ...(composition && { composition }),
      ...(parentContext && { parentContext }),
      ...(plan.artifacts && plan.artifacts.length > 0 && { artifacts: plan.artifacts }),
    },
    ...(plan.restore && { restore: { kind: 'followup' as const, events: plan.restore.events } }),
  };
}

/** How a child ended, as its parent books it: status, output, summary, error, and the spend it reported. */
export interface ChildEnd {
  status: ChildOutcome['status'];
  output: unknown;
  summary: string;
  error?: string;
  /** What the child reported it spent; `null` when it ended without saying (charged its whole reservation). */
  spent: RunResult['usage'] | null;
  /** What it and its children saved, as its result lists them. */
  artifacts?: ArtifactRef[];
}

/**
 * A child's result as its parent reads it: a completed child's output checked against `return_shape`
 * when given (`checked`: a mismatch fails the brief), any other status an error for its brief only.
 */
export function endOfResult(ended: RunResult, checked: ReturnShapeCheck | undefined): ChildEnd {
  return { ...endOfOutput(ended, checked), ...(ended.artifacts && { artifacts: ended.artifacts }) };
}

function endOfOutput(ended: RunResult, checked: ReturnShapeCheck | undefined): ChildEnd {
  const text = ended.output ?? '';
  if (ended.status === 'completed' && checked) {
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
}

/** What a failed child reported it spent: the usage of the `RunResult` its failure carries, else `null`. */
export function reportedUsage(details: unknown): Usage | null {
  // A result that is not a RunResult reports nothing.
  return asRunResult(details)?.usage ?? null;
}

/** What a failed child had saved before it failed, as the `RunResult` its failure carries lists them. */
export function reportedArtifacts(details: unknown): Pick<ChildEnd, 'artifacts'> {
  const artifacts = asRunResult(details)?.artifacts;
  return artifacts ? { artifacts } : {};
}

/** A child that failed is an error for its brief only; what it reported spending, if anything, is charged. */
export function failedEnd(message: string, spent: Usage | null): ChildEnd {
  return { status: 'failed', output: null, summary: message, error: message, spent };
}

/** A child cancelled before it finished (not by its parent) is an error for its brief only. */
export function cancelledEnd(): ChildEnd {
  const error = 'the child was cancelled before it finished';
  return { status: 'cancelled', output: null, summary: 'the child was cancelled', error, spent: null };
}

/**
 * Settles a child's reservation: released, and its spend charged in full — what it reported, even past
 * its reservation (then `overrun` says by how much), or the whole reservation when it ended without reporting (never
 * under-count).
 */
export function settleReservation(
  budget: Budget,
  reservation: Amount,
  spent: Spend | null,
): { reserved: Amount; charge: Spend; overrun: Amount | null } {
  const charge = spent ?? { inputTokens: reservation.tokens, outputTokens: 0, costMicroUsd: reservation.costMicroUsd };
  return { reserved: release(budget, reservation).reserved, charge, overrun: overrunOf(charge, reservation) };
}
