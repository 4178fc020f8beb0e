/**
 * One streamed Chat Completions request and what it was billed: the cap sent in the parameter the endpoint reads and
 * enforced by Deputy as the answer streams, heartbeats carrying the answer's progress and what was billed so far, and
 * a failure that carries the billing to the next attempt (or to the workflow).
 */
import type OpenAI from 'openai';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { FAILURE } from '../src/contract/failures.js';
import type { CallModelInput } from '../src/contract/activities.js';
import type { ChatMessage } from '../src/contract/dialogue.js';
import type { ToolSpec } from '../src/contract/tools.js';
import type { CapParameter } from '../src/config/schema.js';
import { cacheParts, NO_TOKENS, type CallTokens } from '../src/rules/usage.js';
import { endpointOf, htmlAnswerFailure, toModelFailure } from './model-errors.js';
import { countText, encodingFor } from './tokens.js';
import { readStream, type StreamedAnswer, type StreamProgress } from './model-stream.js';

/** What a request needs of the `callModel` activity's dependencies. */
export interface RequestDeps {
  openai: OpenAI;
  /** Used only to redact the key from error text; never logged. */
  apiKey: string | undefined;
  timeoutMs?: () => number;
  capParameter?: (model: string) => CapParameter;
}

/** `{ billed }` for a heartbeat or a failure's details, or nothing when nothing was billed. */
function billedDetail(billed: CallTokens): { billed?: CallTokens } {
  return billed.inputTokens + billed.outputTokens > 0 ? { billed } : {};
}

/** `failure` carrying what the call was billed (see `billedBy`): the workflow debits it, retried or not. */
export function billedFailure(failure: ApplicationFailure, billed: CallTokens): ApplicationFailure {
  if (billed.inputTokens + billed.outputTokens === 0) return failure;
  const [first] = failure.details ?? [];
  return ApplicationFailure.create({
    type: failure.type ?? undefined,
    message: failure.message,
    nonRetryable: failure.nonRetryable ?? false,
    cause: failure.cause,
    details: [{ ...(typeof first === 'object' && first), billed }],
  });
}

/**
 * How often a streaming call heartbeats (when its answer moved): cancellation reaches an activity only through a
 * heartbeat's reply, so this bounds how long a cancelled run's stream goes on.
 */
const HEARTBEAT_MS = 500;

/** Longest partial answer a heartbeat carries (live output), in characters: the end of the text so far. */
const LIVE_OUTPUT_CHARS = 2000;

/** What a streaming call's heartbeat carries: tokens so far and the end of the answer's text. */
function liveOutput(progress: StreamProgress): { outputTokens: number; partial: string } {
  const { text, outputTokens } = progress;
  return { outputTokens, partial: text.length > LIVE_OUTPUT_CHARS ? `…${text.slice(-LIVE_OUTPUT_CHARS)}` : text };
}

/**
 * Tokens past any model's context window: no call's input or uncapped answer can be billed more. An endpoint whose
 * tokenizer counts far more than Deputy's is billed what it says (up to here); past it, the report is impossible.
 */
const TOKENS_NO_CALL_REACHES = 2 ** 24;

/** The most a request can have used: an answer of at most the cap sent, and no more tokens than any call can reach. */
export function possibleUsage(cap: number | null): CallTokens {
  return { inputTokens: TOKENS_NO_CALL_REACHES, outputTokens: cap ?? TOKENS_NO_CALL_REACHES };
}

/** The request fields that carry `cap` to the endpoint (see the config's `capParameter`). */
export function capParameters(
  style: CapParameter,
  baseURL: string,
  cap: number,
): { max_completion_tokens?: number; max_tokens?: number } {
  const resolved =
    style === 'auto' ? (/^https:\/\/api\.openai\.com\//.test(baseURL) ? 'max_completion_tokens' : 'both') : style;
  if (resolved === 'max_completion_tokens') return { max_completion_tokens: cap };
  if (resolved === 'max_tokens') return { max_tokens: cap };
  return { max_completion_tokens: cap, max_tokens: cap };
}

/** The streamed Chat Completions request for one call. */
function chatRequest(
  input: CallModelInput,
  messages: ChatMessage[],
  tools: ToolSpec[],
  cap: number | null,
  capParameter: CapParameter,
  baseURL: string,
) {
  return {
    model: input.model,
    // An answer that only called tools has no text: sent as "", which every endpoint reads (some refuse null).
    messages: messages.map((m) => (m.role === 'assistant' && m.content == null ? { ...m, content: '' } : m)),
    stream: true as const,
    stream_options: { include_usage: true },
    ...(tools.length > 0 && {
      tools: tools.map((tool) => ({
        type: 'function' as const,
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      })),
    }),
    ...(input.effort && { reasoning_effort: input.effort as OpenAI.ReasoningEffort }),
    ...(cap !== null && capParameters(capParameter, baseURL, cap)),
  };
}

/** An endpoint that stopped sending an answer: retried as any other fault. */
function stallFailure(model: string, baseURL: string, problem: string): ApplicationFailure {
  const endpoint = endpointOf(baseURL);
  return ApplicationFailure.create({
    type: FAILURE.ModelTimeout,
    message: `${endpoint} ${problem} for ${model} (keep-alives and usage reports are not an answer)`,
    nonRetryable: false,
    details: [
      {
        endpoint,
        problem,
        check: "check the endpoint's health, or raise modelTimeoutSeconds for a model that thinks long",
      },
    ],
  });
}

/** What an attempt was billed once the endpoint accepted it: its input, and the answer so far or as reported. */
function billedSoFar(progress: StreamProgress | undefined, inputTokens: number): CallTokens {
  return {
    inputTokens: Math.max(progress?.reported?.inputTokens ?? 0, inputTokens),
    outputTokens: Math.max(progress?.reported?.outputTokens ?? 0, progress?.outputTokens ?? 0),
    ...cacheParts(progress?.reported ?? NO_TOKENS),
  };
}

/**
 * What a failed attempt throws, with what it was billed: the refusal of a web page for an answer as it is (nothing
 * was billed), a cancellation, a stall, or the endpoint's own fault.
 */
function attemptFailure(
  err: unknown,
  spent: CallTokens,
  why: {
    cancelled: boolean;
    stalled: { ms: number; flowing: boolean } | undefined;
    model: string;
    apiKey: string | undefined;
    baseURL: string;
  },
): Error {
  if (err instanceof ApplicationFailure) return err;
  if (why.cancelled)
    return new CancelledFailure('model call cancelled; the HTTP request was aborted', [billedDetail(spent)]);
  if (why.stalled !== undefined) {
    const { ms, flowing } = why.stalled;
    const problem = `${flowing ? 'stopped sending its answer' : 'sent no answer'} for ${Math.round(ms / 1000)} s`;
    return billedFailure(stallFailure(why.model, why.baseURL, problem), spent);
  }
  return billedFailure(toModelFailure(err, why.model, why.apiKey, why.baseURL), spent);
}

/**
 * One streamed request: the answer's cap goes in the parameter the endpoint reads, Deputy stops the stream at the
 * cap itself, and the activity heartbeats the answer's progress (live output) while tokens arrive. A stall is
 * counted from content, never from keep-alive comments or usage-only chunks: a request that brings no token of an
 * answer for `modelTimeoutSeconds` (the endpoint may be reading a long input before the first), or for the heartbeat
 * timeout once tokens flow, is abandoned and the call retried, as any other fault.
 */
export async function streamAnswer(
  { openai, apiKey, timeoutMs, capParameter }: RequestDeps,
  input: CallModelInput,
  messages: ChatMessage[],
  tools: ToolSpec[],
  cap: number | null,
  inputTokens: number,
): Promise<StreamedAnswer> {
  const context = Context.current();
  // What this attempt has been billed so far: once the endpoint accepts the request its input is paid for, and every
  // token of the answer that arrived, or what the endpoint reported when that is more (a stream cut or cancelled
  // after its usage came is billed as reported). Each heartbeat carries it, so an attempt that dies (a killed
  // worker, a heartbeat timeout) leaves it to the workflow in the timeout's last heartbeat.
  let opened = false;
  const billed = (): CallTokens => (opened ? billedSoFar(progress, inputTokens) : NO_TOKENS);
  const requestMs = timeoutMs?.() ?? 120_000;
  const flowingMs = Math.min(context.info.heartbeatTimeoutMs || 30_000, requestMs);
  const abort = new AbortController();
  const cancelled = context.cancellationSignal;
  const onCancel = () => abort.abort();
  cancelled.addEventListener('abort', onCancel);
  let progress: StreamProgress | undefined;
  let lastContentAt = Date.now();
  let beaten: StreamProgress | undefined;
  let stalledMs: number | undefined;
  const timer = setInterval(() => {
    const limit = (progress?.outputTokens ?? 0) > 0 ? flowingMs : requestMs;
    if (Date.now() - lastContentAt > limit) {
      stalledMs = limit;
      abort.abort();
      return;
    }
    if (progress === undefined || progress !== beaten) {
      beaten = progress;
      context.heartbeat({ ...(progress && liveOutput(progress)), ...billedDetail(billed()) });
    }
  }, HEARTBEAT_MS);
  try {
    const { data: stream, response } = await openai.chat.completions
      .create(chatRequest(input, messages, tools, cap, capParameter?.(input.model) ?? 'auto', openai.baseURL), {
        signal: abort.signal,
        maxRetries: 0,
        ...(timeoutMs && { timeout: timeoutMs() }),
      })
      .withResponse();
    const contentType = response.headers.get('content-type') ?? '';
    if (/html/i.test(contentType)) {
      abort.abort();
      throw htmlAnswerFailure(input.model, openai.baseURL, contentType);
    }
    opened = true;
    const { count } = encodingFor(input.model);
    const answer = await readStream(stream, {
      cap,
      count: (text) => countText(text, count),
      stop: () => abort.abort(),
      bound: possibleUsage(cap),
      onProgress: (next) => {
        if (next.outputTokens > (progress?.outputTokens ?? 0)) lastContentAt = Date.now();
        progress = next;
      },
    });
    // The client ends a stream it aborted quietly: a cancelled or stalled call must not pass for an answer.
    if (cancelled.aborted || stalledMs !== undefined) throw new Error('aborted');
    return answer;
  } catch (err) {
    const stalled = stalledMs === undefined ? undefined : { ms: stalledMs, flowing: (progress?.outputTokens ?? 0) > 0 };
    throw attemptFailure(err, billed(), {
      cancelled: cancelled.aborted,
      stalled,
      model: input.model,
      apiKey,
      baseURL: openai.baseURL,
    });
  } finally {
    clearInterval(timer);
    cancelled.removeEventListener('abort', onCancel);
  }
}
