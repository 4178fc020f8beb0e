/**
 * Reading a session: its effective dialogue as Chat Completions messages, its pending tool calls, its best
 * output. Zod-free, so workflow code imports it without evaluating the contract's schemas.
 */
import type { SessionEvent, ToolCall } from './session.js';

/** Version written into every `session/header`; readers reject newer versions. */
export const SESSION_VERSION = 1;

/** What starts the message that stands for a `compaction/summary` in the dialogue. */
export const SUMMARY_HEADING = '## Summary of earlier turns\n';

/** A message in OpenAI Chat Completions form, as `callModel` sends it. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Renders a session's effective dialogue as Chat Completions messages, after the persona as system prompt. */
export function toChatMessages(events: readonly SessionEvent[], persona: string): ChatMessage[] {
  const messages: ChatMessage[] = persona ? [{ role: 'system', content: persona }] : [];
  for (const event of events) {
    switch (event.type) {
      case 'message/user':
        messages.push({ role: 'user', content: event.content });
        break;
      case 'interjection':
        messages.push({ role: 'user', content: `[interjection from ${event.from}]\n${event.content}` });
        break;
      case 'subagent/result':
        messages.push({ role: 'user', content: `[background child ${event.taskName} ended]\n${event.content}` });
        break;
      case 'subagent/question':
        messages.push({ role: 'user', content: `[question from child ${event.taskName}]\n${event.content}` });
        break;
      case 'subagent/approval':
        messages.push({
          role: 'user',
          content: `[approval requested below child ${event.taskName}]\n${event.content}`,
        });
        break;
      case 'subagent/answered':
        messages.push({
          role: 'user',
          content: `[the question ${event.questionId} of child ${event.taskName} was answered directly, not by you; nothing more to do for it]\n${event.answer}`,
        });
        break;
      case 'context/background':
        if (event.dialogue) messages.push(...event.dialogue);
        else messages.push({ role: 'user', content: event.content });
        break;
      case 'compaction/summary':
        messages.push({ role: 'user', content: `${SUMMARY_HEADING}${event.summary}` });
        break;
      case 'message/assistant':
        messages.push({
          role: 'assistant',
          content: event.content,
          ...(event.toolCalls.length > 0 && {
            tool_calls: event.toolCalls.map((call) => ({
              id: call.id,
              type: 'function' as const,
              function: { name: call.name, arguments: call.arguments },
            })),
          }),
        });
        break;
      case 'tool/result':
        messages.push({ role: 'tool', tool_call_id: event.toolCallId, content: event.content });
        break;
      default:
        break;
    }
  }
  return messages;
}

/** True when two messages say the same. */
export function sameMessage(a: ChatMessage, b: ChatMessage): boolean {
  return (
    a.role === b.role &&
    a.content === b.content &&
    (a.role !== 'tool' || a.tool_call_id === (b as typeof a).tool_call_id) &&
    (a.role !== 'assistant' || JSON.stringify(a.tool_calls) === JSON.stringify((b as typeof a).tool_calls))
  );
}

/** True when `messages` begin with every message of `prefix`. */
export function startsWith(messages: readonly ChatMessage[], prefix: readonly ChatMessage[]): boolean {
  return prefix.length <= messages.length && prefix.every((message, i) => sameMessage(message, messages[i]!));
}

/** Tool calls of the last assistant message that have no result yet. */
export function pendingToolCalls(events: readonly SessionEvent[]): ToolCall[] {
  const answered = new Set<string>();
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === 'tool/result') answered.add(event.toolCallId);
    if (event.type === 'message/assistant') return event.toolCalls.filter((call) => !answered.has(call.id));
  }
  return [];
}

/** The last non-empty assistant text: a run's best output so far. */
export function bestOutput(events: readonly SessionEvent[]): string | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i]!;
    if (event.type === 'message/assistant' && event.content && event.content.trim() !== '') return event.content;
  }
  return null;
}

/**
 * What a run that failed or was cancelled wrote since it was last given a message: the failed turn's partial
 * answer, never an earlier turn's (a follow-up's restored session holds the answer of the run it follows).
 */
export function outputSinceLastMessage(events: readonly SessionEvent[]): string | null {
  const at = events.findLastIndex((event) => event.type === 'message/user');
  return bestOutput(at < 0 ? events : events.slice(at + 1));
}

/** True when the session's last event is an assistant answer with no tool calls. */
export function endsWithFinalAnswer(events: readonly SessionEvent[]): boolean {
  const last = events.at(-1);
  return last?.type === 'message/assistant' && last.toolCalls.length === 0;
}
