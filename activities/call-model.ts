import type OpenAI from 'openai';
import type {
  CallModelInput,
  CallModelResult,
  SummarizeContextInput,
  SummarizeContextResult,
} from '../src/activity-types.js';
import { withHeartbeat } from './heartbeat.js';
import { toModelFailure } from './model-errors.js';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';

/** Dependencies of the `callModel` activity. */
export interface CallModelDeps {
  openai: OpenAI;
  /** Used only to redact the key from error text; never logged. */
  apiKey: string | undefined;
  /** How long one request may take, read at each call (the config can change while the worker runs). */
  timeoutMs?: () => number;
}

/** Builds the `callModel` activity: one Chat Completions request with tools, heartbeating, abortable (R1.1, R1.2). */
export function createCallModel({ openai, apiKey, timeoutMs }: CallModelDeps) {
  return async function callModel(input: CallModelInput): Promise<CallModelResult> {
    return withHeartbeat(async (signal) => {
      let completion: OpenAI.Chat.Completions.ChatCompletion;
      try {
        completion = await openai.chat.completions.create(
          {
            model: input.model,
            messages: input.messages,
            ...(input.tools.length > 0 && {
              tools: input.tools.map((tool) => ({
                type: 'function' as const,
                function: { name: tool.name, description: tool.description, parameters: tool.parameters },
              })),
            }),
            ...(input.effort && { reasoning_effort: input.effort as OpenAI.ReasoningEffort }),
          },
          { signal, maxRetries: 0, ...(timeoutMs && { timeout: timeoutMs() }) },
        );
      } catch (err) {
        if (signal.aborted) throw new CancelledFailure('model call cancelled; the HTTP request was aborted');
        throw toModelFailure(err, input.model, apiKey);
      }
      const choice = completion.choices?.[0];
      if (!choice) throw toModelFailure(new Error('the answer has no choices'), input.model, apiKey);
      return {
        content: choice.message.content ?? null,
        toolCalls: (choice.message.tool_calls ?? [])
          .filter((call) => call.type === 'function')
          .map((call) => ({ id: call.id, name: call.function.name, arguments: call.function.arguments })),
        // An endpoint that reports no usage is charged an estimate, so limits still hold.
        inputTokens: completion.usage?.prompt_tokens ?? estimateTokens(JSON.stringify(input.messages)),
        outputTokens: completion.usage?.completion_tokens ?? estimateTokens(JSON.stringify(choice.message)),
        finishReason: choice.finish_reason ?? null,
      };
    });
  };
}

/** Builds `summarizeContext` (R3.4): one model call without tools that writes a child's background. */
export function createSummarizeContext(callModel: ReturnType<typeof createCallModel>) {
  return async function summarizeContext(input: SummarizeContextInput): Promise<SummarizeContextResult> {
    const reply = await callModel({ model: input.model, effort: null, messages: input.messages, tools: [] });
    if (!reply.content?.trim()) {
      throw ApplicationFailure.create({
        type: 'ModelCall.EmptyAnswer',
        message: `${input.model} returned an empty background summary`,
        nonRetryable: false,
      });
    }
    return { summary: reply.content.trim(), inputTokens: reply.inputTokens, outputTokens: reply.outputTokens };
  };
}

/** A rough token count (4 characters a token) for endpoints that report no usage. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
