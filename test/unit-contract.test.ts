/**
 * Small rules of the contract, on their own: the steering tools as the model sees them (R2.2), a child's answer held
 * to its return shape (R2.8), a fork's input (R4.6), hooks given one way (R3.6), usage arithmetic (R2.6), the persona
 * with its skills (R4.2), text made safe for a terminal, and offline scenario scripts (R5.2).
 */
import { describe, expect, it } from 'vitest';
import { HookConfig } from '../src/contract/hooks.js';
import { RunInput } from '../src/contract/run.js';
import type { RecordedRequest } from '../src/testing/script.js';
import { scriptRules } from '../src/eval/offline-script.js';
import { steeringToolSpec } from '../src/contract/delegation.js';
import { checkReturnShape, parseInvocation } from '../src/contract/checks/contract-checks.js';
import { renderPersona } from '../src/rules/persona.js';
import { terminalSafe, terminalSafeJson } from '../src/rules/terminal.js';
import { addSpend, addTokens, addToolCalls, ZERO_USAGE } from '../src/rules/usage.js';

describe('R2.2 the steering tools as the model sees them', () => {
  it('R2.2 each has its name, a description, parameters, and needs run.delegate except ask_parent', () => {
    const specs = [
      steeringToolSpec('delegate'),
      steeringToolSpec('interject'),
      steeringToolSpec('followup'),
      steeringToolSpec('wait'),
      steeringToolSpec('answer_child'),
    ];
    expect(specs.map((s) => s.name)).toEqual(['delegate', 'interject', 'followup', 'wait', 'answer_child']);
    for (const spec of specs) {
      expect(spec.scopes).toEqual(['run.delegate']);
      expect(spec.description.length).toBeGreaterThan(40);
      expect(spec.parameters).toMatchObject({ type: 'object' });
    }
    expect(steeringToolSpec('ask_parent')).toMatchObject({
      name: 'ask_parent',
      scopes: [],
      parameters: { type: 'object' },
    });
    expect(steeringToolSpec('ask_parent').description.length).toBeGreaterThan(40);
    expect(steeringToolSpec('delegate').parameters).toMatchObject({ required: ['briefs'] });
  });

  it('R2.2 arguments that are not JSON, or not a delegation, are refused with why; nothing is spawned', () => {
    expect(parseInvocation('{not json')).toEqual({
      ok: false,
      error: expect.stringMatching(/^arguments are not valid JSON \(.+\); nothing was spawned$/) as string,
    });
    expect(parseInvocation('{"briefs": 3}')).toEqual({
      ok: false,
      error: expect.stringMatching(/^invalid delegate arguments: briefs: .+; nothing was spawned$/) as string,
    });
  });
});

describe('R2.2 what a brief must carry, and what the model is told to give it', () => {
  it('50.10 only briefs, task_name and message are required; the description says self-contained look-ups need no context', () => {
    const spec = steeringToolSpec('delegate');
    expect(spec.description).toContain(
      'Fork context only when the child needs what was said here; self-contained look-ups need none.',
    );
    const parameters = spec.parameters as {
      required: string[];
      properties: {
        return_shape: unknown;
        briefs: { items: { required: string[]; properties: Record<string, unknown> } };
      };
    };
    expect(parameters.required).toEqual(['briefs']);
    expect(parameters.properties.return_shape).toBeDefined();
    expect([...parameters.properties.briefs.items.required].sort()).toEqual(['message', 'task_name']);
    expect(parameters.properties.briefs.items.properties).toHaveProperty('success_condition');
  });
});

describe('R2.8 a child answer held to its return shape', () => {
  const shape = { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] };
  it('R2.8 JSON that matches passes as the value (a fenced block too); anything else says what is wrong', () => {
    expect(checkReturnShape('{"total": 3}', shape)).toEqual({ ok: true, value: { total: 3 } });
    expect(checkReturnShape('```json\n{"total": 4}\n```', shape)).toEqual({ ok: true, value: { total: 4 } });
    expect(checkReturnShape(null, shape)).toEqual({
      ok: false,
      error: 'the child gave no output to check against return_shape',
    });
    expect(checkReturnShape('three', shape)).toEqual({
      ok: false,
      error: 'the output is not JSON, but return_shape asks for JSON',
    });
    expect(checkReturnShape('{"total": "3"}', shape)).toEqual({
      ok: false,
      error: expect.stringMatching(/^the output does not match return_shape: total: /) as string,
    });
  });
});

describe('R4.6 a fork runs with exactly its source composition', () => {
  const preset = { id: 'p', persona: 'x', tools: [], skills: {}, contextRendering: 'block' };
  const fork = (over: Record<string, unknown>, restore: Record<string, unknown> = {}) =>
    RunInput.safeParse({ task: 't', ...over, restore: { kind: 'fork', events: [], preset, ...restore } });
  const problems = (parsed: ReturnType<typeof fork>) =>
    parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);

  it('R4.6 a fork with its source preset passes; choosing a preset, selecting one or lacking one is refused', () => {
    expect(fork({}).success).toBe(true);
    expect(problems(fork({ preset: 'other' }))).toEqual([
      "preset: a fork keeps its source's composition; start a new run (or import the session) to choose a preset",
    ]);
    expect(problems(fork({}, { select: { presetId: 'p', revision: 'r' } }))).toEqual([
      'restore.select: a fork does not select a preset',
    ]);
    expect(problems(fork({}, { preset: undefined }))).toEqual([
      "restore.preset: a fork needs its source's preset definition (DeputyClient.fork sends it)",
    ]);
    // An import may choose.
    expect(RunInput.safeParse({ task: 't', preset: 'other', restore: { kind: 'import', events: [] } }).success).toBe(
      true,
    );
  });
});

describe('R3.6 a hook is a webhook or a function, never both', () => {
  it('R3.6 exactly one of url or function', () => {
    const hook = { name: 'audit', events: ['subagent.start'] };
    expect(HookConfig.safeParse({ ...hook, function: 'gate' }).success).toBe(true);
    expect(HookConfig.safeParse({ ...hook, url: 'https://audit.example/hook' }).success).toBe(true);
    for (const bad of [hook, { ...hook, function: 'gate', url: 'https://audit.example/hook' }]) {
      const parsed = HookConfig.safeParse(bad);
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues.map((i) => i.message)).toEqual(['give exactly one of url or function']);
    }
  });
});

describe('R2.6 usage arithmetic', () => {
  it('R2.6 spend and tool calls add up; tokens add per direction', () => {
    const once = addSpend(ZERO_USAGE, { inputTokens: 10, outputTokens: 2, costMicroUsd: 7 });
    const twice = addSpend(once, { inputTokens: 1, outputTokens: 3, costMicroUsd: 5 });
    expect(twice).toMatchObject({ inputTokens: 11, outputTokens: 5, totalTokens: 16, costMicroUsd: 12 });
    expect(twice.modelCalls).toBe(ZERO_USAGE.modelCalls);
    expect(addToolCalls(twice, 3).toolCalls).toBe(ZERO_USAGE.toolCalls + 3);
    expect(addTokens({ inputTokens: 1, outputTokens: 2 }, { inputTokens: 30, outputTokens: 40 })).toEqual({
      inputTokens: 31,
      outputTokens: 42,
    });
  });
});

describe('R4.2 the persona and R5.2 offline scripts', () => {
  it('R4.2 the persona alone, or followed by its skills in order', () => {
    expect(renderPersona({ persona: 'You price.', skills: {} })).toBe('You price.');
    expect(renderPersona({ persona: 'You price.', skills: { tax: 'Use 8%.', ship: 'Add $4.99.' } })).toBe(
      'You price.\n\n## Skills\n\n### tax\nUse 8%.\n\n### ship\nAdd $4.99.',
    );
  });

  it('terminal text: control and bidi characters are shown as escapes, ordinary text untouched', () => {
    expect(terminalSafe('ok\ttab\nline é')).toBe('ok\ttab\nline é');
    expect(terminalSafe('a\u001b[31mred\u202eb\u007f')).toBe('a\\u{1b}[31mred\\u{202e}b\\u{7f}');
    expect(terminalSafeJson({ a: 'x\u0007' })).toBe('{\n  "a": "x\\u0007"\n}');
    expect(terminalSafeJson({ a: 'x\u2066' })).toBe('{\n  "a": "x\\u2066"\n}');
  });

  it('R5.2 an offline rule matches on what the user said, how the last message starts and the tool results', () => {
    const request = (messages: { role: string; content: string }[]) =>
      ({ body: { model: 'm', messages } }) as RecordedRequest;
    const [says, starts, results, any] = scriptRules(
      [
        { when: { says: 'price' }, reply: { text: '1' }, times: 1, delayMs: 0 },
        { when: { lastStartsWith: 'Tax' }, reply: { text: '2' }, times: 1, delayMs: 0 },
        { when: { toolResults: 1 }, reply: { text: '3' }, times: 1, delayMs: 0 },
        { when: {}, reply: { text: '4' }, times: 2, delayMs: 5 },
      ],
      'single',
    );
    expect([says!.name, any!.name, any!.times, any!.delayMs]).toEqual(['single#0', 'single#3', 2, 5]);
    const priced = request([{ role: 'user', content: 'please price it' }]);
    const assistantSaysPrice = request([{ role: 'assistant', content: 'price' }]);
    const taxed = request([
      { role: 'user', content: 'x' },
      { role: 'tool', content: 'Tax is 8%' },
    ]);
    expect([says!.when!(priced), says!.when!(assistantSaysPrice), says!.when!(taxed)]).toEqual([true, false, false]);
    expect([starts!.when!(taxed), starts!.when!(priced)]).toEqual([true, false]);
    expect([results!.when!(taxed), results!.when!(priced)]).toEqual([true, false]);
    expect(any!.when!(priced)).toBe(true);
  });
});
