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
  reported: CallTokens | undefined;
  /** A usage report that was no token count, or past what the call could have used: ignored (see `reported`). */
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
 * A usage report as the endpoint bills it, or `null` when its input or output is no count. Of the input, what the
 * provider served from its prompt cache comes as OpenAI's `prompt_tokens_details.cached_tokens` (DeepSeek's
 * `prompt_cache_hit_tokens`), and what it wrote to it as `prompt_tokens_details.cache_write_tokens` (OpenRouter's);
 * each is held to the input it is part of. Reasoning is output: within `completion_tokens`, as OpenAI counts it,
 * unless the report's total counts it beside them (as some compatible servers do), when it is added.
 */
export function reportedTokens(usage: OpenAI.CompletionUsage): CallTokens | null {
  const report = usage as OpenAI.CompletionUsage & {
    prompt_tokens_details?: { cached_tokens?: unknown; cache_write_tokens?: unknown } | null;
    prompt_cache_hit_tokens?: unknown;
  };
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  const besides =
    typeof reasoning === 'number' &&
    reasoning > 0 &&
    usage.total_tokens === usage.prompt_tokens + usage.completion_tokens + reasoning;
  return callTokensOf({
    inputTokens: usage.prompt_tokens,
    outputTokens: besides ? usage.completion_tokens + reasoning : usage.completion_tokens,
    cachedInputTokens: report.prompt_tokens_details?.cached_tokens ?? report.prompt_cache_hit_tokens,
    cacheWriteTokens: report.prompt_tokens_details?.cache_write_tokens,
  });
}

/** Most tool calls one streamed answer may open; an index past it is not a call. */
const MAX_STREAMED_CALLS = 128;

/**
 * Counts a text that arrives in pieces as the tokenizer counts the whole, not piece by piece (a word cut in two
 * counts twice). Whatever precedes a point where a word starts after a space or a line break is settled: the
 * tokenizer's pre-split never joins across it, so only the open tail is counted again as pieces arrive.
 */
class GrowingText {
  #settled = 0;
  #tail = '';
  /** Tokens of the whole text so far. */
  tokens = 0;
  /** Past this many characters with no such point, the tail is settled as it is (at worst a token more). */
  static readonly #MAX_TAIL = 4096;

  constructor(private readonly count: (text: string) => number) {}

  /** Tokens of the text so far with `more` appended. */
  with(more: string): number {
    return this.#settled + this.count(this.#tail + more);
  }

  append(more: string): void {
    this.tokens = this.with(more);
    let tail = this.#tail + more;
    const at = lastSettlePoint(tail);
    if (at > 0) {
      this.#settled += this.count(tail.slice(0, at));
      tail = tail.slice(at);
    } else if (tail.length > GrowingText.#MAX_TAIL) {
      this.#settled += this.count(tail);
      tail = '';
    }
    this.#tail = tail;
  }
}

/** The last index where a word starts after a space that follows non-space, or after a line break (0: none). */
function lastSettlePoint(text: string): number {
  for (let i = text.length - 1; i > 1; i -= 1) {
    if (!/[\p{L}\p{N}]/u.test(text[i]!)) continue;
    const before = text[i - 1]!;
    if (before === '\n' && i - 1 > 0) return i;
    if (before === ' ' && !/\s/.test(text[i - 2]!)) return i - 1;
  }
  return 0;
}

/**
 * Reads `stream` to its end, or until `count` of what arrived passes `cap` (then the answer is cut at the cap,
 * `stop()` aborts the request and the answer ends with finish reason `length`). `onProgress` is told after each
 * chunk that added to the answer or reported usage. A usage report past `bound` (what the call sent could have used)
 * is impossible: kept aside in `impossibleUsage`; only an answer past the cap is still debited, at the cap.
 */
export async function readStream(
  stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>,
  options: ReadOptions,
): Promise<StreamedAnswer> {
  return new StreamReader(options).read(stream);
}

interface ReadOptions {
  cap: number | null;
  count: (text: string) => number;
  stop: () => void;
  bound?: CallTokens;
  onProgress?: (progress: StreamProgress) => void;
}

/** One stream's answer as it arrives, counted against the cap. */
class StreamReader {
  #content = '';
  #sawContent = false;
  readonly #calls: { id: string; name: string; arguments: string }[] = [];
  /** Each text (the answer, each call's name and arguments) counted whole, as the endpoint's tokenizer sees it. */
  readonly #texts = new Map<string, GrowingText>();
  #finishReason: string | null = null;
  #reported: StreamedAnswer['reported'];
  #impossibleUsage: unknown;
  #model: string | undefined;
  #counted = 0;
  #stoppedAtCap = false;

  constructor(private readonly options: ReadOptions) {}

  async read(stream: AsyncIterable<OpenAI.Chat.Completions.ChatCompletionChunk>): Promise<StreamedAnswer> {
    const { stop, onProgress } = this.options;
    try {
      for await (const chunk of stream) {
        this.#model ??= chunk.model;
        const reportedBefore = this.#reported;
        const countedBefore = this.#counted;
        if (chunk.usage) this.#usage(chunk.usage);
        const choice = chunk.choices?.[0];
        if (choice) this.#choice(choice);
        if (this.#counted > countedBefore || this.#reported !== reportedBefore) onProgress?.(this.#progress());
        if (!choice) continue;
        if (this.#stoppedAtCap) {
          // The cap is Deputy's, not the server's: once text past it arrives, stop reading and drop the connection,
          // so nothing more is made. An answer that just reached the cap is read on: a server that keeps to the
          // cap ends it and sends its usage report, the figure it bills.
          this.#finishReason = 'length';
          stop();
          break;
        }
      }
    } catch (err) {
      if (!this.#stoppedAtCap) throw err;
    }
    return {
      model: this.#model,
      content: this.#sawContent ? this.#content : null,
      toolCalls: this.#calls.filter((call) => call !== undefined),
      finishReason: this.#finishReason,
      reported: this.#reported,
      ...(this.#impossibleUsage !== undefined && { impossibleUsage: this.#impossibleUsage }),
      countedOutput: this.#counted,
    };
  }

  /**
   * A usage report. One that is no token count (negative, fractional, not a number), or whose input no call can
   * reach, is no report: it must never lower what is debited, nor raise it past what was possible. An answer reported
   * past the cap sent is impossible too, and debited at the cap: the most the call could have been billed.
   */
  #usage(usage: OpenAI.CompletionUsage): void {
    const { bound } = this.options;
    const tokens = reportedTokens(usage);
    if (!tokens || (bound && tokens.inputTokens > bound.inputTokens)) this.#impossibleUsage = usage;
    else if (bound && tokens.outputTokens > bound.outputTokens) {
      this.#impossibleUsage = usage;
      this.#reported = { ...tokens, outputTokens: bound.outputTokens };
    } else this.#reported = tokens;
  }

  /** A choice's delta: text of the answer, and parts of its tool calls. */
  #choice(choice: OpenAI.Chat.Completions.ChatCompletionChunk.Choice): void {
    if (choice.finish_reason) this.#finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (typeof delta?.content === 'string' && delta.content.length > 0) {
      this.#sawContent = true;
      this.#content += this.#take('content', delta.content);
    }
    for (const part of delta?.tool_calls ?? []) {
      if (this.#stoppedAtCap) break;
      // The index is the endpoint's word: only a small whole number names a call (never `__proto__`).
      const index: unknown = part.index;
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= MAX_STREAMED_CALLS) continue;
      const call = (this.#calls[index] ??= { id: '', name: '', arguments: '' });
      if (typeof part.id === 'string' && part.id) call.id = part.id;
      // OpenAI sends a call's name once; some servers repeat it in every delta of the call: taken once.
      const name = part.function?.name;
      if (typeof name === 'string' && name && call.name !== name) call.name += this.#take(`name ${index}`, name);
      const args = part.function?.arguments;
      if (typeof args === 'string' && args && !this.#stoppedAtCap) {
        call.arguments += this.#take(`arguments ${index}`, args);
      }
    }
  }

  /** The part of `text`, appended to the text named `key`, that still fits under the cap (all of it when there is none). */
  #take(key: string, text: string): string {
    const { cap, count } = this.options;
    let whole = this.#texts.get(key);
    if (!whole) this.#texts.set(key, (whole = new GrowingText(count)));
    const others = this.#counted - whole.tokens;
    let kept = text;
    if (cap !== null && others + whole.with(text) > cap) {
      // The longest prefix that fits: the answer ends exactly at the cap, never a token past it.
      let lo = 0;
      let hi = text.length;
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (others + whole.with(text.slice(0, mid)) <= cap) lo = mid;
        else hi = mid - 1;
      }
      kept = text.slice(0, lo);
      this.#stoppedAtCap = true;
    }
    whole.append(kept);
    this.#counted = others + whole.tokens;
    return kept;
  }

  #progress(): StreamProgress {
    return { outputTokens: this.#counted, text: this.#content, ...(this.#reported && { reported: this.#reported }) };
  }
}
