/** R2.15 R1.2: how a workflow retries a model call, attempt by attempt, and fits a retry to what is left. */
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  ServerFailure,
  TimeoutFailure,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { duration, faultKind, ModelChain, modelFault, ModelRetries } from '../src/rules/model-retry.js';
import { lessBilled } from '../src/rules/call-budget.js';
import { parseConfig } from '../src/config/schema.js';

const failed = (cause: Error) =>
  new ActivityFailure('activity failed', 'callModel', '2', 'MAXIMUM_ATTEMPTS_REACHED', 'worker', cause);
const retryable = (details?: unknown[]) =>
  failed(ApplicationFailure.create({ type: 'ModelCall.ServerError', nonRetryable: false, details }));

const POLICY = { attempts: 10, maxIntervalSeconds: 60, rateLimitedSeconds: 300 };

/** The waits of `failures` failed attempts in a row (`null` once a failure is not retried), all at time 0. */
function waits(err: unknown, failures: number, policy = POLICY): (number | null)[] {
  const retries = new ModelRetries(policy, 0);
  return Array.from({ length: failures }, () => retries.next(err, 0)?.delayMs ?? null);
}
const first = (err: unknown) => waits(err, 1)[0];

describe('R2.15 R1.2 a model call is retried by its workflow', () => {
  it('R1.2 backoff doubles from 1 s to at most 1 min, for 10 attempts; the config can say fewer or a lower cap', () => {
    const err = retryable();
    expect(waits(err, 10)).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000, null]);
    expect(waits(err, 5, { ...POLICY, attempts: 5 })).toEqual([1000, 2000, 4000, 8000, null]);
    expect(waits(err, 4, { ...POLICY, attempts: 4, maxIntervalSeconds: 3 })).toEqual([1000, 2000, 3000, null]);
  });

  it('R1.2 the wait an endpoint asks for wins over the backoff, never past the cap; a nonsense wait is ignored', () => {
    expect(first(retryable([{ retryAfterMs: 7000 }]))).toBe(7000);
    expect(first(retryable([{ retryAfterMs: 3_600_000 }]))).toBe(60_000);
    expect(waits(retryable([{ retryAfterMs: -5 }]), 3)[2]).toBe(4000);
    expect(waits(retryable([{ retryAfterMs: 0 }]), 3)[2]).toBe(4000);
    expect(waits(retryable([{ retryAfterMs: '9' }]), 2)[1]).toBe(2000);
    expect(waits(retryable([null]), 2)[1]).toBe(2000);
  });

  it('R1.2 refused for good, cancelled, or past the deadline: not retried; a stalled or dead attempt is', () => {
    const refused = failed(ApplicationFailure.create({ type: 'ModelCall.Rejected', nonRetryable: true }));
    expect(first(refused)).toBeNull();
    expect(first(failed(new CancelledFailure('cancelled')))).toBeNull();
    expect(first(new CancelledFailure('cancelled'))).toBeNull();
    expect(first(new Error('not an activity'))).toBeNull();
    expect(first(failed(new TimeoutFailure('late', undefined, 'SCHEDULE_TO_CLOSE')))).toBeNull();
    expect(first(failed(new TimeoutFailure('late', undefined, 'SCHEDULE_TO_START')))).toBeNull();
    expect(waits(failed(new TimeoutFailure('quiet', undefined, 'HEARTBEAT')), 2)[1]).toBe(2000);
    expect(first(failed(new TimeoutFailure('slow', undefined, 'START_TO_CLOSE')))).toBe(1000);
    // Only Temporal's own timeout is read as one: a server failure that carries the same field is final.
    const lookalike = Object.assign(new ServerFailure('server', false), { timeoutType: 'HEARTBEAT' });
    expect(first(failed(lookalike))).toBeNull();
  });

  it('49.6 a retry says where, what and which attempt in the status; the last failure says how often and what to check', () => {
    const down = failed(
      ApplicationFailure.create({
        type: 'ModelCall.Network',
        message: 'http://127.0.0.1:9/v1 unreachable (ECONNREFUSED) for gpt-x: Connection error.',
        nonRetryable: false,
        details: [
          { endpoint: 'http://127.0.0.1:9/v1', problem: 'unreachable (ECONNREFUSED)', check: 'check it is up' },
        ],
      }),
    );
    const retries = new ModelRetries({ ...POLICY, attempts: 3 }, 0);
    expect(retries.next(down, 1000)?.status).toBe(
      'retrying: http://127.0.0.1:9/v1 unreachable (ECONNREFUSED), attempt 1 of 3, next in 1 s',
    );
    expect(retries.next(down, 3000)?.status).toBe(
      'retrying: http://127.0.0.1:9/v1 unreachable (ECONNREFUSED), attempt 2 of 3, next in 2 s',
    );
    expect(retries.next(down, 249_000)).toBeNull();
    const last = retries.gaveUp(down, 249_000) as ApplicationFailure;
    expect(last).toBeInstanceOf(ApplicationFailure);
    expect(last.type).toBe('ModelCall.Network');
    expect(last.nonRetryable).toBe(true);
    expect(last.message).toBe(
      'the model call failed 3 times over 4 min 9 s, and the run gave up: http://127.0.0.1:9/v1 unreachable ' +
        '(ECONNREFUSED) for gpt-x: Connection error.; check it is up',
    );
    expect(last.message).not.toContain('retrying');
    // A failure that was never retried is the run's failure as it came.
    const refused = failed(ApplicationFailure.create({ type: 'ModelCall.Unauthorized', nonRetryable: true }));
    expect(new ModelRetries(POLICY, 0).gaveUp(refused, 0)).toBe(refused);
  });

  it('49.6 a rate limit waits what the endpoint asks without using attempts, for as long as the patience for it lasts', () => {
    const limited = failed(
      ApplicationFailure.create({
        type: 'ModelCall.RateLimited',
        nonRetryable: false,
        details: [{ endpoint: 'https://api.example/v1', problem: 'answered 429', retryAfterMs: 2000 }],
      }),
    );
    const retries = new ModelRetries({ ...POLICY, attempts: 2, rateLimitedSeconds: 30 }, 0);
    const steps = [];
    for (let t = 0; ; t += 2000) {
      const step = retries.next(limited, t);
      if (!step) break;
      steps.push(step);
    }
    // Thirty seconds of waits of 2 s: fifteen retries, far past the two attempts other failures get.
    expect(steps).toHaveLength(15);
    expect(steps.every((s) => s.delayMs === 2000)).toBe(true);
    expect(steps[3]!.status).toBe(
      'retrying: https://api.example/v1 answered 429 (rate limited), 4 times in 6 s of the 30 s it is waited on, next in 2 s',
    );
    expect((retries.gaveUp(limited, 30_000) as Error).message).toMatch(
      /^the model call failed 16 times over 30 s, and the run gave up: /,
    );
    // The last wait is cut to what is left of the patience.
    const late = new ModelRetries({ ...POLICY, rateLimitedSeconds: 3 }, 0);
    expect(late.next(limited, 0)?.delayMs).toBe(2000);
    expect(late.next(limited, 2500)?.delayMs).toBe(500);
    expect(late.next(limited, 3000)).toBeNull();
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

describe('the retry policy by default', () => {
  it('is what the config parses to when it says nothing', () => {
    expect(parseConfig({}).modelRetry).toEqual({ attempts: 10, maxIntervalSeconds: 60, rateLimitedSeconds: 300 });
  });
});

describe('49.6 what a failed attempt says of itself, read defensively', () => {
  it('the fault details an activity gave: strings and a positive wait only; anything else reads as nothing', () => {
    const withDetails = (details?: unknown[]) =>
      failed(ApplicationFailure.create({ type: 'ModelCall.ServerError', nonRetryable: false, details }));
    expect(modelFault(withDetails())).toEqual({});
    expect(modelFault(withDetails([null]))).toEqual({});
    expect(modelFault(withDetails(['text']))).toEqual({});
    expect(modelFault(withDetails([{ endpoint: 5, problem: ['x'], check: {}, retryAfterMs: '9' }]))).toEqual({});
    expect(modelFault(withDetails([{ endpoint: 'e', problem: 'p', check: 'c', retryAfterMs: 0 }]))).toEqual({
      endpoint: 'e',
      problem: 'p',
      check: 'c',
    });
    expect(modelFault(withDetails([{ retryAfterMs: 1500 }]))).toEqual({ retryAfterMs: 1500 });
    expect(modelFault(failed(new TimeoutFailure('quiet', undefined, 'HEARTBEAT')))).toEqual({});
    expect(modelFault(ApplicationFailure.create({ details: [{ endpoint: 'e' }] }))).toEqual({});
  });

  it('durations as people read them', () => {
    expect([0, 59_000, 59_600, 60_000, 61_000, 120_000, 243_000].map(duration)).toEqual([
      '0 s',
      '59 s',
      '1 min',
      '1 min',
      '1 min 1 s',
      '2 min',
      '4 min 3 s',
    ]);
  });

  it('an attempt that stopped reporting or ran out of time says so, having no endpoint to name', () => {
    const heartbeat = failed(new TimeoutFailure('quiet', undefined, 'HEARTBEAT'));
    const slow = failed(new TimeoutFailure('slow', undefined, 'START_TO_CLOSE'));
    expect(new ModelRetries(POLICY, 0).next(heartbeat, 0)?.status).toBe(
      'retrying: the model endpoint call stopped reporting (its worker may have died), attempt 1 of 10, next in 1 s',
    );
    expect(new ModelRetries(POLICY, 0).next(slow, 0)?.status).toBe(
      'retrying: the model endpoint call did not finish in time, attempt 1 of 10, next in 1 s',
    );
    const once = new ModelRetries({ ...POLICY, attempts: 1 }, 1000);
    expect(once.next(slow, 61_000)).toBeNull();
    expect((once.gaveUp(slow, 61_000) as Error).message).toBe(
      'the model call failed 1 time over 1 min, and the run gave up: slow; ' +
        'check the model endpoint (OPENAI_BASE_URL) and the worker running its calls',
    );
  });

  it('gives up only on what it retried to the end: a failure with attempts left, or a first 429, is itself', () => {
    const down = retryable([{ endpoint: 'e', problem: 'p' }]);
    const retries = new ModelRetries(POLICY, 0);
    expect(retries.next(down, 0)).not.toBeNull();
    expect(retries.gaveUp(down, 0)).toBe(down);
    const limited = failed(ApplicationFailure.create({ type: 'ModelCall.RateLimited', nonRetryable: false }));
    expect(new ModelRetries(POLICY, 0).gaveUp(limited, 0)).toBe(limited);
    const plain = new Error('not an activity');
    expect(new ModelRetries({ ...POLICY, attempts: 1 }, 0).gaveUp(plain, 0)).toBe(plain);
    // Once a 429 has been waited on, a later failure of another kind is judged by the attempts, not the patience.
    const mixed = new ModelRetries(POLICY, 0);
    expect(mixed.next(limited, 0)?.status).toBe(
      'retrying: the model endpoint call failed (ModelCall.RateLimited) (rate limited), 1 time in 0 s of the 300 s it is waited on, next in 1 s',
    );
    expect(mixed.next(limited, 3000)?.status).toMatch(/, 2 times in 3 s of the 300 s it is waited on, next in 2 s$/);
    expect(mixed.next(down, 5000)).not.toBeNull();
    expect(mixed.gaveUp(down, 5000)).toBe(down);
  });
});

describe('R8.3 the models a run’s calls go to', () => {
  const typed = (type: string, nonRetryable = false) => failed(ApplicationFailure.create({ type, nonRetryable }));
  const OWN = { model: 'own', price: { inputMicroUsdPerMTok: 1_000_000, outputMicroUsdPerMTok: 8_000_000 } };
  const SPARE = { model: 'spare', price: { inputMicroUsdPerMTok: 3_000_000, outputMicroUsdPerMTok: 2_000_000 } };
  const LAST = { model: 'last', price: { inputMicroUsdPerMTok: 500_000, outputMicroUsdPerMTok: 500_000 } };
  const AFTER = { rateLimited: 3, serverError: 2, timeout: 2, unreachable: 1 };
  const chain = () => new ModelChain(OWN, { models: [SPARE, LAST], after: AFTER });

  it('R8.3 each kind of failure is counted on its own: the call moves on once one kind reaches its count, and says why', () => {
    const models = chain();
    expect(models.failed(typed('ModelCall.RateLimited'))).toBeNull();
    expect(models.failed(typed('ModelCall.ServerError'))).toBeNull();
    expect(models.failed(typed('ModelCall.RateLimited'))).toBeNull();
    expect(models.current.model).toBe('own');
    expect(models.failed(typed('ModelCall.RateLimited'))).toBe('own was rate limited 3 times');
    expect(models.current).toEqual(SPARE);
    expect(models.reason).toBe('own was rate limited 3 times');
    // The next model counts from nothing; an unreachable endpoint moves on after one, as the config says.
    expect(models.failed(typed('ModelCall.ServerError'))).toBeNull();
    expect(models.failed(typed('ModelCall.Network'))).toBe('spare was unreachable 1 time');
    expect(models.current).toEqual(LAST);
    // The last model has nowhere to go: its failures are the retry policy's to count.
    for (let i = 0; i < 5; i++) expect(models.failed(typed('ModelCall.Network'))).toBeNull();
    expect(models.current).toEqual(LAST);
  });

  it('R8.3 two calls at once: the one still out on a model the other moved on from follows it, and is not counted against the next', () => {
    const models = chain();
    const summaryOn = models.current; // a child's summary goes out on the run's own model
    models.failed(typed('ModelCall.ServerError'));
    expect(models.failed(typed('ModelCall.ServerError'))).toBe('own failed on the server 2 times'); // the turn moved on
    // The summary's attempt on the old model fails too: it follows to the spare, whose count stays at nothing.
    expect(models.failed(typed('ModelCall.ServerError'), summaryOn)).toBe('own failed on the server 2 times');
    expect(models.current).toEqual(SPARE);
    expect(models.failed(typed('ModelCall.ServerError'))).toBeNull();
    expect(models.current).toEqual(SPARE);
    // What another model would not help with is still not retried.
    expect(models.failed(typed('ModelCall.Unauthorized', true), summaryOn)).toBeNull();
  });

  it('R8.3 a call answered by the run’s own model is no fallback, though another call moved the run on meanwhile', () => {
    const models = chain();
    const turnOn = models.current; // a turn goes out on the run's own model
    expect(models.whyAnswered(turnOn)).toBeNull();
    models.failed(typed('ModelCall.Network')); // a child's summary beside it moves the run on
    expect(models.current).toEqual(SPARE);
    // The turn's own model answers after all: its answer names no fallback; one from the spare names why.
    expect(models.whyAnswered(turnOn)).toBeNull();
    expect(models.whyAnswered(models.current)).toBe('own was unreachable 1 time');
  });

  it('R8.3 an answer starts the count again; a call stays on the model that answered', () => {
    const models = chain();
    models.failed(typed('ModelCall.ServerError'));
    models.answered();
    expect(models.failed(typed('ModelCall.ServerError'))).toBeNull();
    expect(models.failed(typed('ModelCall.MalformedResponse'))).toBe('own failed on the server 2 times');
    models.answered();
    expect(models.current).toEqual(SPARE);
  });

  it('R8.3 what another model would not help with never moves a call: a refusal, the budget, a cancellation, a worker that died, the run’s deadline', () => {
    const models = chain();
    const refusals = [
      typed('ModelCall.Unauthorized', true),
      typed('ModelCall.BudgetExceeded', true),
      failed(new CancelledFailure('cancelled')),
      failed(new TimeoutFailure('no heartbeat', undefined, 'HEARTBEAT')),
      failed(new TimeoutFailure('deadline', undefined, 'SCHEDULE_TO_CLOSE')),
      new Error('not an activity failure'),
    ];
    for (const err of [...refusals, ...refusals]) {
      expect(faultKind(err)).toBeNull();
      expect(models.failed(err)).toBeNull();
    }
    expect(models.current).toEqual(OWN);
    // An attempt that took too long is a timeout, whether the endpoint or the activity's clock said so.
    expect(faultKind(failed(new TimeoutFailure('slow', undefined, 'START_TO_CLOSE')))).toBe('timeout');
    expect(faultKind(typed('ModelCall.Timeout'))).toBe('timeout');
  });

  it('R8.3 R2.13 a call is fitted at the dearest price of the models it may still reach, each of input and answer', () => {
    const models = chain();
    expect(models.dearest).toEqual({ inputMicroUsdPerMTok: 3_000_000, outputMicroUsdPerMTok: 8_000_000 });
    models.failed(typed('ModelCall.Network'));
    expect(models.current).toEqual(SPARE);
    // The run's own model is behind it now: only the spare and the last count.
    expect(models.dearest).toEqual({ inputMicroUsdPerMTok: 3_000_000, outputMicroUsdPerMTok: 2_000_000 });
    // A run without fallback models is fitted at its own price and never moves.
    const alone = new ModelChain(OWN, undefined);
    expect(alone.dearest).toEqual(OWN.price);
    expect(alone.failed(typed('ModelCall.Network'))).toBeNull();
    expect(alone.reason).toBeNull();
  });

  it('R8.3 a fallback model without a price is refused when the config is read, the config’s and a preset’s', () => {
    expect(() => parseConfig({ fallbackModels: ['unpriced'] })).toThrow(
      /fallbackModels\.0: no price for fallback model "unpriced"; add it under prices/,
    );
    expect(() =>
      parseConfig({ presets: [{ id: 'assistant', model: 'gpt-4.1', fallbackModels: ['gpt-4.1-mini', 'nope'] }] }),
    ).toThrow(/presets\.0\.fallbackModels\.1: no price for fallback model "nope"/);
    expect(parseConfig({}).modelFallback).toEqual({ rateLimited: 3, serverError: 3, timeout: 2, unreachable: 2 });
  });
});
