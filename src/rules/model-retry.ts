/** How a workflow retries a model call, attempt by attempt. Shared by workflow code: no Node built-ins. */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { FAILURE } from '../contract/failures.js';
import type { FallbackAfter, ModelFallback, ModelPrice, ModelRetry } from '../contract/composition.js';
import { worstInputPrice } from './usage.js';

/** The retry policy of a run whose composition names none: the config's defaults. */
export const DEFAULT_MODEL_RETRY: ModelRetry = Object.freeze({
  attempts: 10,
  maxIntervalSeconds: 60,
  rateLimitedSeconds: 300,
});

/** After how many failed attempts of a kind a call moves on to the next model, when the config says nothing. */
export const DEFAULT_FALLBACK_AFTER: FallbackAfter = Object.freeze({
  rateLimited: 3,
  serverError: 3,
  timeout: 2,
  unreachable: 2,
});

/** Backoff of model calls; Temporal retries tool calls with the same. */
export const MODEL_CALL_RETRY = {
  initialIntervalMs: 1000,
  backoffCoefficient: 2,
  maximumIntervalMs: DEFAULT_MODEL_RETRY.maxIntervalSeconds * 1000,
  maximumAttempts: DEFAULT_MODEL_RETRY.attempts,
} as const;

/** What a failed attempt's activity says of it, in its failure's details (see `activities/model-errors.ts`). */
export interface ModelFault {
  /** The endpoint's base URL, without credentials or query. */
  endpoint?: string;
  /** What went wrong, as it reads after the endpoint: "unreachable", "answered 503". */
  problem?: string;
  /** What a person can check when it keeps failing. */
  check?: string;
  /** The wait the endpoint asked for. */
  retryAfterMs?: number;
}

/** The fault details of a failed attempt, when its activity gave them. */
export function modelFault(err: unknown): ModelFault {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  const [first] = cause instanceof ApplicationFailure ? (cause.details ?? []) : [];
  if (typeof first !== 'object' || first === null) return {};
  const { endpoint, problem, check, retryAfterMs } = first as Record<string, unknown>;
  return {
    ...(typeof endpoint === 'string' && { endpoint }),
    ...(typeof problem === 'string' && { problem }),
    ...(typeof check === 'string' && { check }),
    ...(typeof retryAfterMs === 'number' && retryAfterMs > 0 && { retryAfterMs }),
  };
}

/** The wait before a retry, and the line the run's status shows while it waits. */
export interface RetryStep {
  delayMs: number;
  status: string;
}

const seconds = (ms: number) => `${Math.max(1, Math.round(ms / 1000))} s`;

/** A duration as people read it: "48 s", "4 min 3 s". */
export function duration(ms: number): string {
  const total = Math.round(ms / 1000);
  return total < 60 ? `${total} s` : `${Math.floor(total / 60)} min${total % 60 ? ` ${total % 60} s` : ''}`;
}

/**
 * The retries of one model call. A failure the endpoint may get over (down, 5xx, too slow, a worker that died
 * mid-call) uses one of the policy's attempts and waits the backoff, or what the endpoint asked for up to the backoff's
 * cap; a rate limit (429) waits what the endpoint asks without using an attempt, for as long as the policy's patience
 * for rate limits lasts. Cancellation, a refusal for good and the run's deadline are never retried.
 */
export class ModelRetries {
  #attempts = 1;
  #failures = 0;
  #rateLimitedSinceMs: number | null = null;
  #rateLimited = 0;

  constructor(
    private readonly policy: ModelRetry,
    private readonly startedMs: number,
  ) {}

  /** Attempts made so far, the one in flight included. */
  get attempts(): number {
    return this.#attempts;
  }

  /** After attempt `attempts` failed with `err` at `nowMs`: the wait before the next, or `null` when there is none. */
  next(err: unknown, nowMs: number): RetryStep | null {
    if (!retryable(err)) return null;
    const fault = modelFault(err);
    const where = `${fault.endpoint ?? 'the model endpoint'} ${fault.problem ?? describeUnknown(err)}`;
    const capMs = this.policy.maxIntervalSeconds * 1000;
    if (findType(err) === FAILURE.ModelRateLimited) {
      this.#rateLimitedSinceMs ??= nowMs;
      this.#rateLimited++;
      const patienceMs = this.policy.rateLimitedSeconds * 1000;
      const leftMs = this.#rateLimitedSinceMs + patienceMs - nowMs;
      if (leftMs <= 0) return null;
      const delayMs = Math.min(fault.retryAfterMs ?? this.#backoff(this.#rateLimited), capMs, leftMs);
      this.#attempts++;
      return {
        delayMs,
        status:
          `retrying: ${where} (rate limited), ${this.#rateLimited} time${this.#rateLimited === 1 ? '' : 's'} in ` +
          `${duration(nowMs - this.#rateLimitedSinceMs)} of the ${this.policy.rateLimitedSeconds} s it is waited on, next in ${seconds(delayMs)}`,
      };
    }
    this.#failures++;
    if (this.#failures >= this.policy.attempts) return null;
    const delayMs = Math.min(fault.retryAfterMs ?? this.#backoff(this.#failures), capMs);
    this.#attempts++;
    return {
      delayMs,
      status: `retrying: ${where}, attempt ${this.#failures} of ${this.policy.attempts}, next in ${seconds(delayMs)}`,
    };
  }

  /**
   * What the run fails with once `err` is not retried: a call that was retried until its attempts (or the patience for
   * rate limits) ran out says so, where, and what to check; any other failure is `err` itself.
   */
  gaveUp(err: unknown, nowMs: number): unknown {
    const gaveUp =
      retryable(err) &&
      (this.#failures >= this.policy.attempts ||
        (this.#rateLimitedSinceMs !== null && findType(err) === FAILURE.ModelRateLimited));
    if (!gaveUp) return err;
    const fault = modelFault(err);
    const last = err instanceof ActivityFailure && err.cause ? err.cause.message : String(err);
    const check = fault.check ?? 'check the model endpoint (OPENAI_BASE_URL) and the worker running its calls';
    return ApplicationFailure.create({
      type: findType(err) ?? FAILURE.ModelTimeout,
      message:
        `the model call failed ${this.#attempts} time${this.#attempts === 1 ? '' : 's'} over ` +
        `${duration(nowMs - this.startedMs)}, and the run gave up: ${last}; ${check}`,
      nonRetryable: true,
      cause: err instanceof Error ? err : undefined,
    });
  }

  /** The backoff after the `n`th failure, before the policy's cap. */
  #backoff(n: number): number {
    return MODEL_CALL_RETRY.initialIntervalMs * MODEL_CALL_RETRY.backoffCoefficient ** Math.min(n - 1, 30);
  }
}

/** The type of the activity's own failure, when it threw one. */
function findType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/** A failure another attempt may get past: the activity said so, or the attempt stopped answering. */
function retryable(err: unknown): boolean {
  if (!(err instanceof ActivityFailure)) return false;
  const { cause } = err;
  if (cause instanceof ApplicationFailure) return !cause.nonRetryable;
  // An attempt that stopped answering (or whose worker died) is retried; the run's deadline is final.
  return (
    cause instanceof TimeoutFailure &&
    (cause.timeoutType === TimeoutType.START_TO_CLOSE || cause.timeoutType === TimeoutType.HEARTBEAT)
  );
}

/** What a failed attempt reads as when its activity named no problem (its worker died or stalled, say). */
function describeUnknown(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof TimeoutFailure && cause.timeoutType === TimeoutType.HEARTBEAT)
    return 'call stopped reporting (its worker may have died)';
  if (cause instanceof TimeoutFailure) return 'call did not finish in time';
  return `call failed (${findType(err) ?? 'no reason given'})`;
}

/** The kinds of failure a fallback counts. */
export type FaultKind = keyof FallbackAfter;

/**
 * What kind of failure an attempt's is, as a fallback counts it; `null` for one another model would not help with (a
 * refusal for good, the budget, a cancellation, the run's deadline, a worker that died mid-call).
 */
export function faultKind(err: unknown): FaultKind | null {
  if (!retryable(err)) return null;
  const cause = (err as ActivityFailure).cause;
  if (cause instanceof TimeoutFailure) return cause.timeoutType === TimeoutType.START_TO_CLOSE ? 'timeout' : null;
  switch (findType(err)) {
    case FAILURE.ModelRateLimited:
      return 'rateLimited';
    case FAILURE.ModelNetwork:
      return 'unreachable';
    case FAILURE.ModelTimeout:
      return 'timeout';
    default:
      return 'serverError';
  }
}

const FAULT_TEXT: Record<FaultKind, string> = {
  rateLimited: 'was rate limited',
  serverError: 'failed on the server',
  timeout: 'did not answer in time',
  unreachable: 'was unreachable',
};

/** A model a run's calls go to, its price, and the task queue its calls go to (absent: the run's own). */
export interface ChainModel {
  model: string;
  price: ModelPrice;
  taskQueue?: string | undefined;
}

/**
 * The models a run's calls go to: its own, then its fallbacks in order. A call moves on once the model it is on has
 * failed as often as the policy allows for a kind of failure, and the run's later calls stay on the model that
 * answered (a model that keeps failing would cost every call its attempts again).
 */
export class ModelChain {
  #step = 0;
  #failures: Record<FaultKind, number> = { rateLimited: 0, serverError: 0, timeout: 0, unreachable: 0 };
  #reason: string | null = null;

  constructor(
    private readonly own: ChainModel,
    private readonly fallback: ModelFallback | undefined,
  ) {}

  /** The model the next attempt goes to. */
  get current(): ChainModel {
    return this.#step === 0 ? this.own : this.fallback!.models[this.#step - 1]!;
  }

  /** Why the calls are on `current` instead of the run's own model; `null` while on its own. */
  get reason(): string | null {
    return this.#reason;
  }

  /**
   * Why `answeredBy` answered a call instead of the run's own model; `null` when the run's own answered it (a call
   * that went out before another call of the run moved on, and was answered, is no fallback).
   */
  whyAnswered(answeredBy: ChainModel): string | null {
    return answeredBy.model === this.own.model ? null : this.#reason;
  }

  /**
   * The price a call is fitted at: each of input and answer at the dearest of the models it may still reach, so
   * whichever answers, the call costs no more than what was free.
   */
  get dearest(): ModelPrice {
    const reachable = [this.current, ...(this.fallback?.models.slice(this.#step) ?? [])];
    return {
      inputMicroUsdPerMTok: Math.max(...reachable.map((m) => worstInputPrice(m.price))),
      outputMicroUsdPerMTok: Math.max(...reachable.map((m) => m.price.outputMicroUsdPerMTok)),
    };
  }

  /** The current model answered: its count of failures starts again. */
  answered(): void {
    this.#failures = { rateLimited: 0, serverError: 0, timeout: 0, unreachable: 0 };
  }

  /**
   * An attempt on `on` failed with `err`: when that was the last the policy allows of its kind and a model is left,
   * the calls move on to it, and this says why ("gpt-4.1 was rate limited 3 times"); else `null`. An attempt on a
   * model another call of the run has moved on from (a child's summary beside a turn) follows it at once, its failure
   * not counted against the model it never tried.
   */
  failed(err: unknown, on: ChainModel = this.current): string | null {
    const kind = faultKind(err);
    if (kind === null) return null;
    if (on !== this.current) return this.#reason;
    if (!this.fallback || this.#step >= this.fallback.models.length) return null;
    const count = ++this.#failures[kind];
    if (count < this.fallback.after[kind]) return null;
    this.#reason = `${this.current.model} ${FAULT_TEXT[kind]} ${count} time${count === 1 ? '' : 's'}`;
    this.#step++;
    this.answered();
    return this.#reason;
  }
}
