/**
 * Bad input everywhere: fast-check fuzzing of RunInput, the sendMessage and interject payloads, delegate arguments,
 * the config file and imported sessions. Thousands of cases through the parsers each, then hundreds through a live
 * worker. Always a validation error naming the field at fault; never a crash, never a stuck workflow.
 */
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { loadConfig, readEnv } from '../../src/config/load.js';
import { parseConfig } from '../../src/config/schema.js';
import { ConfigError } from '../../src/contract/errors.js';
import { InterjectArgs } from '../../src/contract/delegation.js';
import { parseInvocation } from '../../src/contract/checks/contract-checks.js';
import { failureMessage } from '../../src/rules/failure-message.js';
import { RunInput, RunState, SendMessageInput } from '../../src/contract/run.js';
import { parseSessionExport } from '../../src/rules/sessions.js';
import { forTask, userSays } from '../../src/testing/script.js';
import { describeIssues } from '../../src/rules/zod-issues.js';
import { useHarness } from '../support/harness.js';
import { FAULT_CONFIG, TREE_SCOPES } from './support.js';
import { mutated, SAMPLE_RUN_INPUT, type Json } from '../support/fuzzing.js';

const SEED = Number(process.env.FAULTS_SEED ?? 20261130);
const RUNS = Number(process.env.FUZZ_RUNS ?? 2000);
// Room for the 500 turns the fuzzed conversation asks for: the config's limits are the most a run may ask.
const h = useHarness({ config: parseConfig({ ...FAULT_CONFIG, limits: { ...FAULT_CONFIG.limits, maxTurns: 500 } }) });

/** A problem line names a field path (or the root) and says what is wrong; odd keys are quoted: `a["b c"].d`. */
const PROBLEM_LINE = /^(\(root\)|(?:[\w-]+|\[".*?"\])(?:\.[\w-]+|\[".*?"\])*): \S/;

/**
 * The property every parser must have: it accepts the value, or it explains each problem on a line naming the
 * field — and a value broken at `path` gets a line for that path (or a field inside it).
 */
function expectExplained(problems: readonly string[] | null, path?: string): void {
  if (problems === null) return;
  expect(problems.length).toBeGreaterThan(0);
  for (const line of problems) expect(line).toMatch(PROBLEM_LINE);
  if (path !== undefined) expect(problems.some((line) => namesField(line, path))).toBe(true);
}

/** The line is about `path`: the field itself, a field inside it, or the object that holds it (a cross-field check). */
function namesField(line: string, path: string): boolean {
  const named = PROBLEM_LINE.exec(line)?.[1] ?? '';
  return named === path || named.startsWith(`${path}.`) || named.startsWith(`${path}[`) || path.startsWith(`${named}.`);
}

function zodProblems(schema: z.ZodType, value: unknown): string[] | null {
  const parsed = schema.safeParse(value);
  return parsed.success ? null : describeIssues(parsed.error);
}

const RUN_INPUT = SAMPLE_RUN_INPUT;
const BRIEF = { task_name: 'look-up', message: 'find the rate', context: 'summary', limits: { maxTurns: 2 } };
const DELEGATE_ARGS: Json = { briefs: [BRIEF, { ...BRIEF, task_name: 'other', context: 2 }] };
const CONFIG: Json = {
  ...FAULT_CONFIG,
  compaction: { thresholdTokens: 6000, keepRecentTurns: 3, continueAsNewAfterEvents: 600 },
  hooks: [{ name: 'audit', events: ['subagent.start'], url: 'http://127.0.0.1:1/hook', timeoutSeconds: 2 }],
};
const SESSION = JSON.parse(
  readFileSync(new URL('../fixtures/sessions/a-selected-before-descriptor.json', import.meta.url), 'utf8'),
) as Json;
const options = { numRuns: RUNS, seed: SEED };

describe(`bad input, parsers (${RUNS} cases each, seed ${SEED})`, () => {
  it('R1.7 RunInput: anything at all, and valid inputs broken at one field', () => {
    expect(zodProblems(RunInput, RUN_INPUT)).toBeNull();
    fc.assert(
      fc.property(fc.anything(), (value) => expectExplained(zodProblems(RunInput, value))),
      options,
    );
    fc.assert(
      fc.property(mutated(RUN_INPUT), ({ path, value }) => expectExplained(zodProblems(RunInput, value), path)),
      options,
    );
  });

  it('R1.7 sendMessage and interject payloads', () => {
    for (const [schema, base] of [
      [SendMessageInput, { message: 'next question' }],
      [InterjectArgs, { task_name: 'look-up', message: 'stop after the first source' }],
    ] as const) {
      expect(zodProblems(schema, base)).toBeNull();
      fc.assert(
        fc.property(fc.anything(), (value) => expectExplained(zodProblems(schema, value))),
        options,
      );
      fc.assert(
        fc.property(mutated(base), ({ path, value }) => expectExplained(zodProblems(schema, value), path)),
        options,
      );
    }
  });

  it('R2.2 delegate arguments: any string, any JSON, valid arguments broken at one field', () => {
    expect(parseInvocation(JSON.stringify(DELEGATE_ARGS)).ok).toBe(true);
    const explained = (text: string, path?: string) => {
      const check = parseInvocation(text);
      if (check.ok) return;
      expect(check.error).toMatch(/^(arguments are not valid JSON|invalid delegate arguments: |return_shape is not)/);
      expect(check.error).toMatch(/nothing was spawned$/);
      if (path && check.error.startsWith('invalid delegate arguments: ')) {
        const problems = check.error.slice('invalid delegate arguments: '.length).replace(/; nothing was spawned$/, '');
        expect(problems.split('; ').some((line) => namesField(line, path))).toBe(true);
      }
    };
    fc.assert(
      fc.property(fc.string(), (text) => explained(text)),
      options,
    );
    fc.assert(
      fc.property(fc.json(), (text) => explained(text)),
      options,
    );
    fc.assert(
      fc.property(mutated(DELEGATE_ARGS), ({ path, value }) => explained(JSON.stringify(value), path)),
      options,
    );
  });

  it('§6 the config file: any text, any value, a valid config broken at one field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'deputy-fuzz-config-'));
    const configProblems = (load: () => unknown) => {
      try {
        load();
        return null;
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as ConfigError).problems;
      }
    };
    expect(configProblems(() => parseConfig(CONFIG))).toBeNull();
    fc.assert(
      fc.property(fc.anything(), (value) => expectExplained(configProblems(() => parseConfig(value)))),
      options,
    );
    fc.assert(
      fc.property(mutated(CONFIG), ({ path, value }) =>
        expectExplained(
          configProblems(() => parseConfig(value)),
          // Checks across fields (an unknown default preset, a preset's model without a price) name the other field.
          path.startsWith('presets') || path.startsWith('prices') || path.startsWith('model') ? undefined : path,
        ),
      ),
      options,
    );
    // Files: any text (YAML is a superset of JSON) ends in a config or in lines naming the problem.
    let i = 0;
    const path = join(dir, 'config.yaml');
    writeFileSync(path, 'model: !gpt gpt-4.1-mini\n');
    expect(configProblems(() => loadConfig(readEnv({ DEPUTY_CONFIG: path })))).toEqual([
      expect.stringMatching(/^cannot parse: Unresolved tag: !gpt/),
    ]);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          mutated(CONFIG).map((m) => JSON.stringify(m.value)),
        ),
        (text) => {
          writeFileSync(path, text);
          i += 1;
          const problems = configProblems(() => loadConfig(readEnv({ DEPUTY_CONFIG: path })));
          if (problems)
            for (const line of problems) expect(line).toMatch(line.startsWith('cannot parse') ? /./ : PROBLEM_LINE);
        },
      ),
      { ...options, numRuns: Math.min(RUNS, 1000) },
    );
    expect(i).toBeGreaterThan(0);
  });

  it('R4.5 imported sessions: anything at all, and a valid export broken at one field', () => {
    const problems = (value: unknown) => {
      const parsed = parseSessionExport(value);
      return parsed.ok ? null : parsed.problems;
    };
    expect(problems(SESSION)).toBeNull();
    fc.assert(
      fc.property(fc.anything(), (value) => expectExplained(problems(value))),
      options,
    );
    fc.assert(
      fc.property(mutated(SESSION), ({ path, value }) => expectExplained(problems(value), path)),
      options,
    );
  });
});

describe(`bad input, live worker (seed ${SEED})`, () => {
  it('R1.7 200 fuzzed sendMessage and interject updates: rejected naming the field, and the run goes on', async () => {
    h.model.add({ when: userSays('fuzzed conversation'), times: Infinity, reply: { text: 'noted' } });
    const workflowId = h.id('fuzz-conv');
    await h.deputy.startRun(
      { task: 'fuzzed conversation', mode: 'conversation', limits: { maxTurns: 500 } },
      { workflowId },
    );
    const handle = h.client.workflow.getHandle(workflowId);
    await expect
      .poll(async () => (await h.deputy.getState(workflowId)).status, { timeout: 20_000 })
      .toBe('waiting_for_user');

    const payloads = fc.sample(
      fc.oneof(
        fc.anything(),
        mutated({ message: 'hi' }).map((m) => m.value),
        mutated({ task_name: 'x', message: 'y' }).map((m) => m.value),
      ),
      { numRuns: 100, seed: SEED },
    );
    let accepted = 0;
    for (const payload of payloads) {
      for (const update of ['sendMessage', 'interject'] as const) {
        const schema = update === 'sendMessage' ? SendMessageInput : InterjectArgs;
        const expected = zodProblems(schema, payload);
        try {
          await handle.executeUpdate(update, { args: [payload] });
          expect(expected, `${update} ${JSON.stringify(payload)} was accepted`).toBeNull();
          accepted += 1;
        } catch (err) {
          expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
          const message = failureMessage(err);
          if (expected) expect(message).toContain(`invalid ${update} payload: ${expected[0]!.split(':')[0]}`);
          else expect(message).toMatch(/no running child named/);
        }
      }
    }
    // The run is still alive and answering, and ends normally.
    const state = RunState.parse(await h.deputy.getState(workflowId));
    expect(state.status).toMatch(/waiting_for_user|running/);
    await h.deputy.endConversation(workflowId);
    expect(await h.deputy.result(workflowId)).toMatchObject({ status: 'completed' });
    expect(state.usage.modelCalls).toBe(1 + accepted);
  });

  it('R2.2 40 runs whose model calls delegate with fuzzed arguments: a tool error, nothing spawned, the run goes on', async () => {
    const args = fc
      .sample(
        fc.oneof(
          fc.string(),
          fc.json(),
          mutated(DELEGATE_ARGS).map((m) => JSON.stringify(m.value)),
        ),
        {
          numRuns: 200,
          seed: SEED,
        },
      )
      .filter((text) => !parseInvocation(text).ok)
      .slice(0, 40);
    expect(args.length).toBe(40);
    args.forEach((text, i) =>
      h.model.add(
        { when: forTask(`fuzzed delegate ${i}`, 0), reply: { toolCalls: [{ name: 'delegate', arguments: text }] } },
        { when: forTask(`fuzzed delegate ${i}`, 1), reply: { text: `recovered ${i}` } },
      ),
    );
    const results = await Promise.all(
      args.map(async (_, i) => {
        const workflowId = h.id(`fuzz-delegate-${i}`);
        await h.deputy.startRun({ task: `fuzzed delegate ${i}`, scopes: TREE_SCOPES }, { workflowId });
        return { workflowId, result: await h.deputy.result(workflowId) };
      }),
    );
    for (const [i, { workflowId, result }] of results.entries()) {
      expect(result).toMatchObject({ status: 'completed', output: `recovered ${i}` });
      const state = RunState.parse(await h.deputy.getState(workflowId));
      expect(state.delegations).toEqual([]);
      const toolResult = JSON.stringify(state.session.find((e) => e.type === 'tool/result'));
      expect(toolResult).toMatch(/not valid JSON|invalid delegate arguments|return_shape/);
    }
  });
  // Last: its catch-all model rule would answer the other tests' requests.
  it('R1.7 60 fuzzed RunInputs started directly (no client validation): each ends at once, naming the field', async () => {
    h.model.add({ when: () => true, times: Infinity, reply: { text: 'ran' } });
    const inputs = fc.sample(fc.oneof(fc.anything(), mutated({ ...RUN_INPUT, mode: 'task' })), {
      numRuns: 60,
      seed: SEED,
    });
    await Promise.all(
      inputs.map(async (input, i) => {
        const value = input && typeof input === 'object' && 'path' in input && 'value' in input ? input.value : input;
        const handle = await h.client.workflow.start('agentRun', {
          taskQueue: h.taskQueue,
          workflowId: h.id(`fuzz-input-${i}`),
          args: [value],
        });
        const problems = zodProblems(RunInput, value);
        try {
          await handle.result();
          expect(problems, JSON.stringify(value)).toBeNull();
        } catch (err) {
          expect(err).toBeInstanceOf(WorkflowFailedError);
          if (problems) expect(failureMessage(err)).toContain(`invalid RunInput: ${problems[0]!.split(':')[0]}`);
        }
      }),
    );
  });
});
