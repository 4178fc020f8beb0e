/**
 * Planning one child: its tools, scopes and limits from its brief and composition, and the shapes the
 * delegation code passes around. Deterministic code only.
 */

import type { RunToolResult } from '../../src/contract/activities.js';
import {
  childReserve,
  DEFAULT_CHILD_SYNTHESIS_RESERVE,
  deriveChildLimits,
  reservationFor,
  reserveUncovered,
} from '../../src/rules/budget.js';
import { narrowGrant } from '../../src/rules/children.js';
import type { Brief } from '../../src/rules/delegation.js';

import type { SessionEvent } from '../../src/contract/session.js';
import type { LedgerEntry } from '../../src/contract/run.js';
import type { ChildOutcome } from '../../src/rules/children.js';
import type { CancellationScope } from '@temporalio/workflow';
import type { AgentRunState } from '../run-state.js';
import type { ChildPlan } from '../../src/rules/child-run.js';

export type { ChildPlan } from '../../src/rules/child-run.js';

/** The parent's context frozen at the `delegate` call: its effective dialogue and its append count. */
export interface Snapshot {
  events: SessionEvent[];
  mark: number;
}

/** What one `delegate` call gives every child it books. */
export interface DelegateCall {
  /** The call's number among the run's delegate calls (in each child's id and origin). */
  readonly number: number;
  readonly returnShape: Record<string, unknown> | undefined;
  readonly snapshot: Snapshot;
}

/** One child of a `delegate` call, from its booking to its end. */
export interface DelegatedChild {
  /** Replaced by a smaller one, never changed, when the parent's overrun shrinks the child before it starts. */
  plan: ChildPlan;
  readonly entry: LedgerEntry;
  /** Once it lives: the scope it runs in and its life. */
  scope?: CancellationScope;
  life?: Promise<ChildOutcome>;
  /** How its life ended, once it has: its outcome, or the failure that ended it. */
  outcome?: ChildOutcome;
  failure?: { reason: unknown };
}

export const toolError = (content: string): RunToolResult => ({ content, isError: true });

/** One child's tools, scopes and limits from its brief and composition. */
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
  const given = run.artifacts.forBrief(brief.artifacts);
  if (!given.ok) return { ok: false, error: `brief "${brief.task_name}": ${given.error}` };
  const derived = deriveChildLimits({
    parentLimits: run.limits,
    parentUsage: run.usage,
    reserved: run.reserved,
    nowMs: Date.now(),
    requested: brief.limits,
    defaults: settings.childDefaults,
    keep: run.synthesisKeep,
  });
  if (derived.maxTurns === 0 || derived.maxTokens === 0 || derived.maxCostUsd === 0) {
    return {
      ok: false,
      error: `brief "${brief.task_name}": nothing is left of this run's budget for a child (limits ${JSON.stringify(derived)})`,
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
      grant: grant.grant,
      limits,
      reservation: reservationFor(limits),
      artifacts: given.refs,
    },
  };
}
