/**
 * Translates errors from the `openai` client into Temporal `ApplicationFailure`s: transient ones retry with
 * backoff (honouring `retry-after`), caller errors fail the turn at once with a message that says what to fix.
 */
import { FAILURE } from '../src/contract/failures.js';
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { cutText, MAX_ERROR_BYTES } from '../src/rules/payloads.js';

const RETRYABLE_TYPES: Record<number, string> = {
  408: FAILURE.ModelTimeout,
  409: FAILURE.ModelConflict,
  429: FAILURE.ModelRateLimited,
};

const FIXES: Record<number, [type: string, fix: string]> = {
  400: [FAILURE.ModelBadRequest, 'check the model name, the tool schemas and the request parameters'],
  401: [FAILURE.ModelUnauthorized, 'check OPENAI_API_KEY: the endpoint did not accept it'],
  403: [FAILURE.ModelForbidden, 'the API key is not allowed to use this model; choose another model or key'],
  404: [FAILURE.ModelNotFound, 'check the model name (DEPUTY_MODEL, the preset or the run input) and OPENAI_BASE_URL'],
  422: [FAILURE.ModelUnprocessable, 'the endpoint could not process the request; check the model and parameters'],
};

/** Reads `retry-after-ms` or `retry-after` (seconds or an HTTP date) into milliseconds. */
export function retryAfterMs(headers: Headers | undefined, nowMs = Date.now()): number | undefined {
  const ms = headers?.get('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Math.max(0, Number(ms));
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  if (Number.isFinite(Number(value))) return Math.max(0, Number(value) * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** Removes a secret from text that may end up in workflow history. */
export function redact(text: string, secret: string | undefined): string {
  return secret ? text.split(secret).join('[redacted]') : text;
}

/** Maps an error thrown by an `openai` call to the `ApplicationFailure` the activity throws. */
export function toModelFailure(err: unknown, model: string, apiKey: string | undefined): ApplicationFailure {
  const message = cutText(redact(err instanceof Error ? err.message : String(err), apiKey), MAX_ERROR_BYTES);
  const cause = new Error(message);
  cause.name = err instanceof Error ? err.name : 'Error';

  if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
    const status = err.status;
    if (status in RETRYABLE_TYPES || status >= 500) {
      const delay = retryAfterMs(err.headers as Headers | undefined);
      return ApplicationFailure.create({
        type: RETRYABLE_TYPES[status] ?? FAILURE.ModelServerError,
        message: `model endpoint answered ${status} for ${model}; retrying: ${message}`,
        nonRetryable: false,
        cause,
        // The workflow retries model calls itself: the wait the endpoint asked for travels in the details.
        ...(delay !== undefined && { details: [{ retryAfterMs: Math.max(delay, 1) }] }),
      });
    }
    const [type, fix] = FIXES[status] ?? [FAILURE.ModelRejected, 'check the request; the endpoint refused it'];
    return ApplicationFailure.create({
      type,
      message: `model endpoint answered ${status} for ${model}: ${fix} (${message})`,
      nonRetryable: true,
      cause,
    });
  }
  if (err instanceof OpenAI.APIConnectionTimeoutError) {
    return ApplicationFailure.create({
      type: FAILURE.ModelTimeout,
      message: `the model endpoint did not answer for ${model} within modelTimeoutSeconds; retrying: ${message}`,
      nonRetryable: false,
      cause,
    });
  }
  if (err instanceof OpenAI.APIConnectionError) {
    return ApplicationFailure.create({
      type: FAILURE.ModelNetwork,
      message: `cannot reach the model endpoint for ${model}; retrying: ${message}`,
      nonRetryable: false,
      cause,
    });
  }
  return ApplicationFailure.create({
    type: FAILURE.ModelMalformedResponse,
    message: `the model endpoint's answer for ${model} could not be read; retrying: ${message}`,
    nonRetryable: false,
    cause,
  });
}
