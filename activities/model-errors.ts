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

/** An endpoint's base URL as error text names it: no credentials, query or fragment. */
export function endpointOf(baseURL: string): string {
  try {
    const url = new URL(baseURL);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
  } catch {
    return 'the model endpoint';
  }
}

/** An error's text on one line; an HTML page (a proxy's or a web server's error page) as what it is. */
function oneLine(message: string): string {
  const html = /<(!doctype|html|head|body|title)\b/i.exec(message);
  const text = html ? `${message.slice(0, html.index).trim()} (an HTML page)`.trim() : message;
  return text.replace(/\s+/g, ' ').trim();
}

/** Why a connection failed, from the innermost cause: its code (`ECONNREFUSED`), or its short message. */
export function networkReason(err: unknown): string | undefined {
  let inner: unknown = err;
  while (inner instanceof Error && inner.cause instanceof Error) inner = inner.cause;
  if (inner === err || !(inner instanceof Error)) return undefined;
  const code = (inner as { code?: unknown }).code;
  const reason = typeof code === 'string' ? code : inner.message.replace(/\s+/g, ' ').trim();
  return reason.length > 0 && reason.length <= 80 ? reason : undefined;
}

const UNREACHABLE = 'check that the endpoint is up and that OPENAI_BASE_URL points at it';
const FAILING = 'the endpoint keeps failing: check its status, or point OPENAI_BASE_URL at another';

/**
 * Maps an error thrown by an `openai` call to the `ApplicationFailure` the activity throws. Its details say where
 * (`endpoint`), what went wrong (`problem`) and what to check, so the workflow's status and its final error can.
 */
export function toModelFailure(
  err: unknown,
  model: string,
  apiKey: string | undefined,
  baseURL = 'the model endpoint',
): ApplicationFailure {
  const message = cutText(oneLine(redact(err instanceof Error ? err.message : String(err), apiKey)), MAX_ERROR_BYTES);
  const endpoint = endpointOf(baseURL);
  const cause = new Error(message);
  cause.name = err instanceof Error ? err.name : 'Error';
  const retryable = (type: string, problem: string, check: string, retryAfter?: number) =>
    ApplicationFailure.create({
      type,
      message: `${endpoint} ${problem} for ${model}: ${message}`,
      nonRetryable: false,
      cause,
      // The workflow retries model calls itself: what it shows and waits travels in the details.
      details: [
        { endpoint, problem, check, ...(retryAfter !== undefined && { retryAfterMs: Math.max(retryAfter, 1) }) },
      ],
    });

  if (err instanceof OpenAI.APIError && typeof err.status === 'number') {
    const status = err.status;
    if (status in RETRYABLE_TYPES || status >= 500) {
      const check =
        status === 429 ? "the endpoint keeps limiting the rate: lower the load or raise the key's limit" : FAILING;
      return retryable(
        RETRYABLE_TYPES[status] ?? FAILURE.ModelServerError,
        `answered ${status}`,
        check,
        retryAfterMs(err.headers as Headers | undefined),
      );
    }
    const [type, fix] = FIXES[status] ?? [FAILURE.ModelRejected, 'check the request; the endpoint refused it'];
    return ApplicationFailure.create({
      type,
      message: `${endpoint} answered ${status} for ${model}: ${fix} (${message})`,
      nonRetryable: true,
      cause,
      details: [{ endpoint, problem: `answered ${status}` }],
    });
  }
  if (err instanceof OpenAI.APIConnectionTimeoutError) {
    return retryable(
      FAILURE.ModelTimeout,
      'did not answer within modelTimeoutSeconds',
      "check the endpoint's health, or raise modelTimeoutSeconds for a model that thinks long",
    );
  }
  if (err instanceof OpenAI.APIConnectionError) {
    const why = networkReason(err);
    return retryable(FAILURE.ModelNetwork, `unreachable${why ? ` (${why})` : ''}`, UNREACHABLE);
  }
  return retryable(FAILURE.ModelMalformedResponse, 'sent an answer that could not be read', FAILING);
}

/**
 * The failure of a request the endpoint answered with a web page, not an answer stream: the base URL names a web
 * server (or a proxy's page), not the API. Another attempt would get the same page.
 */
export function htmlAnswerFailure(model: string, baseURL: string, contentType: string): ApplicationFailure {
  const endpoint = endpointOf(baseURL);
  return ApplicationFailure.create({
    type: FAILURE.ModelMalformedResponse,
    message:
      `${endpoint} answered ${model}'s call with a web page (${contentType}), not a model answer: check OPENAI_BASE_URL, ` +
      "the API's base URL (often ending in /v1)",
    nonRetryable: true,
    details: [{ endpoint, problem: 'answered with a web page' }],
  });
}
