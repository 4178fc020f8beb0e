import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RunResult } from '../src/contract/run.js';
import { childInput, type ChildPlan } from '../src/rules/run-start.js';
import { compositionFromInput, startsFromInput } from '../src/rules/child-composition.js';
import { endOfResult } from '../src/rules/child-end.js';
import { resolveLimits, settleReservation } from '../src/rules/budget.js';
import { ZERO_USAGE } from '../src/rules/usage.js';
import { builtinTools } from '../activities/builtin-tools.js';
import { benchConfig } from '../bench/script.js';
import { parseConfig } from '../src/config/schema.js';
import type { ResolveRunInput } from '../src/contract/activities.js';
import type { ParsedRunInput } from '../src/contract/run.js';
import { fetchPageTool } from '../src/testing/pages.js';
import { DEFAULT_PAYLOAD_LIMITS } from '../src/rules/payloads.js';
import { toolMap } from '../src/worker/factory.js';
import { resolveComposition } from '../src/config/presets.js';

const usage = { ...ZERO_USAGE, inputTokens: 100, outputTokens: 20, totalTokens: 120, costMicroUsd: 140, modelCalls: 1 };
const ended = (over: Partial<RunResult>): RunResult => ({
  status: 'completed',
  output: 'done',
  usage,
  sessionId: 'p/c-1',
  ...over,
});

const plan: ChildPlan = {
  brief: { task_name: 'tax', message: 'Find the tax rate.' },
  preset: 'researcher',
  composition: {
    definition: { id: 'researcher', persona: 'p', tools: [], skills: {}, contextRendering: 'block' },
    revision: 'r1',
    selected: true,
  },
  contextRendering: 'block',
  contextMode: 'all',
  toolGrant: { tools: ['search_notes'], scopes: ['tools.notes'] },
  limits: { maxTurns: 3, maxTokens: 1000, maxCostMicroUsd: 2000 },
  reservation: { tokens: 1000, costMicroUsd: 2000 },
};
const tools = toolMap([...builtinTools(), fetchPageTool]);
const config = parseConfig({
  ...benchConfig(true),
  model: 'gpt-4.1-mini',
  prices: {
    'gpt-4.1-mini': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 },
    other: { inputPerMTokUsd: 3, outputPerMTokUsd: 4 },
  },
  // An implicit child goes on to the same models as its parent when its own keeps failing.
  fallbackModels: ['other'],
  delegation: { enabled: true, activation: 'unconditional', maxDepth: 2 },
});
const ROOT_SCOPES = ['tools.calc', 'tools.notes', 'run.delegate'];
const resolve = (input: ResolveRunInput) => resolveComposition(config, tools, input, { childTaskQueue: 'bg' });
const parent = {
  sessionId: 'p',
  rootId: 'root',
  depth: 0,
  tenant: 'acme',
  composition: resolve({ scopes: ROOT_SCOPES, depth: 0 }),
};

describe('R2.4 R2.7 a child’s input', () => {
  it('R2.4 R2.7 origin names the parent, the invocation, the grant and the composition; the model follows the role', () => {
    const input = childInput(plan, plan.brief, 2, undefined, parent, undefined);
    expect(input).toMatchObject({
      task: '## Your task\nFind the tax rate.',
      preset: 'researcher',
      // The plan's limits in the currency of the contract: micro-USD inside, USD in the input.
      limits: { maxTurns: 3, maxTokens: 1000, maxCostUsd: 0.002 },
      scopes: ['tools.notes'],
      tenant: 'acme',
      origin: {
        parentId: 'p',
        rootId: 'root',
        depth: 1,
        taskName: 'tax',
        invocation: 2,
        allowedTools: ['search_notes'],
        contextMode: 'all',
        preset: plan.composition,
      },
    });
    // No role: the parent's exact model. A role: its preset's, unless the brief names one.
    expect(input.model).toBe('gpt-4.1-mini');
    expect(
      childInput(plan, { ...plan.brief, role: 'researcher' }, 2, undefined, parent, undefined).model,
    ).toBeUndefined();
    const followup = childInput(
      { ...plan, restore: { from: 'p/tax-1', events: [] } },
      plan.brief,
      3,
      undefined,
      parent,
      undefined,
    );
    expect(followup.restore).toEqual({ kind: 'followup', events: [] });
  });

  it('R4.3 an implicit child inherits exactly what resolveRun would answer for it; a role, another model or a follow-up looks up', () => {
    const definition = parent.composition.presetDefinition;
    const implicit: ChildPlan = {
      ...plan,
      preset: definition.id,
      composition: { definition, revision: 'r0', selected: false },
    };
    const names = ['calculate', 'search_notes', 'fetch_page', 'delegate', 'interject', 'followup'];
    fc.assert(
      fc.property(
        fc.subarray(names),
        fc.subarray(ROOT_SCOPES),
        fc.option(fc.constantFrom('low', 'high' as const), { nil: undefined }),
        fc.constantFrom(0, 1),
        fc.subarray(['maxTurns', 'maxTokens', 'maxCostUsd', 'maxToolCalls'] as const),
        (granted, scopes, effort, depth, limited) => {
          const from = { ...parent, depth, composition: resolve({ scopes: ROOT_SCOPES, depth }) };
          const brief = { ...plan.brief, ...(effort && { effort }) };
          const limits = Object.fromEntries(limited.map((key) => [key, 2]));
          const child = { ...implicit, toolGrant: { tools: granted, scopes }, limits };
          const input = childInput(child, brief, 1, undefined, from, undefined);
          const inherited = compositionFromInput(input as ParsedRunInput)!;
          const looked = resolve({
            preset: input.preset,
            model: input.model,
            effort: input.effort,
            scopes: input.scopes,
            depth: depth + 1,
            allowedTools: input.origin!.allowedTools,
            presetDefinition: definition,
          });
          const delegates = looked.tools.some((tool) => tool.name === 'delegate');
          // A child that may not delegate is not given what it would never read: the delegation settings, hooks and
          // its tools' scopes; nor defaults its own limits override, nor payload budgets that are the defaults.
          const { delegation, hooks, defaultLimits, payloads, tools, ...rest } = looked;
          const { defaultLimits: given, payloads: givenPayloads, tools: givenTools, ...inheritedRest } = inherited;
          expect(inheritedRest).toEqual({ ...rest, ...(delegates && { delegation, hooks }), presetRevision: 'r0' });
          expect(resolveLimits(input.limits, given, 0)).toEqual(resolveLimits(input.limits, defaultLimits, 0));
          expect(givenPayloads ?? DEFAULT_PAYLOAD_LIMITS).toEqual(payloads);
          expect(givenTools.map((tool) => tool.name)).toEqual(tools.map((tool) => tool.name));
          if (delegates) expect(givenTools).toEqual(tools);
        },
      ),
      { numRuns: 300, seed: 20261130 },
    );
    const grant = { tools: ['calculate'], scopes: ['tools.calc'] };
    const withRole = childInput(
      { ...implicit, toolGrant: grant },
      { ...plan.brief, role: 'assistant' },
      1,
      undefined,
      parent,
      undefined,
    );
    const otherModel = childInput(
      { ...implicit, toolGrant: grant },
      { ...plan.brief, model: 'other' },
      1,
      undefined,
      parent,
      undefined,
    );
    const followup = childInput(
      { ...implicit, toolGrant: grant, restore: { from: 'x', events: [] } },
      plan.brief,
      1,
      undefined,
      parent,
      undefined,
    );
    for (const input of [withRole, otherModel, followup]) expect(input.origin?.composition).toBeUndefined();
  });

  it("R6.7 R4.3 an implicit child carries the tool specs its parent recorded (an MCP server's), the others by name", () => {
    const recorded = {
      name: 'docs_read',
      scopes: [],
      description: 'Read a file of the docs.',
      parameters: { type: 'object', properties: { path: { type: 'string' } } },
    };
    const base = parent.composition;
    const definition = { ...base.presetDefinition, tools: [...base.presetDefinition.tools, 'docs_read'] };
    const from = {
      ...parent,
      depth: 1,
      composition: { ...base, presetDefinition: definition, tools: [...base.tools, recorded] },
    };
    const child: ChildPlan = {
      ...plan,
      preset: definition.id,
      composition: { definition, revision: 'r0', selected: false },
      toolGrant: { tools: ['calculate', 'docs_read'], scopes: ['tools.calc'] },
    };
    const input = childInput(child, plan.brief, 1, undefined, from, undefined);
    expect(input.origin?.composition?.tools).toEqual(['calculate', recorded]);
    expect(compositionFromInput(input as ParsedRunInput)!.tools).toEqual([{ name: 'calculate', scopes: [] }, recorded]);
  });

  it('R4.3 a preset definition past 1,024 characters goes by its revision; a smaller one whole', () => {
    const sized = (persona: string) => ({
      ...plan.composition,
      definition: { ...plan.composition.definition, persona },
    });
    const empty = JSON.stringify(sized('').definition).length;
    const presetOf = (composition: ChildPlan['composition']) =>
      childInput({ ...plan, composition }, plan.brief, 1, undefined, parent, undefined).origin?.preset;
    expect(presetOf(sized('p'.repeat(1024 - empty)))).toHaveProperty('definition');
    expect(presetOf(sized('p'.repeat(1025 - empty)))).not.toHaveProperty('definition');
    const inline = sized('p'.repeat(900));
    expect(
      childInput({ ...plan, composition: inline }, plan.brief, 1, undefined, parent, undefined).origin?.preset,
    ).toEqual(inline);
    const large = sized('p'.repeat(1100));
    expect(
      childInput({ ...plan, composition: large }, plan.brief, 1, undefined, parent, undefined).origin?.preset,
    ).toEqual({
      revision: 'r1',
      selected: true,
    });
    // An implicit child carried whole starts from its input; carried by reference, it must look its preset up first.
    const implicit = (composition: ChildPlan['composition']) =>
      childInput(
        { ...plan, composition: { ...composition, selected: false } },
        plan.brief,
        1,
        undefined,
        parent,
        undefined,
      );
    expect(compositionFromInput(implicit(inline) as ParsedRunInput)?.presetDefinition).toEqual(inline.definition);
    expect(implicit(large).origin?.composition).toBeDefined();
    expect(compositionFromInput(implicit(large) as ParsedRunInput)).toBeUndefined();
    // Both start from their input, the one by reference after its look-up; a role child or another model does not.
    expect(startsFromInput(implicit(inline) as ParsedRunInput)).toBe(true);
    expect(startsFromInput(implicit(large) as ParsedRunInput)).toBe(true);
    const { model: _model, ...modelless } = implicit(large);
    expect(startsFromInput(modelless as ParsedRunInput)).toBe(false);
    const roleChild = childInput({ ...plan, composition: large }, plan.brief, 1, undefined, parent, undefined);
    expect(roleChild.origin?.composition).toBeUndefined();
    expect(startsFromInput(roleChild as ParsedRunInput)).toBe(false);
    const { preset: _preset, ...presetless } = implicit(large).origin!;
    expect(startsFromInput({ ...implicit(large), origin: presetless } as ParsedRunInput)).toBe(false);
    expect(startsFromInput({ task: 'a root' })).toBe(false);
  });
});

describe('R2.8 R2.9 how a child’s end reads to its parent', () => {
  it('R2.8 a completed child: its output, checked against return_shape when given', () => {
    expect(endOfResult(ended({}), undefined)).toEqual({
      status: 'completed',
      output: 'done',
      summary: 'done',
      spent: usage,
    });
    const shape = { type: 'object', properties: { rate: { type: 'number' } }, required: ['rate'] };
    const read = (output: string) => endOfResult(ended({ output }), shape);
    expect(read('{"rate": 8}')).toMatchObject({
      status: 'completed',
      output: { rate: 8 },
    });
    const mismatch = read('{"rate": "eight"}');
    expect(mismatch.status).toBe('failed');
    expect(mismatch.error).toMatch(/^the output does not match return_shape: rate: /);
  });

  it('R2.9 a limit-reached child is an error for its brief, keeping its best output and its spend', () => {
    expect(endOfResult(ended({ status: 'limit_reached', output: 'draft', limit: 'maxTurns' }), undefined)).toEqual({
      status: 'limit_reached',
      output: 'draft',
      summary: 'draft',
      error: 'the child ended limit_reached (maxTurns); its output is its best so far',
      spent: usage,
    });
  });
});

describe('R2.6 R2.13 settling a child’s reservation', () => {
  const budget = {
    maxTokens: 5000,
    maxCostMicroUsd: 10_000,
    used: { tokens: 500, costMicroUsd: 700 },
    reserved: { tokens: 3000, costMicroUsd: 5000 },
  };

  it('R2.6 releases the reservation and charges what the child reported', () => {
    expect(
      settleReservation(budget, plan.reservation, { inputTokens: 100, outputTokens: 20, costMicroUsd: 140 }),
    ).toEqual({
      reserved: { tokens: 2000, costMicroUsd: 3000 },
      charge: { inputTokens: 100, outputTokens: 20, costMicroUsd: 140 },
      overrun: null,
    });
  });

  it('R2.15 a child that spent past its reservation is charged all of it, and the overrun says by how much', () => {
    expect(
      settleReservation(budget, plan.reservation, { inputTokens: 1500, outputTokens: 100, costMicroUsd: 2500 }),
    ).toEqual({
      reserved: { tokens: 2000, costMicroUsd: 3000 },
      charge: { inputTokens: 1500, outputTokens: 100, costMicroUsd: 2500 },
      overrun: { tokens: 600, costMicroUsd: 500 },
    });
  });

  it('R2.6 a child that ended without reporting is charged its whole reservation', () => {
    expect(settleReservation(budget, plan.reservation, null).charge).toEqual({
      inputTokens: 1000,
      outputTokens: 0,
      costMicroUsd: 2000,
    });
  });

  it('R2.15 property: the charge is the whole spend; used + reserved grows by exactly the overrun', () => {
    fc.assert(
      fc.property(
        fc.option(fc.record({ inputTokens: fc.nat(1e6), outputTokens: fc.nat(1e6), costMicroUsd: fc.nat(1e7) }), {
          nil: null,
        }),
        (spent) => {
          const { reserved, charge, overrun } = settleReservation(budget, plan.reservation, spent);
          if (spent) expect(charge).toEqual(spent);
          const tokens = charge.inputTokens + charge.outputTokens;
          expect(budget.used.tokens + tokens + reserved.tokens).toBe(
            budget.used.tokens +
              budget.reserved.tokens +
              (overrun?.tokens ?? 0) -
              Math.max(0, plan.reservation.tokens - tokens),
          );
          expect(budget.used.costMicroUsd + charge.costMicroUsd + reserved.costMicroUsd).toBe(
            budget.used.costMicroUsd +
              budget.reserved.costMicroUsd +
              (overrun?.costMicroUsd ?? 0) -
              Math.max(0, plan.reservation.costMicroUsd - charge.costMicroUsd),
          );
        },
      ),
    );
  });
});
