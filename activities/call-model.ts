import type OpenAI from 'openai';
import { FAILURE } from '../src/contract/failures.js';
import type {
  CallModelInput,
  CallModelResult,
  SummarizeContextInput,
  SummarizeContextResult,
} from '../src/contract/activities.js';
import { fitCall } from '../src/rules/call-budget.js';
import { cacheParts, callCostMicroUsd, callTokensOf, microToUsd, NO_TOKENS } from '../src/rules/usage.js';
import type { ModelPrice } from '../src/contract/composition.js';
import type { Span } from '@opentelemetry/api';
import { captureContent, captured, modelCallSpan, recordModelCall } from './telemetry.js';
import { cutText, DEFAULT_PAYLOAD_LIMITS } from '../src/rules/payloads.js';
import { toModelFailure } from './model-errors.js';
import { countCallTokens, loadEncoding } from './tokens.js';
import { billedFailure, streamAnswer } from './model-request.js';
import type { CapParameter } from '../src/config/schema.js';
import { ApplicationFailure } from '@temporalio/common';
import type { RunTool, ToolSpec } from '../src/contract/tools.js';
import type { ChatMessage } from '../src/contract/dialogue.js';
import type { ToolCall } from '../src/contract/session.js';
import { Context } from '@temporalio/activity';
import { knownCallerChain } from './caller-chain.js';
import type { ContextCache } from './context-cache.js';
import { compactionPromptFromMessages, messagesAfterCompaction } from '../src/rules/compaction.js';

/** Tool calls one answer may make; more would not fit in one history payload. */
const MAX_TOOL_CALLS_PER_ANSWER = 64;

/** Where a model's calls go: a client of its endpoint, and that endpoint's key (only to redact it from error text). */
export interface Endpoint {
  openai: OpenAI;
  apiKey: string | undefined;
}

/** Dependencies of the `callModel` activity. */
export interface CallModelDeps {
  openai: OpenAI;
  /** Used only to redact the key from error text; never logged. */
  apiKey: string | undefined;
  /** The endpoint of a model another provider serves (`providers` in the config); absent: `openai`'s. */
  endpointFor?: (model: string) => Endpoint | undefined;
  /** How long one request may take, read at each call (the config can change while the worker runs). */
  timeoutMs?: () => number;
  /** Longest answer text written to history, in UTF-8 bytes, read at each call. */
  maxTextBytes?: () => number;
  /** The spec of a tool a call names without one (the worker's registered tools and the steering tools). */
  toolSpec?: (name: string) => ToolSpec | undefined;
  /** The dialogues this worker last sent, per run, so a call's input carries only what is new. */
  contexts?: ContextCache;
  /** A model's price in force, for the cost a call's span reports. */
  price?: (model: string) => ModelPrice | undefined;
  /** Which parameter carries a model's answer cap to the endpoint, read at each call. @default 'auto' */
  capParameter?: (model: string) => CapParameter;
  /** The most times Deputy's count of a model's input its endpoint may bill it (see the config), read at each call. */
  inputCountFactor?: (model: string) => number | undefined;
  /** Seals each tool call the model made, so `runTool` runs only those (see `tool-call-seal.ts`). */
  sealToolCall?: (call: ToolCall) => string | undefined;
}

/**
 * Where a run's dialogue is kept: its chain as Temporal records it (read before the call, when its grant was checked),
 * so a run that continued as new goes on from the dialogue of its previous segment.
 */
function contextKey(): string | undefined {
  const chain = knownCallerChain();
  return chain && `${chain.workflowId}/${chain.firstRunId}`;
}

/** The whole dialogue of a call that sent only what is new since the run's last call. */
function assemble(
  input: Pick<CallModelInput, 'messages' | 'context'>,
  contexts: ContextCache | undefined,
): ChatMessage[] {
  const { context } = input;
  if (!context) return input.messages;
  const run = contextKey();
  let messages = input.messages;
  if (context.baseSeq !== undefined && context.base !== undefined) {
    const base = run === undefined ? undefined : contexts?.get(run, context.baseSeq, context.base);
    if (!base) {
      throw ApplicationFailure.create({
        type: FAILURE.ContextUnknown,
        message: `this worker does not hold the first ${context.base} messages of call ${context.baseSeq}; send the whole dialogue`,
        nonRetryable: true,
      });
    }
    messages = [...base, ...input.messages];
  }
  if (run !== undefined) contexts?.set(run, context.seq, messages, input.messages, context.baseSeq);
  return messages;
}

/** Builds the `callModel` activity: one Chat Completions request with tools, heartbeating, abortable. */
export function createCallModel(deps: CallModelDeps) {
  const { maxTextBytes, toolSpec, contexts, price, inputCountFactor } = deps;

  return async function callModel(input: CallModelInput): Promise<CallModelResult> {
    return modelCallSpan(input.model, 'chat', (span) => call(input, span));
  };

  async function call(input: CallModelInput, span: Span): Promise<CallModelResult> {
    const tools = input.tools.map((tool) => specOf(tool, toolSpec));
    const messages = assemble(input, contexts);
    // Count the input and ask for no more answer than the budget can pay for; a call that cannot fit is not
    // made (non-retryable: nothing about it will change on a retry).
    await loadEncoding(input.model);
    const { counted, estimate } = countCallTokens(input.model, messages, tools, inputCountFactor?.(input.model));
    const maxCompletionTokens = completionCap(input, estimate);
    const endpoint = deps.endpointFor?.(input.model) ?? deps;
    const streamed = await streamAnswer({ ...deps, ...endpoint }, input, messages, tools, maxCompletionTokens, counted);
    if (streamed.impossibleUsage) noteImpossibleUsage(input.model, streamed.impossibleUsage);
    // Both directions are debited at the larger of what the endpoint reports and what Deputy counted: an
    // endpoint that reports too little (or nothing) never spends past the budget unseen, and one whose tokenizer
    // counts more than Deputy's is paid what it bills.
    // What the endpoint says its prompt cache served (or took) is part of its input either way: input Deputy
    // counted past the report is priced uncached.
    const reported = streamed.reported ?? NO_TOKENS;
    const spent = {
      inputTokens: Math.max(reported.inputTokens, counted),
      outputTokens: Math.max(reported.outputTokens, streamed.countedOutput),
      ...cacheParts(reported),
    };
    if (streamed.content === null && streamed.toolCalls.length === 0 && streamed.finishReason === null) {
      throw billedFailure(
        toModelFailure(
          new Error('the answer stream ended without an answer'),
          input.model,
          endpoint.apiKey,
          endpoint.openai.baseURL,
        ),
        spent,
      );
    }
    // An answer past the budget is cut here, so the result always fits in history and the paid call is
    // never repeated because it was too big.
    const limit = maxTextBytes?.() ?? DEFAULT_PAYLOAD_LIMITS.maxTextBytes;
    // What the endpoint billed, for reconciling with its invoice: its report, Deputy's count where it made none.
    const usage = {
      ...spent,
      billed: streamed.reported ?? { inputTokens: counted, outputTokens: streamed.countedOutput },
    };
    if (streamed.reported) {
      noteDisagreement(input.model, streamed.reported, {
        inputTokens: counted,
        outputTokens: streamed.countedOutput,
      });
    }
    const result: CallModelResult = { ...answerOf(streamed, limit, deps.sealToolCall), ...usage };
    const modelPrice = price?.(input.model);
    recordModelCall(span, {
      responseModel: streamed.model ?? input.model,
      inputTokens: result.inputTokens,
      outputTokens: result.outputTokens,
      costUsd: modelPrice && microToUsd(callCostMicroUsd(result, modelPrice)),
      finishReason: result.finishReason,
      toolCalls: result.toolCalls.length,
      maxCompletionTokens,
    });
    if (captureContent()) {
      span.setAttributes({
        'gen_ai.input.messages': captured(messages),
        'gen_ai.output.messages': captured({
          role: 'assistant',
          content: streamed.content,
          tool_calls: streamed.toolCalls.slice(0, MAX_TOOL_CALLS_PER_ANSWER),
        }),
      });
    }
    return result;
  }
}

/** What the model sees of a tool: the composition's spec, else the one this worker registered. */
function specOf(tool: string | RunTool, toolSpec: CallModelDeps['toolSpec']): ToolSpec {
  if (typeof tool !== 'string' && tool.description !== undefined && tool.parameters !== undefined) {
    return tool as ToolSpec;
  }
  const name = typeof tool === 'string' ? tool : tool.name;
  const spec = toolSpec?.(name);
  if (spec) return spec;
  throw ApplicationFailure.create({
    type: FAILURE.ToolUnknown,
    message: `tool "${name}" is not registered on this worker; register it (createDeputyWorker({ tools }))`,
    nonRetryable: true,
  });
}

/**
 * The most answer the budget can pay for once the input is counted, `null` with no budget; a call that cannot fit
 * is not made (non-retryable: nothing about it will change on a retry).
 */
function completionCap(input: CallModelInput, estimate: number): number | null {
  if (!input.budget) return null;
  const fit = fitCall(estimate, input.budget);
  if (fit.ok) return fit.maxCompletionTokens;
  throw ApplicationFailure.create({
    type: FAILURE.BudgetExceeded,
    message: `not calling ${input.model}: ${fit.message} (${fit.limit})`,
    nonRetryable: true,
    details: [{ limit: fit.limit, inputTokens: estimate }],
  });
}

/**
 * The answer as history keeps it: text past the budget cut, at most MAX_TOOL_CALLS_PER_ANSWER calls (the rest
 * named as dropped), their arguments sharing one budget so the result stays bounded however many there are.
 */
function answerOf(
  streamed: Awaited<ReturnType<typeof streamAnswer>>,
  limit: number,
  sealToolCall: CallModelDeps['sealToolCall'],
): Pick<CallModelResult, 'content' | 'toolCalls' | 'finishReason'> {
  const kept = streamed.toolCalls.slice(0, MAX_TOOL_CALLS_PER_ANSWER);
  const dropped = streamed.toolCalls.length - kept.length;
  const text = streamed.content;
  const content =
    dropped > 0
      ? `${text ?? ''}\n[${dropped} more tool calls dropped: past the ${MAX_TOOL_CALLS_PER_ANSWER} one answer may make]`
      : text;
  return {
    content: content === null ? null : cutText(content, limit),
    toolCalls: kept.map((made) => {
      const call = {
        id: cutText(made.id, 256),
        name: cutText(made.name, 256),
        arguments: cutText(made.arguments, Math.max(1024, Math.floor(limit / kept.length))),
      };
      const seal = sealToolCall?.(call);
      return seal === undefined ? call : { ...call, seal };
    }),
    finishReason: streamed.finishReason,
  };
}

/** The models already warned of for impossible usage reports. */
const warnedImpossible = new Set<string>();

/**
 * Counts, and logs once per model, an endpoint that reported impossible usage — no token count, or more than the
 * request it was sent could use: ignored, and Deputy's count debited (an answer past the cap sent, at the cap).
 */
function noteImpossibleUsage(model: string, usage: unknown): void {
  const context = Context.current();
  context.metricMeter
    .createCounter('deputy_impossible_usage_reports', '1', 'Model calls whose usage report was impossible (ignored)')
    .add(1, { model });
  if (warnedImpossible.has(model)) return;
  warnedImpossible.add(model);
  context.log.warn(
    `${model} reported impossible usage (${cutText(JSON.stringify(usage) ?? String(usage), 200)}): no token count, or more than the request it was sent could use; it is ignored and Deputy's count debited, an answer past the cap at the cap (said once per model; deputy_impossible_usage_reports counts each call)`,
  );
}

/** Reported usage that disagrees with Deputy's count past this factor (either way) is logged and counted. */
const DISAGREEMENT_FACTOR = 1.5;

/** The models and directions already warned of, so a worker's log says it once, not at every call. */
const warned = new Set<string>();

/**
 * Counts (and logs once per model and direction) an endpoint whose reported usage is far from what Deputy counted:
 * a tokenizer apart, or worse.
 */
function noteDisagreement(
  model: string,
  reported: { inputTokens: number; outputTokens: number },
  counted: { inputTokens: number; outputTokens: number },
): void {
  const far = (a: number, b: number) => Math.max(a, b) > 16 && Math.max(a, b) > DISAGREEMENT_FACTOR * Math.min(a, b);
  for (const direction of ['input', 'output'] as const) {
    const r = reported[`${direction}Tokens`];
    const c = counted[`${direction}Tokens`];
    if (!far(r, c)) continue;
    const context = Context.current();
    if (!warned.has(`${model} ${direction}`)) {
      warned.add(`${model} ${direction}`);
      context.log.warn(
        `${model} reported ${r} ${direction} tokens where Deputy counted ${c}; the larger is debited (said once per model; deputy_usage_disagreements counts each call)`,
      );
    }
    context.metricMeter
      .createCounter('deputy_usage_disagreements', '1', 'Model calls whose reported usage is far from the count')
      .add(1, { model, direction });
  }
}

/**
 * Builds `summarizeContext`: one model call without tools that writes a child's background. As
 * `compactSession` with `compact`, it writes the prompt from the run's dialogue this worker holds, and keeps
 * the dialogue as it reads after the compaction, so the run's next call sends only what is new.
 */
export function createSummarizeContext(callModel: ReturnType<typeof createCallModel>, contexts?: ContextCache) {
  return async function summarizeContext(input: SummarizeContextInput): Promise<SummarizeContextResult> {
    const dialogue = input.compact ? assemble(input, contexts) : undefined;
    const reply = await callModel({
      model: input.model,
      effort: null,
      messages: dialogue && input.compact ? compactionPromptFromMessages(dialogue, input.compact) : input.messages,
      tools: [],
      grant: input.grant,
      ...(input.budget && { budget: input.budget }),
    });
    if (!reply.content?.trim()) {
      // Paid for all the same: the retry debits it with its own answer, or the workflow with the failure.
      throw billedFailure(
        ApplicationFailure.create({
          type: FAILURE.ModelEmptyAnswer,
          message: `${input.model} returned an empty background summary`,
          nonRetryable: false,
        }),
        callTokensOf(reply) ?? NO_TOKENS,
      );
    }
    const summary = reply.content.trim();
    const run = input.context && contextKey();
    if (dialogue && input.compact && input.context && run !== undefined) {
      const after = messagesAfterCompaction(dialogue, input.compact, summary);
      contexts?.set(run, input.context.seq, after, after);
    }
    return { summary, ...(callTokensOf(reply) ?? NO_TOKENS), billed: reply.billed };
  };
}
