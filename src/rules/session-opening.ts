/**
 * The events a new run's session opens with: its header, a selection and descriptor for a child, the seed messages,
 * the background its parent prepared, a restored session's dialogue, and the task. Pure: the time is given.
 */
import type { ResolveRunResult } from '../contract/activities.js';
import { SESSION_VERSION } from '../contract/dialogue.js';
import type { RunInput } from '../contract/run.js';
import type { SessionEvent } from '../contract/session.js';
import { closeUnansweredToolCalls } from './restore.js';

/** Who the run is, as its session header says. */
export interface Opener {
  sessionId: string;
  depth: number;
  composition: Pick<ResolveRunResult, 'preset' | 'model'>;
}

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
  if (origin?.parentContext) events.push({ type: 'context/background', at, ...origin.parentContext });
  // A restored session's dialogue (a fork's is marked inherited) goes on under this run's own header.
  for (const event of closeUnansweredToolCalls(input.restore?.events ?? [])) {
    if (event.type !== 'session/header' && event.type !== 'run/ended') events.push(event);
  }
  events.push({ type: 'message/user', at, content: input.task });
  return events;
}
