/**
 * The share of a run's input a provider's prompt cache serves: the scripted model bills as OpenAI's does (its cache
 * serves a prompt's prefix sent before, from 1,024 tokens, in steps of 128), its usage counted as Deputy's tokenizer
 * counts it. A run whose prompts keep their prefix from turn to turn has most of its input served from the cache.
 */
import type { ScriptedModelServer } from '../src/testing/scripted-model.js';

/** Input tokens a run's calls were billed, and how many of them the cache served. */
export interface CacheShare {
  inputTokens: number;
  cachedTokens: number;
  /** cached ÷ input, to three places. */
  share: number;
}

/** Runs `run` with the scripted model's prompt cache on and its usage counted; the model as it was after. */
export async function withPromptCache<T>(model: ScriptedModelServer, run: () => Promise<T>): Promise<T> {
  const before = model.behaviour;
  model.behaviour = { ...before, usage: 'counted', promptCache: true };
  try {
    return await run();
  } finally {
    model.behaviour = before;
  }
}

/** The share of the input the cache served to the calls whose prompt names `task` (a run's turns and summaries). */
export function cacheShare(model: ScriptedModelServer, task: string): CacheShare {
  let inputTokens = 0;
  let cachedTokens = 0;
  for (const request of model.requests) {
    if (!request.billed || !JSON.stringify(request.body.messages).includes(task)) continue;
    inputTokens += request.billed.prompt_tokens;
    cachedTokens += request.billed.prompt_tokens_details?.cached_tokens ?? 0;
  }
  return {
    inputTokens,
    cachedTokens,
    share: inputTokens > 0 ? Math.round((cachedTokens / inputTokens) * 1000) / 1000 : NaN,
  };
}
