/** How a workflow retries a model call, attempt by attempt. Shared by workflow code: no Node built-ins. */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, TimeoutType } from '@temporalio/common';

/** How the workflow retries a model call, attempt by attempt; Temporal retries tool calls with the same policy. */
export const MODEL_CALL_RETRY = {
  initialIntervalMs: 1000,
  backoffCoefficient: 2,
  maximumIntervalMs: 60_000,
  maximumAttempts: 10,
} as const;

/**
 * The wait before the next attempt of a model call whose attempt `attempt` failed with `err`, or `null` when it is
 * not retried: cancelled, refused for good (a non-retryable failure, a deadline), or out of attempts. The wait the
 * endpoint asked for (`retry-after`) wins over the backoff, up to the backoff's cap.
 */
export function modelRetryDelay(
  err: unknown,
  attempt: number,
  maximumAttempts: number = MODEL_CALL_RETRY.maximumAttempts,
): number | null {
  if (attempt >= maximumAttempts || !(err instanceof ActivityFailure)) return null;
  const { cause } = err;
  const { initialIntervalMs, backoffCoefficient, maximumIntervalMs } = MODEL_CALL_RETRY;
  const backoff = Math.min(initialIntervalMs * backoffCoefficient ** (attempt - 1), maximumIntervalMs);
  if (cause instanceof ApplicationFailure) {
    if (cause.nonRetryable) return null;
    const asked = (cause.details?.[0] as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
    // Never longer than the backoff's own cap: a reply cannot park the run.
    return typeof asked === 'number' && asked > 0 ? Math.min(asked, maximumIntervalMs) : backoff;
  }
  // An attempt that stopped answering (or whose worker died) is retried; the run's deadline is final.
  if (cause instanceof TimeoutFailure) {
    const { timeoutType } = cause;
    return timeoutType === TimeoutType.START_TO_CLOSE || timeoutType === TimeoutType.HEARTBEAT ? backoff : null;
  }
  return null;
}
