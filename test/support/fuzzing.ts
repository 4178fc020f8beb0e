/** fast-check helpers the fuzzing tests share: valid values broken at one field. */
import fc from 'fast-check';

/** A JSON object. */
export type Json = Record<string, unknown>;

/** Every path to a value inside `value` (objects and arrays), shortest first. */
export function pathsOf(value: unknown, prefix: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => [[...prefix, key], ...pathsOf(inner, [...prefix, key])]);
}

/**
 * `base` with the value at one of its paths replaced by anything at all (or removed); with `addKeys`, sometimes an
 * unknown key added to an object instead.
 */
export function mutated(base: Json, { addKeys = false } = {}) {
  return fc
    .tuple(
      fc.constantFrom(...pathsOf(base)),
      fc.oneof(fc.anything(), fc.constant(undefined), fc.string(), fc.integer(), fc.constant('')),
      fc.boolean(),
    )
    .map(([path, replacement, addKey]) => {
      const copy = structuredClone(base);
      let parent: Json = copy;
      for (const key of path.slice(0, -1)) parent = parent[key] as Json;
      const last = path.at(-1)!;
      if (addKeys && addKey && parent[last] && typeof parent[last] === 'object')
        (parent[last] as Json).extra = replacement;
      else if (replacement === undefined) delete parent[last];
      else parent[last] = replacement;
      return { path: path.join('.'), value: copy };
    });
}

/** A valid root `RunInput` using most of its fields. */
export const SAMPLE_RUN_INPUT: Json = {
  task: 'price an order',
  messages: [{ role: 'user', content: 'hello' }],
  mode: 'conversation',
  idleTimeoutSeconds: 60,
  preset: 'assistant',
  model: 'test-model',
  effort: 'low',
  limits: { maxTurns: 3, maxCostUsd: 0.5, maxTokens: 1000, maxToolCalls: 2 },
  scopes: ['tools.calc'],
  tenant: 'acme',
};
