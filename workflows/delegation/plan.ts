/**
 * What a `delegate` call gives every child it books: the parent's snapshot at the call, the call's number and return
 * shape; and the tool error the steering tools answer with. Deterministic code only.
 */

import type { RunToolResult } from '../../src/contract/activities.js';

import type { SessionEvent } from '../../src/contract/session.js';

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

export const toolError = (content: string): RunToolResult => ({ content, isError: true });
