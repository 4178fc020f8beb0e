/** Budget helpers of model calls on the workflow side (R2.13). Deterministic code only. */
import { FAILURE } from '../src/contract/failures.js';
import { ApplicationFailure } from '@temporalio/workflow';
import type { LimitName } from '../src/contract/run.js';
import type { ChatMessage } from '../src/contract/session.js';
import type { ToolSpec } from '../src/contract/tools.js';
import { utf8Bytes } from '../src/rules/payloads.js';

/** Failure type of a call the `callModel` activity did not make because its worst case does not fit. */
const BUDGET_EXCEEDED_TYPE = FAILURE.BudgetExceeded;

/** The limit a call did not fit (`maxTokens` or `maxCostUsd`), when `err` says it was not made for that reason. */
export function budgetExceeded(err: unknown): Extract<LimitName, 'maxTokens' | 'maxCostUsd'> | null {
  for (let current: unknown = err; current instanceof Error; current = current.cause) {
    if (current instanceof ApplicationFailure && current.type === BUDGET_EXCEEDED_TYPE) {
      const limit = (current.details?.[0] as { limit?: unknown } | undefined)?.limit;
      return limit === 'maxCostUsd' ? 'maxCostUsd' : 'maxTokens';
    }
  }
  return null;
}

/**
 * An upper bound of the tokens the `callModel` activity will count for these messages, margin included, without a
 * tokenizer in the sandbox: a byte-level BPE token is at least one byte, and the activity's widest margin is ×1.25
 * plus 16 tokens (activities/tokens.ts).
 */
export function upperBoundTokens(messages: readonly ChatMessage[], tools: readonly ToolSpec[] = []): number {
  let bytes = 3;
  for (const message of messages) bytes += 4 + utf8Bytes(JSON.stringify(message));
  if (tools.length > 0) bytes += utf8Bytes(JSON.stringify(tools));
  return Math.ceil(bytes * 1.25) + 16;
}
