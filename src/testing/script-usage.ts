/** What the scripted model counts and bills for a request, as Deputy's tokenizer counts it. */
import { countCallTokens, countText, encodingFor } from '../../activities/tokens.js';
import type { ChatMessage } from '../contract/dialogue.js';
import type { ChatRequestBody, RecordedRequest, ScriptUsage } from './script.js';

/** Characters of text a streamed chunk carries. */
const CHUNK_CHARS = 16;

/** The pieces a streamed answer's text is sent in: `CHUNK_CHARS` characters each. */
export function streamPieces(text: string): string[] {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += CHUNK_CHARS) pieces.push(text.slice(at, at + CHUNK_CHARS));
  return pieces;
}

/** A request's input as Deputy's tokenizer counts it: `counted` exactly, `estimate` with its margin. */
function inputCount(body: ChatRequestBody): { counted: number; estimate: number } {
  const tools = (body.tools ?? []).map((tool) => ({
    name: tool.function.name,
    description: tool.function.description ?? '',
    parameters: (tool.function.parameters ?? {}) as Record<string, unknown>,
  }));
  return countCallTokens(body.model, body.messages as ChatMessage[], tools);
}

/** A request's input as Deputy counts it: what a call is debited when the endpoint reports no usage. */
export function countedInput(request: RecordedRequest): number {
  return inputCount(request.body).counted;
}

/** The largest usage a request allows (see `ReplyUsage`). */
export function worstUsage(body: ChatRequestBody): ScriptUsage {
  const maxCompletion = body.max_completion_tokens;
  return {
    prompt_tokens: inputCount(body).estimate,
    completion_tokens: typeof maxCompletion === 'number' ? maxCompletion : 1000,
  };
}

/**
 * The usage a provider counting as Deputy does bills for a request and its answer (see `ReplyUsage`): the answer's
 * text counted whole, however it was streamed, and each tool call's name and arguments.
 */
export function countedUsage(body: ChatRequestBody, text: string, calls: string[]): ScriptUsage {
  const { count } = encodingFor(body.model);
  return {
    prompt_tokens: inputCount(body).counted,
    completion_tokens: [text, ...calls].reduce((sum, piece) => sum + countText(piece, count), 0),
  };
}
