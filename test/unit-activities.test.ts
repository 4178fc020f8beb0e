import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { redact, retryAfterMs, toModelFailure } from '../activities/model-errors.js';
import { findTemporalCli } from '../src/testing/temporal-cli.js';

function apiError(status: number, headers: Record<string, string> = {}) {
  return OpenAI.APIError.generate(
    status,
    { error: { message: `boom ${status}` } },
    `boom ${status}`,
    new Headers(headers),
  );
}

describe('R1.2 model error policy', () => {
  it.each([408, 409, 429, 500, 502, 503])('R1.2 %i is retryable', (status) => {
    const failure = toModelFailure(apiError(status), 'm', undefined);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.nonRetryable).toBe(false);
  });

  it.each([
    [400, 'ModelCall.BadRequest'],
    [401, 'ModelCall.Unauthorized'],
    [403, 'ModelCall.Forbidden'],
    [404, 'ModelCall.NotFound'],
    [422, 'ModelCall.Unprocessable'],
  ])('R1.2 %i is non-retryable (%s) and says what to fix', (status, type) => {
    const failure = toModelFailure(apiError(status), 'gpt-x', undefined, 'https://user:pw@models.example/v1/?k=1');
    expect(failure.type).toBe(type);
    expect(failure.nonRetryable).toBe(true);
    // The endpoint is named without what its URL may carry of a secret.
    expect(failure.message).toMatch(new RegExp(`^https://models.example/v1 answered ${status} for gpt-x: \\w`));
  });

  it('R1.2 retry-after (seconds, ms, HTTP date) sets the next retry delay', () => {
    expect(toModelFailure(apiError(429, { 'retry-after': '7' }), 'm', undefined, 'http://h/v1').details).toEqual([
      {
        endpoint: 'http://h/v1',
        problem: 'answered 429',
        check: "the endpoint keeps limiting the rate: lower the load or raise the key's limit",
        retryAfterMs: 7000,
      },
    ]);
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '250' }))).toBe(250);
    expect(
      retryAfterMs(new Headers({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }), Date.parse('2026-01-01T00:00:00Z')),
    ).toBe(5000);
    expect(retryAfterMs(new Headers())).toBeUndefined();
  });

  it('network errors retry; the API key is redacted from every message', () => {
    const failure = toModelFailure(
      new OpenAI.APIConnectionError({ message: 'socket hang up sk-secret' }),
      'm',
      'sk-secret',
    );
    expect(failure).toMatchObject({ type: 'ModelCall.Network', nonRetryable: false });
    expect(failure.message).not.toContain('sk-secret');
    expect(redact('a sk-1 b sk-1', 'sk-1')).toBe('a [redacted] b [redacted]');
  });

  it('49.6 a message is one line that never says "retrying"; an HTML error page is called one, not pasted', () => {
    const page = OpenAI.APIError.generate(
      502,
      undefined,
      '<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>',
      new Headers({ 'content-type': 'text/html' }),
    );
    const failure = toModelFailure(page, 'gpt-x', undefined, 'http://127.0.0.1:8080/v1');
    expect(failure.message).toBe('http://127.0.0.1:8080/v1 answered 502 for gpt-x: 502 (an HTML page)');
    for (const err of [apiError(500), apiError(429), new OpenAI.APIConnectionError({ message: 'down' })]) {
      const { message } = toModelFailure(err, 'm', undefined, 'http://h/v1');
      expect(message).not.toMatch(/retrying|\n/);
      expect(message).toMatch(/^http:\/\/h\/v1 /);
    }
  });
});

describe('Temporal CLI resolution', () => {
  it('TEMPORAL_CLI_PATH wins; then PATH; a bad TEMPORAL_CLI_PATH is an error that says so', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-'));
    const fake = join(dir, 'temporal');
    writeFileSync(fake, '#!/bin/sh\n');
    chmodSync(fake, 0o755);
    expect(findTemporalCli({ TEMPORAL_CLI_PATH: fake, PATH: '' })).toBe(fake);
    expect(findTemporalCli({ PATH: dir })).toBe(fake);
    expect(() => findTemporalCli({ TEMPORAL_CLI_PATH: join(dir, 'missing') })).toThrow(/not an executable file/);
  });
});
