/** R2.15 R1.2: how a workflow retries a model call, attempt by attempt, and fits a retry to what is left. */
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ServerFailure,
  TimeoutFailure,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { modelRetryDelay } from '../src/rules/model-retry.js';
import { lessBilled } from '../src/rules/budget.js';

const failed = (cause: Error) =>
  new ActivityFailure('activity failed', 'callModel', '2', 'MAXIMUM_ATTEMPTS_REACHED', 'worker', cause);
const retryable = (details?: unknown[]) =>
  failed(ApplicationFailure.create({ type: 'ModelCall.ServerError', nonRetryable: false, details }));

describe('R2.15 R1.2 a model call is retried by its workflow', () => {
  it('R1.2 backoff doubles from 1 s to at most 1 min, for 10 attempts (5 for a summary)', () => {
    const err = retryable();
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9].map((attempt) => modelRetryDelay(err, attempt))).toEqual([
      1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000,
    ]);
    expect(modelRetryDelay(err, 10)).toBeNull();
    expect(modelRetryDelay(err, 4, 5)).toBe(8000);
    expect(modelRetryDelay(err, 5, 5)).toBeNull();
  });

  it('R1.2 the wait an endpoint asks for wins over the backoff, never past 1 min; a nonsense wait is ignored', () => {
    expect(modelRetryDelay(retryable([{ retryAfterMs: 7000 }]), 1)).toBe(7000);
    expect(modelRetryDelay(retryable([{ retryAfterMs: 3_600_000 }]), 1)).toBe(60_000);
    expect(modelRetryDelay(retryable([{ retryAfterMs: -5 }]), 3)).toBe(4000);
    expect(modelRetryDelay(retryable([{ retryAfterMs: 0 }]), 3)).toBe(4000);
    expect(modelRetryDelay(retryable([{ retryAfterMs: '9' }]), 2)).toBe(2000);
    expect(modelRetryDelay(retryable([null]), 2)).toBe(2000);
  });

  it('R1.2 refused for good, cancelled, or past the deadline: not retried; a stalled or dead attempt is', () => {
    const refused = failed(ApplicationFailure.create({ type: 'ModelCall.Rejected', nonRetryable: true }));
    expect(modelRetryDelay(refused, 1)).toBeNull();
    expect(modelRetryDelay(failed(new CancelledFailure('cancelled')), 1)).toBeNull();
    expect(modelRetryDelay(new CancelledFailure('cancelled'), 1)).toBeNull();
    expect(modelRetryDelay(new Error('not an activity'), 1)).toBeNull();
    expect(modelRetryDelay(failed(new TimeoutFailure('late', undefined, 'SCHEDULE_TO_CLOSE')), 1)).toBeNull();
    expect(modelRetryDelay(failed(new TimeoutFailure('late', undefined, 'SCHEDULE_TO_START')), 1)).toBeNull();
    expect(modelRetryDelay(failed(new TimeoutFailure('quiet', undefined, 'HEARTBEAT')), 2)).toBe(2000);
    expect(modelRetryDelay(failed(new TimeoutFailure('slow', undefined, 'START_TO_CLOSE')), 1)).toBe(1000);
    // Only Temporal's own timeout is read as one: a server failure that carries the same field is final.
    const lookalike = Object.assign(new ServerFailure('server', false), { timeoutType: 'HEARTBEAT' });
    expect(modelRetryDelay(failed(lookalike), 1)).toBeNull();
  });

  it('R2.15 a retry is fitted to its budget less what the attempts before it were billed, never below nothing', () => {
    const price = { inputMicroUsdPerMTok: 1_000_000, outputMicroUsdPerMTok: 2_000_000 };
    const budget = { tokens: 1000, costMicroUsd: 5000, price, maxCompletionTokens: 64 };
    expect(lessBilled(budget, { inputTokens: 300, outputTokens: 100 })).toEqual({
      tokens: 600,
      costMicroUsd: 4500,
      price,
      maxCompletionTokens: 64,
    });
    expect(lessBilled(budget, { inputTokens: 3000, outputTokens: 0 })).toMatchObject({ tokens: 0, costMicroUsd: 2000 });
    expect(lessBilled(budget, { inputTokens: 0, outputTokens: 3000 })).toMatchObject({ tokens: 0, costMicroUsd: 0 });
    expect(lessBilled({ tokens: null, costMicroUsd: null, price }, { inputTokens: 10, outputTokens: 10 })).toEqual({
      tokens: null,
      costMicroUsd: null,
      price,
    });
  });
});
