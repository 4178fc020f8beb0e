/**
 * The baseline's activities: the same HTTP call to the same scripted model through the same `openai` client as
 * Deputy's `callModel`, and the same 2 KB page, with none of Deputy's bookkeeping around them.
 */
import type OpenAI from 'openai';
import { pageText } from '../../src/testing/pages.js';

/** One chat message, as the baseline sends it. */
export interface BaselineMessage {
  role: 'user' | 'assistant' | 'tool';
  content: string;
  tool_call_id?: string;
}

/** What a baseline model call returns. */
export interface BaselineReply {
  content: string | null;
  toolCalls: number;
}

/** Builds the baseline's activities around one `openai` client. */
export function createBaselineActivities(openai: OpenAI) {
  return {
    async chat(messages: BaselineMessage[]): Promise<BaselineReply> {
      const completion = await openai.chat.completions.create(
        { model: 'bench-model', messages: messages as OpenAI.Chat.ChatCompletionMessageParam[] },
        { maxRetries: 0 },
      );
      const message = completion.choices[0]?.message;
      return { content: message?.content ?? null, toolCalls: message?.tool_calls?.length ?? 0 };
    },
    async fetchPage(page: number): Promise<string> {
      return pageText(page);
    },
  };
}

export type BaselineActivities = ReturnType<typeof createBaselineActivities>;
