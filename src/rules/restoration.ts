/**
 * A session restored into a run (an import, a fork, a follow-up): how it gets its composition, a fork's copy of its
 * source, and the calls it made but never answered closed. Pure and zod-free: the client and the workflow both use it.
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

/** The tool result that closes a call a restored session made but never answered. */
export const NOT_RUN_ON_RESTORE =
  'not run: this call was made before the session was restored, and a restored session runs only the calls its model makes in this run';

/**
 * `events` with every tool call that never got a result answered by an error result right after its message, so a
 * restored session (a crafted file, or a fork of a run caught mid-turn) never has a tool run that this run's model
 * did not ask for, and its dialogue stays well formed.
 */
export function closeUnansweredToolCalls(events: readonly SessionEvent[]): SessionEvent[] {
  const answered = new Set(events.flatMap((event) => (event.type === 'tool/result' ? [event.toolCallId] : [])));
  return events.flatMap((event) => {
    if (event.type !== 'message/assistant') return [event];
    const open = event.toolCalls.filter((call) => !answered.has(call.id));
    return [
      event,
      ...open.map((call): SessionEvent => ({
        type: 'tool/result',
        at: event.at,
        toolCallId: call.id,
        name: call.name,
        content: NOT_RUN_ON_RESTORE,
        isError: true,
      })),
    ];
  });
}
