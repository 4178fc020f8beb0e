/** R8.3: which models a run's calls fall back on, as its composition records them. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { builtinTools } from '../activities/builtin-tools.js';
import { resolveComposition } from '../src/config/presets.js';
import { parseConfig } from '../src/config/schema.js';
import type { ResolveRunInput } from '../src/contract/activities.js';
import { toolMap } from '../src/worker/factory.js';

const config = parseConfig({
  model: 'gpt-4.1-mini',
  prices: {
    'gpt-4.1-mini': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 },
    other: { inputPerMTokUsd: 3, outputPerMTokUsd: 4 },
  },
  fallbackModels: ['other'],
});
const tools = toolMap(builtinTools());
const resolve = (input: ResolveRunInput) => resolveComposition(config, tools, input, { childTaskQueue: 'bg' });
const base = resolve({});

describe('R8.3 which models a run falls back on', () => {
  it('R8.3 the config’s fallback models follow the config’s model; a run or brief naming another model has none, and each is priced from the config', () => {
    expect(resolve({}).fallback).toEqual({
      models: [{ model: 'other', price: { inputMicroUsdPerMTok: 3_000_000, outputMicroUsdPerMTok: 4_000_000 } }],
      after: { rateLimited: 3, serverError: 3, timeout: 2, unreachable: 2 },
    });
    // Naming the model the chain starts from keeps it; naming another leaves the run on that model alone.
    expect(resolve({ model: 'gpt-4.1-mini' }).fallback?.models.map((m) => m.model)).toEqual(['other']);
    expect(resolve({ model: 'other' }).fallback).toBeUndefined();
    // A caller's preset may name fallback models, but only priced ones: a cost limit must hold on each.
    const preset = { ...base.presetDefinition, fallbackModels: ['unpriced'] };
    expect(() => resolve({ presetDefinition: preset, presetFromCaller: true })).toThrow(
      /no price for fallback model "unpriced"; add it under prices/,
    );
    // A preset with a model of its own falls back on its own list only (none here).
    const own = { ...base.presetDefinition, model: 'other' };
    expect(resolve({ presetDefinition: own }).fallback).toBeUndefined();
  });
});

describe('R8.3 the fallback models docs/operations.md shows', () => {
  it('R8.3 its config is valid and falls back as it says: the config’s model on its list, the preset’s on its own', () => {
    const doc = readFileSync('docs/operations.md', 'utf8');
    const section = doc.slice(doc.indexOf('### When a model keeps failing'));
    const shown = parseConfig(parse(/```yaml\n([\s\S]*?)```/.exec(section)![1]!));
    expect(shown.modelFallback).toEqual({ rateLimited: 3, serverError: 3, timeout: 2, unreachable: 2 });
    const fallbacks = (input: ResolveRunInput) =>
      resolveComposition(shown, tools, input, { childTaskQueue: 'bg' }).fallback?.models.map((m) => m.model);
    expect(fallbacks({ preset: 'assistant' })).toEqual(['gpt-4.1-mini']);
    const noModel = { id: 'plain', persona: '', tools: [], skills: {}, contextRendering: 'block' as const };
    expect(fallbacks({ presetDefinition: noModel })).toEqual(['gpt-4.1-mini', 'gpt-4o-mini']);
  });
});
