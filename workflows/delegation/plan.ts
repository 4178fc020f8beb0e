/**
 * The shapes the delegation code passes around: the parent's snapshot at a `delegate` call, the call, and each child
 * it books. A child's plan is made by `planChild` (src/rules/run-start.ts). Deterministic code only.
 */

import type { RunToolResult } from '../../src/contract/activities.js';

import type { SessionEvent } from '../../src/contract/session.js';
import type { LedgerEntry } from '../../src/contract/run.js';
import type { ChildOutcome } from '../../src/rules/children.js';
import type { CancellationScope } from '@temporalio/workflow';
import type { ChildPlan } from '../../src/rules/run-start.js';

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
