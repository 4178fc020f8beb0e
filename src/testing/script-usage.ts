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

/** A scripted tool call as the provider sends it. */
interface SentCall {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

/**
 * The answer a provider that keeps to `cap` sends, counted with the model's tokenizer as Deputy counts it (each
 * text whole): the text, then each call's name and arguments, cut at the last piece that fits; `capped` when
 * anything was cut. A tool call cut short is sent as far as it fits, as OpenAI's are.
 */
export function capAnswer(
  text: string | null,
  calls: SentCall[] | undefined,
  cap: number | null,
  count: (text: string) => number,
): { text: string | null; toolCalls: SentCall[] | undefined; capped: boolean } {
  if (cap === null) return { text, toolCalls: calls, capped: false };
  let left = cap;
  let capped = false;
  const fit = (piece: string): string => {
    if (capped) return '';
    const tokens = countText(piece, count);
    if (tokens <= left) {
      left -= tokens;
      return piece;
    }
    capped = true;
    let lo = 0;
    let hi = piece.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (countText(piece.slice(0, mid), count) <= left) lo = mid;
      else hi = mid - 1;
    }
    left = 0;
    return piece.slice(0, lo);
  };
  const sentText = text === null ? null : fit(text);
  const sentCalls: SentCall[] = [];
  for (const call of calls ?? []) {
    if (capped) break;
    const name = fit(call.function.name);
    if (capped) break;
    sentCalls.push({ ...call, function: { name, arguments: fit(call.function.arguments) } });
  }
  return { text: sentText, toolCalls: calls && sentCalls, capped };
}
