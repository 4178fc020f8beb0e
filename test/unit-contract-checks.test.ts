/**
 * Workflow code checks what comes in against JSON Schemas generated from the zod contract, without zod. These tests
 * hold that checker to zod: the generated file is current; on every value zod and the checker agree whether it is
 * valid, the checker returns what zod returns, and its first problem names the field zod's first problem names; the
 * fork rule holds. test/workflow-bundle.test.ts holds zod out of the workflow bundle.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { COMPILED_PATH, compiledModule } from '../scripts/compiled-checks.js';
import { delegateArgs, plainRunInput } from '../src/contract/compiled-checks.js';
import { generatedModule, GENERATED_PATH } from '../scripts/json-schemas.js';
import { EndConversationInput, RunInput, RunResult, SendMessageInput } from '../src/contract/run.js';
import { AnswerChildArgs, DelegateArgs, InterjectArgs, WaitArgs } from '../src/contract/delegation.js';
import {
  asRunResult,
  checkReturnShape,
  checkRunInput,
  CONTRACT,
  parseInvocation,
  parseSteeringArgs,
  runInputChecker,
  steeringChecker,
} from '../src/contract/checks/contract-checks.js';
import type { SchemaChecker } from '../src/contract/checks/json-schema.js';
import { describeIssues } from '../src/rules/zod-issues.js';
import { mutated, SAMPLE_RUN_INPUT, type Json } from './support/fuzzing.js';

const SEED = 20261130;
/**
 * Cases per property: 3,000 in the suite; under mutation testing (which lowers the global default) each mutant these
 * properties reach reruns them, so they run 400, still enough to tell a compiled check from zod.
 */
const RUNS = fc.readConfigureGlobal().numRuns === undefined ? 3000 : 400;
/** A fuzzer that produced fewer valid values than this proved nothing. */
const ENOUGH = RUNS / 60;

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
    parentBackground: { source: 'parent-chat', content: 'ctx', dialogue: [{ role: 'user', content: 'hi' }] },
  },
};
const usage = {
  inputTokens: 1,
  outputTokens: 2,
  totalTokens: 3,
  costMicroUsd: 4,
  modelCalls: 1,
  toolCalls: 0,
  billed: { inputTokens: 1, outputTokens: 1, costMicroUsd: 3 },
};
const BRIEF = { task_name: 'look-up', message: 'find the rate', context: 'summary', limits: { maxTurns: 2 } };
const { persona: _persona, tools: _tools, ...BARE_PRESET } = PRESET;
const AT = '2026-11-30T17:36:58.186Z';
const EVENTS: Json[] = [
  {
    type: 'session/header',
    at: AT,
    version: 1,
    sessionId: 's',
    parentId: null,
    depth: 0,
    preset: 'assistant',
    model: 'test-model',
  },
  { type: 'message/user', at: AT, content: 'price an order' },
  { type: 'message/assistant', at: AT, content: null, toolCalls: [{ id: 'c1', name: 'calculate', arguments: '{}' }] },
  { type: 'tool/result', at: AT, toolCallId: 'c1', name: 'calculate', content: '2', isError: false },
];
const RESTORED_INPUT: Json = {
  task: 'go on',
  restore: { kind: 'import', events: EVENTS, preset: BARE_PRESET, model: 'test-model' },
};

/** Schemas, the workflow's checker for each, and valid values to break. */
const CASES: [string, z.ZodType, SchemaChecker, Json[]][] = [
  ['RunInput', RunInput, CONTRACT.runInput, [ROOT_INPUT, CHILD_INPUT, RESTORED_INPUT]],
  ['RunResult', RunResult, CONTRACT.runResult, [{ status: 'failed', output: null, usage, sessionId: 's' }]],
  ['SendMessageInput', SendMessageInput, CONTRACT.sendMessage, [{ message: 'hi' }]],
  ['EndConversationInput', EndConversationInput, CONTRACT.endConversation, [{ reason: 'done' }]],
  ['InterjectArgs', InterjectArgs, steeringChecker('interject'), [{ task_name: 'a', message: 'b' }]],
  ['AnswerChildArgs', AnswerChildArgs, steeringChecker('answer_child'), [{ task_name: 'a', answer: 'b' }]],
  ['WaitArgs', WaitArgs, steeringChecker('wait'), [{ task_names: ['a'] }]],
  ['DelegateArgs', DelegateArgs, steeringChecker('delegate'), [{ briefs: [BRIEF, { ...BRIEF, context: 2 }] }]],
];

const field = (line: string) => line.split(':')[0];

/** What a workflow receives, as JSON text: a base changed (keys added, values swapped), or anything at all. */
const jsonTexts = (bases: Json[]) =>
  fc
    .oneof(...bases.map((base) => mutated(base, { addKeys: true }).map((m) => m.value)), fc.anything())
    .map((raw) => JSON.stringify(raw) as string | undefined)
    .filter((text): text is string => text !== undefined);

describe('R1.7 the workflow checker, held to zod', () => {
  it('the committed src/contract/json-schemas.ts is what `npm run schemas` generates', async () => {
    expect(readFileSync(GENERATED_PATH, 'utf8'), 'run `npm run schemas`').toBe(await generatedModule());
  });

  it('the committed src/contract/compiled-checks.js (compiled from those schemas) is what `npm run schemas` generates', () => {
    expect(readFileSync(COMPILED_PATH, 'utf8'), 'run `npm run schemas`').toBe(compiledModule());
  });

  for (const [name, schema, checker, bases] of CASES) {
    it(`${name}: valid exactly when zod says so, returning what zod returns, naming the field zod names first`, () => {
      for (const base of bases) expect(checker.check(base), JSON.stringify(base)).toMatchObject({ ok: true });
      let valid = 0;
      fc.assert(
        fc.property(
          // What a workflow receives went through the JSON payload converter.
          jsonTexts(bases),
          (text) => {
            const checked = checker.check(JSON.parse(text));
            const parsed = schema.safeParse(JSON.parse(text));
            expect(checked.ok, text).toBe(parsed.success);
            if (checked.ok && parsed.success) {
              valid += 1;
              expect(checked.value, text).toEqual(parsed.data);
            }
            if (!checked.ok && !parsed.success) {
              expect(field(checked.issues[0]!), text).toBe(field(describeIssues(parsed.error)[0]!));
            }
          },
        ),
        { numRuns: RUNS, seed: SEED },
      );
      // A fuzzer that never produced a valid value would prove nothing.
      expect(valid).toBeGreaterThan(ENOUGH);
    });
  }

  it('a problem names the field, in the words of the contract where it has its own', () => {
    expect(CONTRACT.runInput.check({ ...ROOT_INPUT, limits: { maxTurns: 0 } })).toEqual({
      ok: false,
      issues: ['limits.maxTurns: must be > 0'],
    });
    expect(CONTRACT.sendMessage.check({ text: 'hi' })).toEqual({
      ok: false,
      issues: ['message: required', '(root): unrecognized key "text"'],
    });
    expect(CONTRACT.runInput.check({ task: '' })).toEqual({
      ok: false,
      issues: ['task: task must not be empty or only spaces'],
    });
    expect(steeringChecker('delegate').check({ briefs: [] })).toEqual({
      ok: false,
      issues: ['briefs: give at least one brief'],
    });
  });

  it('an update validator throws naming each problem, and passes a payload that fits', () => {
    expect(() => CONTRACT.sendMessage.assert({ text: 'hi' }, 'sendMessage payload')).toThrow(
      'invalid sendMessage payload: message: required; (root): unrecognized key "text"',
    );
    expect(() => CONTRACT.sendMessage.assert({ message: 'hi' }, 'sendMessage payload')).not.toThrow();
  });

  it("a preset's missing fields are filled in with its defaults, as zod fills them", () => {
    const input = {
      ...CHILD_INPUT,
      origin: { ...(CHILD_INPUT.origin as Json), preset: { definition: BARE_PRESET, revision: 'a', selected: false } },
    };
    const checked = checkRunInput(input);
    expect(checked.ok && checked.input.origin?.preset?.definition).toEqual({ ...BARE_PRESET, persona: '', tools: [] });
  });

  it('R4.6 a fork keeps its source composition: the rule no schema states holds in the workflow as in zod', () => {
    const fork = {
      task: 'again',
      preset: 'other',
      restore: { kind: 'fork', events: EVENTS, select: { presetId: 'a', revision: 'b' } },
    };
    const checked = checkRunInput(fork);
    const parsed = RunInput.safeParse(fork);
    expect(checked.ok).toBe(false);
    expect(!checked.ok && checked.issues).toEqual(!parsed.success && describeIssues(parsed.error));
    expect(!checked.ok && checked.issues).toEqual([
      "preset: a fork keeps its source's composition; start a new run (or import the session) to choose a preset",
      'restore.select: a fork does not select a preset',
      "restore.preset: a fork needs its source's preset definition (DeputyClient.fork sends it)",
    ]);
  });

  it("R2.2 a steering tool's arguments: empty is {}, bad JSON names what to send, a problem names the field", () => {
    expect(parseSteeringArgs('wait', '')).toEqual({ ok: true, args: {} });
    expect(parseSteeringArgs('interject', '{"task_name": "a", "message": "b", "x": 1}')).toEqual({
      ok: false,
      error: 'invalid interject arguments: (root): unrecognized key "x"',
    });
    expect(parseSteeringArgs('ask_parent', '{"question": ')).toEqual({
      ok: false,
      error: 'arguments for "ask_parent" are not valid JSON; send {"question": …}',
    });
    expect(parseSteeringArgs('answer_child', '{"task_name": "a", "answer": ""}')).toEqual({
      ok: false,
      error: 'invalid answer_child arguments: answer: answer must not be empty',
    });
  });

  it('R1.7 a run input that fails its schema names the field; a child result is read only when it is one', () => {
    expect(checkRunInput({ task: '' })).toEqual({ ok: false, issues: ['task: task must not be empty or only spaces'] });
    expect(checkRunInput(ROOT_INPUT)).toMatchObject({ ok: true, input: ROOT_INPUT });
    const result = { status: 'failed', output: null, usage, sessionId: 's', extra: 1 };
    expect(asRunResult(result)).toEqual({ status: 'failed', output: null, usage, sessionId: 's' });
    expect(asRunResult({ status: 'failed' })).toBeNull();
    expect(asRunResult(undefined)).toBeNull();
  });

  it('R1.7 a run input is read the same whichever schema checks it: without resume and restore, or the whole one', () => {
    // checkRunInput checks an input that carries neither field against the schema without them; it must say what the
    // whole schema (held to zod above) says, for every input, valid or not.
    let plainValid = 0;
    let carrying = 0;
    fc.assert(
      fc.property(jsonTexts([ROOT_INPUT, CHILD_INPUT, RESTORED_INPUT]), (text) => {
        const value = JSON.parse(text) as unknown;
        const carries = typeof value === 'object' && value !== null && ('resume' in value || 'restore' in value);
        if (carries) carrying += 1;
        const checked = runInputChecker(value).check(value);
        expect(checked, text).toEqual(CONTRACT.runInput.check(JSON.parse(text)));
        if (!carries && checked.ok) plainValid += 1;
        // The check never changes what it was given.
        expect(value, text).toEqual(JSON.parse(text));
      }),
      { numRuns: RUNS, seed: SEED },
    );
    expect(plainValid).toBeGreaterThan(ENOUGH);
    expect(carrying).toBeGreaterThan(ENOUGH);
  });

  it('R1.7 the compiled checks alone: pass exactly what zod passes and shape it as zod does (no fallback behind them)', () => {
    // A compiled check that refused too much would still give the right answer through the checker's second pass;
    // this holds the compiled code itself to zod, so its speed is not lost unseen.
    const compiled: [string, (value: unknown) => boolean, z.ZodType, Json[]][] = [
      ['plain RunInput', plainRunInput, RunInput, [ROOT_INPUT, CHILD_INPUT]],
      ['DelegateArgs', delegateArgs, DelegateArgs, [{ briefs: [BRIEF, { ...BRIEF, context: 2 }] }]],
    ];
    for (const [name, check, schema, bases] of compiled) {
      let valid = 0;
      fc.assert(
        fc.property(jsonTexts(bases), (text) => {
          const value = JSON.parse(text) as unknown;
          if (typeof value === 'object' && value !== null && ('resume' in value || 'restore' in value)) return;
          const parsed = schema.safeParse(JSON.parse(text));
          expect(check(value), `${name} ${text}`).toBe(parsed.success);
          if (parsed.success) {
            valid += 1;
            expect(value, `${name} ${text}`).toEqual(parsed.data);
          }
        }),
        { numRuns: RUNS, seed: SEED },
      );
      expect(valid, name).toBeGreaterThan(ENOUGH);
    }
  });

  it('R1.7 only an input that carries resume or restore is checked by the whole schema; the rest by one without them', () => {
    for (const raw of [{ task: 'x', resume: null }, { task: 'x', restore: {} }, RESTORED_INPUT]) {
      expect(runInputChecker(raw), JSON.stringify(raw)).toBe(CONTRACT.runInput);
    }
    for (const raw of [ROOT_INPUT, CHILD_INPUT, { task: 'x' }, null, 'x', [], 1]) {
      const checker = runInputChecker(raw);
      expect(checker, JSON.stringify(raw)).not.toBe(CONTRACT.runInput);
      // It knows no resume: that field is the whole schema's alone.
      expect(checker.check({ task: 'x', resume: {} })).toEqual({
        ok: false,
        issues: ['(root): unrecognized key "resume"'],
      });
    }
  });

  it('R2.8 a return shape must be a usable JSON Schema; an answer is read from its fence and keeps what the shape allows', () => {
    const brief = { task_name: 'a', message: 'b' };
    const shape = { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] };
    expect(parseInvocation(JSON.stringify({ briefs: [brief], return_shape: shape }))).toMatchObject({ ok: true });
    expect(parseInvocation(JSON.stringify({ briefs: [brief], return_shape: { type: 12 } }))).toEqual({
      ok: false,
      error: expect.stringMatching(
        /^return_shape is not a usable JSON Schema: type: .+; nothing was spawned$/,
      ) as string,
    });
    expect(checkReturnShape('```json\n{"total": 3, "note": "x"}\n```', shape)).toEqual({
      ok: true,
      value: { total: 3, note: 'x' },
    });
    expect(checkReturnShape('{"total": "3"}', shape)).toEqual({
      ok: false,
      error: 'the output does not match return_shape: total: expected number, received string',
    });
    expect(checkReturnShape('{"total": 3}', { $ref: 'https://example.com/elsewhere.json' })).toEqual({
      ok: false,
      error:
        'return_shape cannot be checked in bounded time: #/$ref: only references inside the schema (#…) are followed, not "https://example.com/elsewhere.json"',
    });
  });
});
