/**
 * What a run restored from a session (an import, a fork, a follow-up) takes from it. Pure; workflow-safe (types only).
 */
import type { SessionEvent } from '../contract/session.js';

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
