/**
 * The agent loop's next step as an explicit union (the shape of the OpenAI Agents SDK's runner): the workflow asks
 * `nextStep` what to do and does it. Pure: no Temporal, no I/O.
 */
import { exhaustedLimit, remaining, synthesisTrigger } from './budget.js';
import type { LimitName, ResolvedLimits, Usage } from '../contract/run.js';
import { bestOutput, endsWithFinalAnswer, pendingToolCalls } from '../contract/dialogue.js';
import type { SessionEvent, ToolCall } from '../contract/session.js';

/** What the workflow does next. */
export type NextStep =
  /** Call the model; with `synthesisFor` set, offer no tools and ask for the final answer. */
  | { type: 'call_model'; synthesisFor: LimitName | null; offerTools: boolean }
  /** Run `calls`; answer `refused` with a tool error because `maxToolCalls` leaves no room for them. */
  | { type: 'run_tools'; calls: ToolCall[]; refused: ToolCall[] }
  /** The model gave its answer: the run is done. */
  | { type: 'final'; output: string | null }
  /** A conversation waits for the next user message. */
  | { type: 'wait_for_user' }
  /** A limit is exhausted before a final answer: end with the best output so far. */
  | { type: 'limit_reached'; limit: LimitName; output: string | null };

/** Everything `nextStep` looks at. */
export interface LoopState {
  events: readonly SessionEvent[];
  limits: ResolvedLimits;
  usage: Usage;
  nowMs: number;
  mode: 'task' | 'conversation';
}

/** Decides the loop's next step from the session, the limits and the usage so far. */
export function nextStep(state: LoopState): NextStep {
  const { events, limits, usage, nowMs, mode } = state;
  const rem = remaining(limits, usage, nowMs);
  const lastAssistant = events.findLast((e) => e.type === 'message/assistant');
  const pending = pendingToolCalls(events);

  if (pending.length > 0) {
    // A synthesis call offered no tools: tool calls it still makes cannot run.
    if (lastAssistant?.synthesisFor) {
      return { type: 'limit_reached', limit: lastAssistant.synthesisFor, output: bestOutput(events) };
    }
    const room = rem.toolCalls ?? pending.length;
    const calls = pending.slice(0, room);
    const refused = pending.slice(room);
    if (refused.length > 0 && !limits.synthesis) {
      return { type: 'limit_reached', limit: 'maxToolCalls', output: bestOutput(events) };
    }
    return { type: 'run_tools', calls, refused };
  }

  if (endsWithFinalAnswer(events)) {
    return mode === 'conversation' ? { type: 'wait_for_user' } : { type: 'final', output: bestOutput(events) };
  }

  const exhausted = exhaustedLimit(rem);
  if (exhausted) return { type: 'limit_reached', limit: exhausted, output: bestOutput(events) };

  const synthesisFor = synthesisTrigger(limits, rem);
  return { type: 'call_model', synthesisFor, offerTools: synthesisFor === null && rem.toolCalls !== 0 };
}
