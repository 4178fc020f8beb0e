/**
 * Reading a streamed Chat Completions answer. The completion is counted with the model's tokenizer as it arrives
 * and the request is aborted once the count reaches the call's cap, so no endpoint can produce more than the budget
 * allows, whatever cap parameter it reads (or ignores).
 */
import type OpenAI from 'openai';
import { callTokensOf, type CallTokens } from '../src/rules/usage.js';

/** What a stream came to. */
export interface StreamedAnswer {
  /** The model that answered, as the endpoint names it. */
  model: string | undefined;
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: string | null;
  /** Usage as the endpoint reported it, if it did (a stream aborted at the cap never gets it). */
  reported: { inputTokens: number; outputTokens: number } | undefined;
  /** A usage report that was no token count, ignored (see `reported`). */
  impossibleUsage?: unknown;
  /** The completion's tokens as Deputy counted them. */
  countedOutput: number;
}

/** Progress of a stream, for live output and for what the call has been billed so far. */
export interface StreamProgress {
  outputTokens: number;
  /** The answer's text so far. */
  text: string;
  /** Usage as the endpoint reported it, once it has. */
  reported?: CallTokens;
}

/**
 * Reads `stream` to its end, or until `count` of what arrived reaches `cap` (then `stop()` aborts the request and
 * the answer ends with finish reason `length`). `onProgress` is told after each chunk that added to the answer or
 * reported usage.
 */
export async function readStream(
  stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>,
  options: {
    cap: number | null;
    count: (text: string) => number;
    stop: () => void;
    onProgress?: (progress: StreamProgress) => void;
  },
): Promise<StreamedAnswer> {
  const { cap, count, stop, onProgress } = options;
  let content = '';
  let sawContent = false;
  const calls: { id: string; name: string; arguments: string }[] = [];
  let finishReason: string | null = null;
  let reported: StreamedAnswer['reported'];
  let impossibleUsage: unknown;
  let model: string | undefined;
  let counted = 0;
  let stoppedAtCap = false;
  /** The part of `text` that still fits under the cap (all of it when there is none), counted. */
  const take = (text: string): string => {
    const tokens = count(text);
    if (cap === null || counted + tokens <= cap) {
      counted += tokens;
      return text;
    }
    // The longest prefix that fits: the answer ends exactly at the cap, never a token past it.
    let lo = 0;
    let hi = text.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (counted + count(text.slice(0, mid)) <= cap) lo = mid;
      else hi = mid - 1;
    }
    const kept = text.slice(0, lo);
    counted += count(kept);
    stoppedAtCap = true;
    return kept;
  };
  const progress = (): StreamProgress => ({ outputTokens: counted, text: content, ...(reported && { reported }) });
  try {
    for await (const chunk of stream) {
      model ??= chunk.model;
      const reportedBefore = reported;
      if (chunk.usage) {
        // A report that is no token count (negative, fractional, not a number) is no report: it must never lower
        // what is debited.
        const tokens = callTokensOf({
          inputTokens: chunk.usage.prompt_tokens,
          outputTokens: chunk.usage.completion_tokens,
        });
        if (tokens) reported = tokens;
        else impossibleUsage = chunk.usage;
      }
      const choice = chunk.choices?.[0];
      if (!choice) {
        if (reported !== reportedBefore) onProgress?.(progress());
        continue;
      }
      const before = counted;
      if (choice.finish_reason) finishReason = choice.finish_reason;
      const delta = choice.delta;
      if (typeof delta?.content === 'string' && delta.content.length > 0) {
        sawContent = true;
        content += take(delta.content);
      }
      for (const part of delta?.tool_calls ?? []) {
        if (stoppedAtCap) break;
        const call = (calls[part.index] ??= { id: '', name: '', arguments: '' });
        if (part.id) call.id = part.id;
        // OpenAI sends a call's name once; some servers repeat it in every delta of the call: taken once.
        const name = part.function?.name;
        if (name && call.name !== name) call.name += take(name);
        if (part.function?.arguments && !stoppedAtCap) call.arguments += take(part.function.arguments);
      }
      if (counted > before || reported !== reportedBefore) onProgress?.(progress());
      if (stoppedAtCap || (cap !== null && counted >= cap && finishReason === null)) {
        // The cap is Deputy's, not the server's: stop reading and drop the connection, so nothing past it is made.
        stoppedAtCap = true;
        finishReason = 'length';
        stop();
        break;
      }
    }
  } catch (err) {
    if (!stoppedAtCap) throw err;
  }
  return {
    model,
    content: sawContent ? content : null,
    toolCalls: calls.filter((call) => call !== undefined),
    finishReason,
    reported,
    ...(impossibleUsage !== undefined && { impossibleUsage }),
    countedOutput: counted,
  };
}
