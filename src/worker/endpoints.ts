/**
 * The model endpoints a worker calls: the default one (`OPENAI_BASE_URL`, `OPENAI_API_KEY`) and each provider's the
 * config names, their keys read from the worker's environment, never from the config.
 */
import OpenAI from 'openai';
import type { Endpoint } from '../../activities/call-model.js';
import { boundedFetch } from '../../activities/bounded-fetch.js';
import { configSource } from '../config/load.js';
import type { DeputyConfig } from '../config/schema.js';
import { ConfigError } from '../contract/errors.js';

/** The most one model response may send, in bytes (a streamed answer of the largest text a run keeps is far below). */
const MODEL_RESPONSE_BYTES = 64 * 2 ** 20;

/** The `openai` client activities use; Temporal does the retrying, so the SDK's own retries are off. */
export function createOpenAIClient(model: { apiKey: string | undefined; baseURL: string | undefined }): OpenAI {
  if (!model.apiKey && !model.baseURL) {
    throw new ConfigError(
      ['OPENAI_API_KEY: not set; set it, or set OPENAI_BASE_URL for an endpoint that needs no key'],
      'environment',
    );
  }
  return new OpenAI({
    apiKey: model.apiKey ?? 'no-key',
    baseURL: model.baseURL,
    maxRetries: 0,
    timeout: 600_000,
    // An answer's text is cut far below this; what passes it is no answer.
    fetch: boundedFetch(MODEL_RESPONSE_BYTES, 'the model endpoint'),
  });
}

/**
 * The endpoint of each model another provider serves (`providers`), its key read from the worker's environment
 * variable the provider names; a variable that is not set stops the worker, saying which.
 */
export function providerEndpoints(config: DeputyConfig, env: NodeJS.ProcessEnv = process.env): Map<string, Endpoint> {
  const endpoints = new Map<string, Endpoint>();
  const problems: string[] = [];
  for (const [name, provider] of Object.entries(config.providers)) {
    const apiKey = provider.apiKeyEnv === undefined ? undefined : env[provider.apiKeyEnv];
    if (provider.apiKeyEnv !== undefined && !apiKey) {
      problems.push(
        `providers.${name}.apiKeyEnv: ${provider.apiKeyEnv} is not set in the worker's environment; set it to the key of ${provider.baseUrl}`,
      );
      continue;
    }
    const endpoint = { openai: createOpenAIClient({ apiKey, baseURL: provider.baseUrl }), apiKey };
    for (const model of provider.models) endpoints.set(model, endpoint);
  }
  if (problems.length > 0) throw new ConfigError(problems, configSource(config));
  return endpoints;
}
