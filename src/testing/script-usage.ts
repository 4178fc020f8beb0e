/** What the scripted model counts and bills for a request, as Deputy's tokenizer counts it. */
import { createHash } from 'node:crypto';
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

/** A request's input (or its first `messages` messages) as Deputy's tokenizer counts it: `counted` exactly, `estimate` with its margin. */
function inputCount(body: ChatRequestBody, messages = body.messages.length): { counted: number; estimate: number } {
  const tools = (body.tools ?? []).map((tool) => ({
    name: tool.function.name,
    description: tool.function.description ?? '',
    parameters: (tool.function.parameters ?? {}) as Record<string, unknown>,
  }));
  return countCallTokens(body.model, body.messages.slice(0, messages) as ChatMessage[], tools);
}

/** The fewest input tokens OpenAI's prompt cache serves, and the steps it serves them in. */
const CACHE_MIN_TOKENS = 1024;
const CACHE_STEP_TOKENS = 128;

/**
 * A provider's prompt cache as OpenAI's works: every prompt sent is kept as its chain of prefixes (the model and
 * tools, then each message in turn); a later request with the same leading messages has the longest such prefix
 * served from the cache, once it comes to 1,024 tokens, in steps of 128, never all of its input.
 */
export class PromptCache {
  readonly #prefixes = new Set<string>();

  /** Input tokens of `body` the cache serves (its input counted as `promptTokens`); then keeps its prompt. */
  serve(body: ChatRequestBody, promptTokens: number): number {
    let chain = createHash('sha256')
      .update(JSON.stringify([body.model, body.tools ?? []]))
      .digest('hex');
    let shared = 0;
    for (const [i, message] of body.messages.entries()) {
      chain = createHash('sha256').update(chain).update(JSON.stringify(message)).digest('hex');
      if (this.#prefixes.has(chain) && shared === i) shared = i + 1;
      this.#prefixes.add(chain);
    }
    if (shared === 0) return 0;
    const prefix = inputCount(body, shared).counted;
    if (prefix < CACHE_MIN_TOKENS || promptTokens < CACHE_MIN_TOKENS) return 0;
    return Math.min(Math.floor(prefix / CACHE_STEP_TOKENS) * CACHE_STEP_TOKENS, promptTokens - 1);
  }
}

/** What a provider billing at `price` (USD per million tokens, as the config writes it) billed for one usage report, in micro-USD: rounded up per call. */
export function billedMicroUsd(
  usage: ScriptUsage,
  price: { inputPerMTokUsd: number; outputPerMTokUsd: number; cachedInputPerMTokUsd?: number | undefined },
): number {
  const micro = (usd: number) => Math.round(usd * 1_000_000);
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  return Math.ceil(
    ((usage.prompt_tokens - cached) * micro(price.inputPerMTokUsd) +
      cached * micro(price.cachedInputPerMTokUsd ?? price.inputPerMTokUsd) +
      usage.completion_tokens * micro(price.outputPerMTokUsd)) /
      1_000_000,
  );
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

/** A usage report as the provider bills it: its counts, without the total. */
export function billedUsage({ total_tokens: _total, ...usage }: ScriptUsage & { total_tokens: number }): ScriptUsage {
  return usage;
}
