/**
 * How a restored session gets its composition, and a fork's copy of its source. Pure and zod-free: the client and
 * the workflow (a follow-up) both decide with it.
 */
import type { SessionEvent } from '../contract/session.js';

/** How a restored session gets its composition. */
export type Restoration =
  /** A selection recorded before the first own descriptor: resolve that preset in the registry now, or fail. */
  | { kind: 'independent'; presetId: string; revision: string }
  /** Anything else: join the composition of whoever restores it (its parent, or the exported composition). */
  | { kind: 'implicit' };

/**
 * Skip the inherited (forked) prefix; then a selection before the first own `subagent/descriptor` makes the
 * session independent. A preset id in the header, a selection in the inherited prefix, or one recorded after the
 * descriptor (older logs) does not.
 */
export function decideRestoration(events: readonly SessionEvent[]): Restoration {
  // A fork writes its own header first and the copied events after it: inherited events are skipped wherever they
  // stand, not only as a leading prefix.
  const own = events.filter((e) => !e.inherited);
  const descriptor = own.findIndex((e) => e.type === 'subagent/descriptor');
  if (descriptor === -1) return { kind: 'implicit' };
  const selection = own.slice(0, descriptor).find((e) => e.type === 'agent-preset/selected');
  return selection?.type === 'agent-preset/selected'
    ? { kind: 'independent', presetId: selection.presetId, revision: selection.revision }
    : { kind: 'implicit' };
}

/** A fork's copy of its source: every event marked as the inherited prefix. */
export function forkEvents(events: readonly SessionEvent[]): SessionEvent[] {
  return events.filter((e) => e.type !== 'run/ended').map((e) => ({ ...e, inherited: true }));
}
