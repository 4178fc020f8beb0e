/** Session events for tests of the pure rules, written short: a user line, an answer with its calls, a tool result. */
import type { SessionEvent } from '../../src/contract/session.js';

export const at = '2026-01-01T00:00:00.000Z';

export const user = (content: string): SessionEvent => ({ type: 'message/user', at, content });

/** An assistant answer; each call is `[id, name]` with `{}` as its arguments. */
export const answer = (content: string | null, calls: [id: string, name: string][] = []): SessionEvent => ({
  type: 'message/assistant',
  at,
  content,
  toolCalls: calls.map(([id, name]) => ({ id, name, arguments: '{}' })),
});

export const result = (id: string, name: string, content: string, isError = false): SessionEvent => ({
  type: 'tool/result',
  at,
  toolCallId: id,
  name,
  content,
  isError,
});
