/**
 * Compaction (R1.6): when the effective dialogue passes a token threshold, its oldest turns are summarised into one
 * anchored `compaction/summary` that replaces them for good. Pure functions; the summary itself is an activity.
 */
import { DIALOGUE_TYPES, renderParentContext, splitTurns } from './context.js';
import { cutText, DEFAULT_PAYLOAD_LIMITS } from './payloads.js';
import type { ChatMessage, SessionEvent } from '../contract/session.js';

/** The system prompt of `compactSession`. */
export const COMPACTION_SYSTEM_PROMPT =
  "You compact the earlier part of an agent's conversation so the agent can go on with its task. Keep the task and every instruction it was given, the facts and numbers found, tool results that still matter, decisions made and what is left to do. Plain prose, at most 300 words.";

/** A rough token count of the effective dialogue (4 characters a token). */
export function dialogueTokens(events: readonly SessionEvent[]): number {
  const chars = events.filter((e) => DIALOGUE_TYPES.has(e.type)).reduce((sum, e) => sum + JSON.stringify(e).length, 0);
  return Math.ceil(chars / 4);
}

/** What to compact: everything of the dialogue before the last `keepRecentTurns` turns, or nothing. */
export interface CompactionPlan {
  /** Events that stay before the summary (header, descriptor, preset selection …). */
  kept: SessionEvent[];
  /** Events the summary replaces. */
  replaced: SessionEvent[];
  /** Turns that stay after the summary, as they are. */
  recent: SessionEvent[];
  /** Turns replaced, this time and by earlier summaries. */
  replacesTurns: number;
}

/** Plans a compaction once the dialogue passes `thresholdTokens`; `null` when under it or too short to compact. */
export function planCompaction(
  events: readonly SessionEvent[],
  thresholdTokens: number,
  keepRecentTurns: number,
): CompactionPlan | null {
  if (dialogueTokens(events) <= thresholdTokens) return null;
  const kept = events.filter((e) => !DIALOGUE_TYPES.has(e.type));
  const dialogue = events.filter((e) => DIALOGUE_TYPES.has(e.type));
  const isPrefix = (e: SessionEvent) => e.type === 'compaction/summary' || e.type === 'context/background';
  const prefix = dialogue.filter(isPrefix);
  const turns = splitTurns(dialogue.filter((e) => !isPrefix(e)));
  if (turns.length <= keepRecentTurns) return null;
  const old = turns.slice(0, turns.length - keepRecentTurns);
  const earlier = prefix.reduce((n, e) => n + (e.type === 'compaction/summary' ? e.replacesTurns : 0), 0);
  return {
    kept,
    replaced: [...prefix, ...old.flat()],
    recent: turns.slice(-keepRecentTurns).flat(),
    replacesTurns: earlier + old.length,
  };
}

/** The messages of a compaction call: the replaced dialogue as text, earlier summaries and background included. */
export function compactionPrompt(
  replaced: readonly SessionEvent[],
  maxBytes = DEFAULT_PAYLOAD_LIMITS.maxInputBytes,
): ChatMessage[] {
  // R1.8: the prompt is an activity input; past the budget the conversation is cut, its beginning kept.
  const text = cutText(renderParentContext(replaced), maxBytes - 2048)
    .split('\n')
    .slice(3)
    .join('\n')
    .replace(/outer_user/g, 'user')
    .replace(/outer_assistant/g, 'assistant');
  return [
    { role: 'system', content: COMPACTION_SYSTEM_PROMPT },
    { role: 'user', content: `## Conversation to compact\n${text}\n\nWrite the compacted summary.` },
  ];
}

/** The session after a compaction: kept events, the anchored summary, then the recent turns. */
export function applyCompaction(plan: CompactionPlan, summary: string, at: string): SessionEvent[] {
  return [...plan.kept, { type: 'compaction/summary', at, summary, replacesTurns: plan.replacesTurns }, ...plan.recent];
}
