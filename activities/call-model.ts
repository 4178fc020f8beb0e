import type OpenAI from 'openai';
import { FAILURE } from '../src/contract/failures.js';
import type {
  CallContext,
  CallModelInput,
  CallModelResult,
  SummarizeContextInput,
  SummarizeContextResult,
} from '../src/contract/activities.js';
import { fitCall } from '../src/rules/budget.js';
import { callCostMicroUsd, microToUsd } from '../src/rules/usage.js';
import type { ModelPrice } from '../src/contract/composition.js';
import type { Span } from '@opentelemetry/api';
import { captureContent, captured, modelCallSpan, recordModelCall } from './telemetry.js';
import { cutText, DEFAULT_PAYLOAD_LIMITS } from '../src/rules/payloads.js';
import { withHeartbeat } from './heartbeat.js';
import { toModelFailure } from './model-errors.js';
import { countCallTokens, loadEncoding } from './tokens.js';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { RunTool, ToolSpec } from '../src/contract/tools.js';
import type { ChatMessage } from '../src/contract/dialogue.js';
import { activityInfo } from '@temporalio/activity';
import type { ContextCache } from './context-cache.js';
import { compactionPromptFromMessages, messagesAfterCompaction } from '../src/rules/compaction.js';

/** Tool calls one answer may make; more would not fit in one history payload (R1.8). */
export const MAX_TOOL_CALLS_PER_ANSWER = 64;

/** Dependencies of the `callModel` activity. */
export interface CallModelDeps {
  openai: OpenAI;
  /** Used only to redact the key from error text; never logged. */
  apiKey: string | undefined;
  /** How long one request may take, read at each call (the config can change while the worker runs). */
  timeoutMs?: () => number;
  /** Longest answer text written to history, in UTF-8 bytes (R1.8), read at each call. */
  maxTextBytes?: () => number;
  /** The spec of a tool a call names without one (the worker's registered tools and the steering tools). */
  toolSpec?: (name: string) => ToolSpec | undefined;
  /** The dialogues this worker last sent, per run, so a call's input carries only what is new (issue 12). */
  contexts?: ContextCache;
  /** A model's price in force, for the cost a call's span reports (issue 15). */
  price?: (model: string) => ModelPrice | undefined;
}

/** Where a run's dialogue is kept: its workflow id as Temporal records it, and its chain of segments. */
function contextKey(context: CallContext): string | undefined {
  const execution = activityInfo().workflowExecution;
  return execution && `${execution.workflowId}/${context.chain ?? execution.runId}`;
}

/** The whole dialogue of a call that sent only what is new since the run's last call (issue 12). */
export function assemble(
  input: Pick<CallModelInput, 'messages' | 'context'>,
  contexts: ContextCache | undefined,
): ChatMessage[] {
  const { context } = input;
  if (!context) return input.messages;
  const run = contextKey(context);
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

/** Builds the `callModel` activity: one Chat Completions request with tools, heartbeating, abortable (R1.1, R1.2). */
export function createCallModel({ openai, apiKey, timeoutMs, maxTextBytes, toolSpec, contexts, price }: CallModelDeps) {
  /** Newer compositions name their tools; the worker supplies what the model sees of each. */
  const specOf = (tool: string | RunTool): ToolSpec => {
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
  };
  return async function callModel(input: CallModelInput): Promise<CallModelResult> {
    return modelCallSpan(input.model, 'chat', (span) => call(input, span));
  };

  async function call(input: CallModelInput, span: Span): Promise<CallModelResult> {
    const tools = input.tools.map(specOf);
    const messages = assemble(input, contexts);
    // R2.13: count the input and ask for no more answer than the budget can pay for; a call that cannot fit is not
    // made (non-retryable: nothing about it will change on a retry).
    let maxCompletionTokens: number | null = null;
    if (input.budget) {
      await loadEncoding(input.model);
      const { estimate } = countCallTokens(input.model, messages, tools);
      const fit = fitCall(estimate, input.budget);
      if (!fit.ok) {
        throw ApplicationFailure.create({
          type: FAILURE.BudgetExceeded,
          message: `not calling ${input.model}: ${fit.message} (${fit.limit})`,
          nonRetryable: true,
          details: [{ limit: fit.limit, inputTokens: estimate }],
        });
      }
      maxCompletionTokens = fit.maxCompletionTokens;
    }
    return withHeartbeat(async (signal) => {
      let completion: OpenAI.Chat.Completions.ChatCompletion;
      try {
        completion = await openai.chat.completions.create(
          {
            model: input.model,
            messages,
            ...(tools.length > 0 && {
              tools: tools.map((tool) => ({
                type: 'function' as const,
                function: { name: tool.name, description: tool.description, parameters: tool.parameters },
              })),
            }),
            ...(input.effort && { reasoning_effort: input.effort as OpenAI.ReasoningEffort }),
            ...(maxCompletionTokens !== null && { max_completion_tokens: maxCompletionTokens }),
          },
          { signal, maxRetries: 0, ...(timeoutMs && { timeout: timeoutMs() }) },
        );
      } catch (err) {
        if (signal.aborted) throw new CancelledFailure('model call cancelled; the HTTP request was aborted');
        throw toModelFailure(err, input.model, apiKey);
      }
      const choice = completion.choices?.[0];
      if (!choice) throw toModelFailure(new Error('the answer has no choices'), input.model, apiKey);
      // R1.8: an answer past the budget is cut here, so the result always fits in history and the paid call is
      // never repeated because it was too big.
      const limit = maxTextBytes?.() ?? DEFAULT_PAYLOAD_LIMITS.maxTextBytes;
      const calls = (choice.message.tool_calls ?? []).filter((call) => call.type === 'function');
      const kept = calls.slice(0, MAX_TOOL_CALLS_PER_ANSWER);
      const dropped = calls.length - kept.length;
      const text = choice.message.content ?? null;
      const content =
        dropped > 0
          ? `${text ?? ''}\n[${dropped} more tool calls dropped: past the ${MAX_TOOL_CALLS_PER_ANSWER} one answer may make]`
          : text;
      const result: CallModelResult = {
        content: content === null ? null : cutText(content, limit),
        // The arguments of all calls share one budget, so the whole result stays bounded however many there are.
        toolCalls: kept.map((call) => ({
          id: cutText(call.id, 256),
          name: cutText(call.function.name, 256),
          arguments: cutText(call.function.arguments, Math.max(1024, Math.floor(limit / kept.length))),
        })),
        // An endpoint that reports no usage is charged an estimate, so limits still hold.
        inputTokens: completion.usage?.prompt_tokens ?? estimateTokens(JSON.stringify(messages)),
        outputTokens: completion.usage?.completion_tokens ?? estimateTokens(JSON.stringify(choice.message)),
        finishReason: choice.finish_reason ?? null,
      };
      const modelPrice = price?.(input.model);
      recordModelCall(span, {
        responseModel: completion.model,
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
          'gen_ai.output.messages': captured(choice.message),
        });
      }
      return result;
    });
  }
}

/**
 * Builds `summarizeContext` (R3.4): one model call without tools that writes a child's background. As
 * `compactSession` (R1.6) with `compact`, it writes the prompt from the run's dialogue this worker holds, and keeps
 * the dialogue as it reads after the compaction, so the run's next call sends only what is new (issue 12).
 */
export function createSummarizeContext(callModel: ReturnType<typeof createCallModel>, contexts?: ContextCache) {
  return async function summarizeContext(input: SummarizeContextInput): Promise<SummarizeContextResult> {
    const dialogue = input.compact ? assemble(input, contexts) : undefined;
    const reply = await callModel({
      model: input.model,
      effort: null,
      messages: dialogue && input.compact ? compactionPromptFromMessages(dialogue, input.compact) : input.messages,
      tools: [],
      ...(input.budget && { budget: input.budget }),
    });
    if (!reply.content?.trim()) {
      throw ApplicationFailure.create({
        type: FAILURE.ModelEmptyAnswer,
        message: `${input.model} returned an empty background summary`,
        nonRetryable: false,
      });
    }
    const summary = reply.content.trim();
    const run = input.context && contextKey(input.context);
    if (dialogue && input.compact && input.context && run !== undefined) {
      const after = messagesAfterCompaction(dialogue, input.compact, summary);
      contexts?.set(run, input.context.seq, after, after);
    }
    return { summary, inputTokens: reply.inputTokens, outputTokens: reply.outputTokens };
  };
}

/** A rough token count (4 characters a token) for endpoints that report no usage. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
