/**
 * Planning one child (R2.5, R2.7): its tools, scopes and limits from its brief and composition, and the shapes the
 * delegation code passes around. Deterministic code only.
 */
import type { ContextRendering, Preset } from '../../src/contract/preset.js';
import type { RunToolResult } from '../../src/contract/activities.js';
import { deriveChildLimits, reservationFor, type Amount } from '../../src/rules/budget.js';
import { narrowGrant, type Brief, type ChildGrant, type ContextMode } from '../../src/rules/delegation.js';
import type { ChildOrigin, Limits } from '../../src/contract/run.js';
import type { SessionEvent } from '../../src/contract/session.js';
import type { AgentRunState } from '../run-state.js';

export type ChildBackground = NonNullable<ChildOrigin['background']>;

/** The parent's context frozen at the `delegate` call (R3.2): its effective dialogue and its append count. */
export interface Snapshot {
  events: SessionEvent[];
  mark: number;
}

export interface ChildPlan {
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

export const toolError = (content: string): RunToolResult => ({ content, isError: true });

/** R2.5/R2.7: one child's tools, scopes and limits from its brief and composition. */
export function planChild(
  brief: Brief,
  childComposition: ChildPlan['composition'],
  run: AgentRunState,
): { ok: true; plan: ChildPlan } | { ok: false; error: string } {
  const { composition, delegationSettings: settings } = run;
  const grant = narrowGrant({
    parentTools: composition.tools,
    parentScopes: composition.scopes,
    allowedTools: brief.allowed_tools,
    presetTools: childComposition.definition.tools,
    childDepth: run.depth + 1,
    settings,
  });
  if (!grant.ok) return { ok: false, error: `brief "${brief.task_name}": ${grant.error}` };
  const limits = deriveChildLimits({
    parentLimits: run.limits,
    parentUsage: run.usage,
    reserved: run.reserved,
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
