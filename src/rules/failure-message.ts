/** Reading Temporal failure chains for people. Shared by workflow and client code: no Node built-ins. */
import { ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import { FAILURE, type FailureType } from '../contract/failures.js';
import type { LimitName } from '../contract/session.js';
import { callTokensOf, type CallTokens } from './usage.js';

/** The message at the root of a failure chain (the original error). */
export function rootMessage(err: unknown): string {
  let current: unknown = err;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

/** The first `ApplicationFailure` in a chain, of `type` when given. */
export function findFailure(err: unknown, type?: FailureType): ApplicationFailure | undefined {
  for (let current: unknown = err; current instanceof Error; current = current.cause) {
    if (current instanceof ApplicationFailure && (type === undefined || current.type === type)) return current;
  }
  return undefined;
}

/** The message of the first `ApplicationFailure` in a chain (the one that says what to fix), else the root's. */
export function failureMessage(err: unknown): string {
  return findFailure(err)?.message ?? rootMessage(err);
}

/** The limit a model call did not fit (`maxTokens` or `maxCostUsd`) when `err` says it was not made for that. */
export function budgetExceeded(err: unknown): Extract<LimitName, 'maxTokens' | 'maxCostUsd'> | null {
  const failure = findFailure(err, FAILURE.BudgetExceeded);
  if (!failure) return null;
  const limit = (failure.details?.[0] as { limit?: unknown } | undefined)?.limit;
  return limit === 'maxCostUsd' ? 'maxCostUsd' : 'maxTokens';
}

/**
 * What a model call that failed was billed for, as its activity recorded it: in its failure's details, or in its
 * last heartbeat when the attempt timed out (a killed worker sends no failure). `null` when nothing was billed.
 */
export function billedBy(err: unknown): CallTokens | null {
  for (let current: unknown = err; current instanceof Error; current = current.cause) {
    const details =
      current instanceof TimeoutFailure
        ? [current.lastHeartbeatDetails]
        : current instanceof ApplicationFailure || current instanceof CancelledFailure
          ? current.details
          : undefined;
    const billed = callTokensOf((details?.[0] as { billed?: unknown } | undefined)?.billed);
    if (billed) return billed;
  }
  return null;
}
