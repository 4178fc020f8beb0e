/**
 * Workflow code checks its hot inputs against JSON Schemas generated from the zod contract, and evaluates
 * zod only for what they do not vouch for. These tests hold the fast path to zod: the generated file is current, a
 * value the fast path calls valid is one zod accepts and returns unchanged, the update validators agree with zod
 * exactly, and no module the workflow bundle evaluates at load imports zod.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { generatedModule, GENERATED_PATH } from '../scripts/json-schemas.js';
import * as GENERATED from '../src/contract/json-schemas.js';
import { EndConversationInput, RunInput, RunResult, SendMessageInput } from '../src/contract/run.js';
import { DelegateArgs, InterjectArgs } from '../src/rules/delegation.js';
import { checkSchema, type JsonSchema } from '../src/rules/schema-check.js';
import { describeIssues } from '../src/rules/zod-issues.js';
import { mutated, SAMPLE_RUN_INPUT, type Json } from './support/fuzzing.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SEED = 20261130;

const PRESET = {
  id: 'assistant',
  persona: 'You help.',
  tools: ['calculate'],
  skills: { pricing: 'Quote in EUR.' },
  contextRendering: 'block',
};
const ROOT_INPUT: Json = {
  ...SAMPLE_RUN_INPUT,
  limits: { maxTurns: 3, maxCostUsd: 0.5, maxTokens: 1000, maxToolCalls: 2, synthesisReserve: { tokens: 10 } },
};
const CHILD_INPUT: Json = {
  task: '## Your task\nfind the rate',
  preset: 'assistant',
  model: 'test-model',
  limits: { maxTurns: 5, maxTokens: 100, maxCostUsd: 1, maxToolCalls: 5, deadline: '2026-11-30T17:36:58.186Z' },
  scopes: ['tools.calc'],
  origin: {
    parentId: 'p',
    rootId: 'p',
    depth: 1,
    taskName: 'look-up',
    invocation: 1,
    allowedTools: ['calculate'],
    contextMode: 2,
    preset: { definition: PRESET, revision: 'abc', selected: false },
    composition: {
      tools: ['calculate', { name: 'search_notes', scopes: ['tools.notes'] }],
      price: { inputMicroUsdPerMTok: 1, outputMicroUsdPerMTok: 2 },
      defaultLimits: { maxTurns: 3, synthesisReserve: false },
      compaction: { thresholdTokens: 6000, keepRecentTurns: 3, continueAsNewAfterEvents: 600 },
      payloads: { maxTextBytes: 262144, maxInputBytes: 1048576 },
    },
    background: { source: 'parent-chat', content: 'ctx', dialogue: [{ role: 'user', content: 'hi' }] },
  },
};
const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3, costMicroUsd: 4, modelCalls: 1, toolCalls: 0 };
const BRIEF = { task_name: 'look-up', message: 'find the rate', context: 'summary', limits: { maxTurns: 2 } };

/** Schemas, the generated JSON Schema, and valid values to break. */
const CASES: [string, z.ZodType, JsonSchema, Json[]][] = [
  ['RunInput', RunInput, GENERATED.RUN_INPUT_SCHEMA, [ROOT_INPUT, CHILD_INPUT]],
  ['RunResult', RunResult, GENERATED.RUN_RESULT_SCHEMA, [{ status: 'failed', output: null, usage, sessionId: 's' }]],
  ['SendMessageInput', SendMessageInput, GENERATED.SEND_MESSAGE_INPUT_SCHEMA, [{ message: 'hi' }]],
  ['EndConversationInput', EndConversationInput, GENERATED.END_CONVERSATION_INPUT_SCHEMA, [{ reason: 'done' }]],
  ['InterjectArgs', InterjectArgs, GENERATED.STEERING_ARGS_SCHEMAS.interject, [{ task_name: 'a', message: 'b' }]],
  [
    'DelegateArgs',
    DelegateArgs,
    GENERATED.STEERING_ARGS_SCHEMAS.delegate,
    [{ briefs: [BRIEF, { ...BRIEF, context: 2 }] }],
  ],
];
/** Used by synchronous update validators: their verdict must be zod's, both ways. */
const EXACT = new Set(['SendMessageInput', 'EndConversationInput', 'InterjectArgs']);

describe('R1.7 JSON Schema fast path, held to zod', () => {
  it('the committed src/contract/json-schemas.ts is what `npm run schemas` generates', async () => {
    expect(readFileSync(GENERATED_PATH, 'utf8'), 'run `npm run schemas`').toBe(await generatedModule());
  });

  for (const [name, schema, json, bases] of CASES) {
    it(`${name}: a value the fast path calls valid is one zod accepts and returns unchanged`, () => {
      for (const base of bases) expect(checkSchema(json, base), JSON.stringify(base)).toEqual({ kind: 'valid' });
      let valid = 0;
      fc.assert(
        fc.property(
          fc.oneof(...bases.map((base) => mutated(base, { addKeys: true }).map((m) => m.value)), fc.anything()),
          (raw) => {
            // What a workflow receives went through the JSON payload converter.
            const text = JSON.stringify(raw);
            if (text === undefined) return;
            const value: unknown = JSON.parse(text);
            const verdict = checkSchema(json, value);
            const parsed = schema.safeParse(value);
            if (verdict.kind === 'valid') {
              valid += 1;
              expect(parsed.success, JSON.stringify(value)).toBe(true);
              expect(parsed.data).toEqual(value);
            }
            if (EXACT.has(name)) {
              expect(verdict.kind, JSON.stringify(value)).not.toBe('unsure');
              expect(verdict.kind === 'valid', JSON.stringify(value)).toBe(parsed.success);
              // The first problem names the field zod's first problem names (what callers read).
              if (verdict.kind === 'invalid' && !parsed.success) {
                const field = (line: string) => line.split(':')[0];
                expect(field(verdict.issues[0]!), JSON.stringify(value)).toBe(field(describeIssues(parsed.error)[0]!));
              }
            }
          },
        ),
        { numRuns: 3000, seed: SEED },
      );
      // A fuzzer that never produced a valid value would prove nothing.
      expect(valid).toBeGreaterThan(50);
    });
  }

  it('an invalid verdict names the field', () => {
    expect(checkSchema(GENERATED.RUN_INPUT_SCHEMA, { ...ROOT_INPUT, limits: { maxTurns: 0 } })).toEqual({
      kind: 'invalid',
      issues: ['limits.maxTurns: must be > 0'],
    });
    expect(checkSchema(GENERATED.SEND_MESSAGE_INPUT_SCHEMA, { text: 'hi' })).toEqual({
      kind: 'invalid',
      issues: ['message: required', '(root): unrecognized key "text"'],
    });
  });

  it('a missing field with a default, or an unknown keyword, is unsure (zod decides)', () => {
    const { persona: _persona, ...bare } = PRESET;
    const input = {
      ...CHILD_INPUT,
      origin: { ...(CHILD_INPUT.origin as Json), preset: { definition: bare, revision: 'a', selected: false } },
    };
    expect(checkSchema(GENERATED.RUN_INPUT_SCHEMA, input)).toEqual({ kind: 'unsure' });
    expect(checkSchema({ type: 'string', contentEncoding: 'base64' }, 'x')).toEqual({ kind: 'unsure' });
  });

  it('no module the workflow bundle evaluates at load imports zod (it is loaded on first use only)', () => {
    const seen = new Set<string>();
    const zodImporters: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      // Static imports and re-exports that are not type-only; `import()` is not one of them.
      const imports = source.matchAll(/^(?:import|export)\s+(?!type\s)([^;]*?)\s+from\s+'([^']+)';/gms);
      for (const [, clause, from] of imports) {
        if (
          /^\{[^}]*\}$/s.test(clause!.trim()) &&
          clause!
            .replace(/[{}\s]/g, '')
            .split(',')
            .every((n) => n.startsWith('type') || n === '')
        )
          continue;
        if (from === 'zod') zodImporters.push(file.slice(ROOT.length));
        if (from!.startsWith('.')) visit(resolve(dirname(file), from!.replace(/\.js$/, '.ts')));
      }
    };
    visit(join(ROOT, 'workflows', 'index.ts'));
    expect(seen.size).toBeGreaterThan(20);
    expect(zodImporters).toEqual([]);
  });
});
