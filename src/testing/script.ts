/**
 * What the scripted model is told and what it records: its rules, replies, usage reports and provider behaviours,
 * and the predicates tests and scenarios match requests with.
 */
import type { IncomingMessage } from 'node:http';
/** Token counts a reply reports; defaults are fixed so tests can assert exact usage. */
export interface ScriptUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Of the input, what the provider's prompt cache served (see `ProviderBehaviour.promptCache`). */
  prompt_tokens_details?: { cached_tokens: number };
}

/**
 * `counted`: what a provider with Deputy's tokenizer would bill: the request's input and the answer as written.
 * `worst`: the largest usage the request allows, as a provider that bills to the limit would report it: the input
 * as Deputy's own estimate counts it (its upper bound), and an answer of exactly `max_completion_tokens` (or 1000
 * tokens when the request sets none).
 */
export type ReplyUsage = ScriptUsage | 'worst' | 'counted';

/** What the server answers to one request. */
export type ScriptReply =
  /**
   * A final answer; streamed in pieces `chunkDelayMs` apart when the request streams, and (`stallAfterChars`) stopping
   * for good, the connection left open, or (`cutAfterChars`) dropping the connection, after that many characters, or
   * (`stallAfterUsage`) stopping for good after the whole answer and its usage report, before the stream's end.
   */
  | {
      text: string;
      usage?: ReplyUsage;
      chunkDelayMs?: number;
      stallAfterChars?: number;
      cutAfterChars?: number;
      stallAfterUsage?: boolean;
    }
  /** Tool calls; `arguments` as a string is sent raw (use it for malformed JSON). */
  | { toolCalls: { name: string; arguments: unknown; id?: string }[]; text?: string; usage?: ReplyUsage }
  /** An HTTP error with an OpenAI-style error body. */
  | { status: number; message?: string; headers?: Record<string, string> }
  /** Never answers; the request stays open until the client aborts it. */
  | { hang: true }
  /** Destroys the connection without an answer. */
  | { reset: true }
  /** A raw body, for truncated or invalid JSON. */
  | { raw: string; status?: number; contentType?: string }
  /**
   * A stream written event by event, as a hostile or broken endpoint might: each event's `data` is sent as a
   * `data:` line (an object as JSON, a string as it is), or `comment` as a `: comment` line (a keep-alive), `afterMs`
   * after the one before; then the stream ends, or (`hold`) the connection is left open and silent.
   */
  | { events: { data?: unknown; comment?: string; afterMs?: number }[]; hold?: boolean };

/** A request as the server received it. */
export interface RecordedRequest {
  index: number;
  /** The parsed JSON body (model, messages, tools …). */
  body: ChatRequestBody;
  headers: IncomingMessage['headers'];
  /** Name of the rule that answered, if any. */
  rule: string | undefined;
  /** True when the client dropped the connection before the answer was sent. */
  aborted: boolean;
  /** `Date.now()` when the client dropped the connection, if it did. */
  abortedAt?: number;
  /** `Date.now()` when the request arrived. */
  receivedAt: number;
  /** `Date.now()` when the answer was sent in full, if it was. */
  answeredAt?: number;
  /** Characters of answer text written to the client (a streamed answer the client aborted wrote fewer). */
  sentChars?: number;
  /** The usage the provider reported for this request (what it billed), if it sent a report. */
  billed?: ScriptUsage;
}

/** The parts of a Chat Completions request body the rules look at. */
export interface ChatRequestBody {
  model: string;
  messages: { role: string; content?: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string; description?: string; parameters?: unknown } }[];
  [key: string]: unknown;
}

/** One rule of the script: answers requests it matches, `times` times (default once). */
export interface ScriptRule {
  name?: string;
  when?: (request: RecordedRequest) => boolean;
  /** The answer, or a function of the request (it may wait, to hold a run in its model call). */
  reply: ScriptReply | ((request: RecordedRequest) => ScriptReply | Promise<ScriptReply>);
  /** How many requests this rule answers. @default 1 */
  times?: number;
  /** Wait this long before answering (a function is asked for each request). @default 0 */
  delayMs?: number | (() => number);
}

export const DEFAULT_USAGE: ScriptUsage = { prompt_tokens: 100, completion_tokens: 20 };

/**
 * How the server behaves as a provider: which cap parameter it reads (`both`, as OpenAI's own API does for the
 * models it serves; `max_tokens`, as servers that ignore `max_completion_tokens`; `none`, a server that writes what
 * it likes), and whether it reports usage (a streaming server that sends no usage chunk says nothing).
 */
export interface ProviderBehaviour {
  /** @default 'both' */
  reads?: 'both' | 'max_tokens' | 'none';
  /** @default true */
  reportsUsage?: boolean;
  /**
   * What a reply that names no usage reports: `fixed`, 100 input and 20 output tokens a call (figures tests can
   * write down), or `counted` (see `ReplyUsage`), as a real provider would, for the offline demo.
   * @default 'fixed'
   */
  usage?: 'fixed' | 'counted';
  /**
   * What the provider bills a request, from what a provider counting as Deputy does would bill it (`counted`: its
   * input, and the answer as written, counted whole): replaces any usage the reply names. A provider whose tokenizer
   * counts input differently, or that bills answer tokens it never sends, is written here.
   */
  bill?: (request: RecordedRequest, counted: ScriptUsage) => ScriptUsage;
  /**
   * Requests answered with a usage report and no answer at all (the provider billed the attempt and gave nothing
   * usable), whatever the script says; the script answers the retry.
   */
  billsWithoutAnswer?: (request: RecordedRequest) => boolean;
  /**
   * A prompt cache that serves and bills as OpenAI's does: a request of 1,024 input tokens or more whose leading
   * messages (with the same model and tools) were sent before has that prefix served from the cache, in steps of 128
   * tokens, reported as `prompt_tokens_details.cached_tokens` in its usage.
   * @default false
   */
  promptCache?: boolean;
}

/** The content of the last message of a request. */
export function lastMessage(request: RecordedRequest): string {
  return request.body.messages.at(-1)?.content ?? '';
}

/** A rule condition: the request's dialogue holds a user message equal to `task` (and, if given, `toolResults` tool results). */
export function forTask(task: string, toolResults?: number): (request: RecordedRequest) => boolean {
  return (request) =>
    request.body.messages.some((m) => m.role === 'user' && m.content === task) &&
    (toolResults === undefined || toolResultCount(request) === toolResults);
}

/** A rule condition: some user message of the request contains `text` (and, if given, `toolResults` tool results). */
export function userSays(text: string, toolResults?: number): (request: RecordedRequest) => boolean {
  return (request) =>
    request.body.messages.some((m) => m.role === 'user' && (m.content ?? '').includes(text)) &&
    (toolResults === undefined || toolResultCount(request) === toolResults);
}

/** The tool names offered in a request. */
export function offeredTools(request: RecordedRequest): string[] {
  return (request.body.tools ?? []).map((tool) => tool.function.name);
}

/** The contents of a request's tool results, in order. */
export function toolMessages(request: RecordedRequest): string[] {
  return request.body.messages.filter((m) => m.role === 'tool').map((m) => m.content ?? '');
}

/** The number of tool results in a request's dialogue. */
export function toolResultCount(request: RecordedRequest): number {
  return request.body.messages.filter((m) => m.role === 'tool').length;
}

/** A running scripted model server. */
