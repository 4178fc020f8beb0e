/**
 * Compaction: when the effective dialogue passes a token threshold, its oldest turns are summarised into one
 * anchored `compaction/summary` that replaces them for good. Pure functions; the summary itself is an activity.
 */
import { DIALOGUE_TYPES, renderParentContext, splitTurns } from './context.js';
import { STEERING_TOOLS } from './children.js';
import { SUMMARY_HEADING } from '../contract/dialogue.js';
import { cutText, DEFAULT_PAYLOAD_LIMITS } from './payloads.js';
import type { SessionEvent } from '../contract/session.js';
import type { ChatMessage } from '../contract/dialogue.js';
import type { CompactionRange } from '../contract/activities.js';

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
  // The prompt is an activity input; past the budget the conversation is cut, its beginning kept.
  const text = cutText(renderParentContext(replaced), maxBytes - 2048)
    .split('\n')
    .slice(3)
    .join('\n')
    .replace(/outer_user/g, 'user')
    .replace(/outer_assistant/g, 'assistant');
  return promptFor(text);
}

const promptFor = (text: string): ChatMessage[] => [
  { role: 'system', content: COMPACTION_SYSTEM_PROMPT },
  { role: 'user', content: `## Conversation to compact\n${text}\n\nWrite the compacted summary.` },
];

export type { CompactionRange };

/**
 * The compaction prompt written by the worker from the dialogue it holds (the workflow sends only the
 * range): the same transcript `compactionPrompt` writes from the events, read from the messages instead.
 */
export function compactionPromptFromMessages(messages: readonly ChatMessage[], range: CompactionRange): ChatMessage[] {
  const names = new Map<string, string>();
  const lines: string[] = [];
  const line = (label: string, text: string) => lines.push(`${label}: ${text.trim()}`);
  for (const message of messages.slice(range.from, range.to)) {
    if (message.role === 'user') {
      if (message.content.startsWith(SUMMARY_HEADING)) {
        line('summary of earlier turns', message.content.slice(SUMMARY_HEADING.length));
      } else line('user', message.content);
    } else if (message.role === 'assistant') {
      if (message.content?.trim()) line('assistant', message.content);
      for (const call of message.tool_calls ?? []) {
        names.set(call.id, call.function.name);
        if (!STEERING_TOOLS.includes(call.function.name))
          lines.push(`assistant called ${call.function.name}(${call.function.arguments})`);
      }
    } else if (message.role === 'tool') {
      const name = names.get(message.tool_call_id) ?? 'a tool';
      if (!STEERING_TOOLS.includes(name)) line(`${name} returned`, message.content);
    } else {
      line('system', message.content);
    }
  }
  return promptFor(cutText(lines.join('\n'), range.maxBytes - 2048));
}

/** The dialogue after a compaction, as messages: what the workflow's session renders to once the summary is in. */
export function messagesAfterCompaction(
  messages: readonly ChatMessage[],
  range: Pick<CompactionRange, 'from' | 'to'>,
  summary: string,
): ChatMessage[] {
  return [
    ...messages.slice(0, range.from),
    { role: 'user', content: `${SUMMARY_HEADING}${summary}` },
    ...messages.slice(range.to),
  ];
}

/** The session after a compaction: kept events, the anchored summary, then the recent turns. */
export function applyCompaction(plan: CompactionPlan, summary: string, at: string): SessionEvent[] {
  return [...plan.kept, { type: 'compaction/summary', at, summary, replacesTurns: plan.replacesTurns }, ...plan.recent];
}
