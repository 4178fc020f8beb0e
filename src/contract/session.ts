/**
 * The session: a run's ordered, append-only event log (R1.5), and the pure functions that read it.
 * Must stay importable from workflow code: no Node built-ins, no I/O.
 */
import { z } from 'zod';

/** Version written into every `session/header`; readers reject newer versions. */
export const SESSION_VERSION = 1;

/** A tool call as the model asked for it; `arguments` is the raw JSON text, which may be malformed. */
export const ToolCall = z.object({ id: z.string(), name: z.string(), arguments: z.string() });
export type ToolCall = z.infer<typeof ToolCall>;

const at = z.iso.datetime();

/** Fields every event has: when it happened, and whether it was copied from another session by a fork (R4.5). */
const common = { at, inherited: z.boolean().optional() };

/** The names of the limits a run can reach. */
export const LimitName = z.enum(['maxTurns', 'maxTokens', 'maxCostUsd', 'maxToolCalls', 'deadline']);
export type LimitName = z.infer<typeof LimitName>;

/** Every event of a session; `type` names are part of the contract. */
export const SessionEvent = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('session/header'),
    ...common,
    version: z.number().int().positive(),
    sessionId: z.string(),
    parentId: z.string().nullable(),
    depth: z.number().int().nonnegative(),
    preset: z.string().nullable(),
    model: z.string(),
  }),
  z.object({ type: z.literal('message/user'), ...common, content: z.string() }),
  z.object({
    type: z.literal('message/assistant'),
    ...common,
    content: z.string().nullable(),
    toolCalls: z.array(ToolCall),
    /** Set on a synthesis call (no tools offered): the limit that forced it. */
    synthesisFor: LimitName.optional(),
  }),
  z.object({
    type: z.literal('tool/result'),
    ...common,
    toolCallId: z.string(),
    name: z.string(),
    content: z.string(),
    isError: z.boolean(),
  }),
  z.object({ type: z.literal('compaction/summary'), ...common, summary: z.string(), replacesTurns: z.number().int() }),
  z.object({ type: z.literal('agent-preset/selected'), ...common, presetId: z.string(), revision: z.string() }),
  z.object({ type: z.literal('subagent/descriptor'), ...common, taskName: z.string(), parentId: z.string() }),
  z.object({
    type: z.literal('context/background'),
    ...common,
    /** `parent-chat`: copied from the parent's dialogue; `summary`: written for this run by a model. */
    source: z.enum(['parent-chat', 'summary']),
    /** The rendered block, heading included. */
    content: z.string(),
    /** Set with the preset option `contextRendering: "dialogue"`: the parent's turns as messages, roles kept. */
    dialogue: z.array(z.object({ role: z.enum(['user', 'assistant']), content: z.string() })).optional(),
  }),
  z.object({ type: z.literal('interjection'), ...common, content: z.string(), from: z.string() }),
  z.object({
    type: z.literal('run/ended'),
    ...common,
    status: z.enum(['completed', 'failed', 'cancelled', 'limit_reached']),
    output: z.string().nullable(),
  }),
]);
export type SessionEvent = z.infer<typeof SessionEvent>;

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
      case 'context/background':
        if (event.dialogue) messages.push(...event.dialogue);
        else messages.push({ role: 'user', content: event.content });
        break;
      case 'compaction/summary':
        messages.push({ role: 'user', content: `## Summary of earlier turns\n${event.summary}` });
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

/** True when the session's last event is an assistant answer with no tool calls. */
export function endsWithFinalAnswer(events: readonly SessionEvent[]): boolean {
  const last = events.at(-1);
  return last?.type === 'message/assistant' && last.toolCalls.length === 0;
}
