/**
 * R2.5 R2.6 R2.7 R3.1 a child planned from its brief: refused briefs name themselves, limits come from what the parent
 * has left, its context is the brief's else the presets' or the config's default; a plan shrunk by an overrun; how a
 * failed or cancelled child reads to its parent.
 */
import { describe, expect, it } from 'vitest';
import { builtinTools } from '../activities/builtin-tools.js';
import { resolveComposition } from '../src/config/presets.js';
import { benchConfig } from '../bench/script.js';
import type { ArtifactRef } from '../src/contract/artifacts.js';
import type { Brief } from '../src/contract/delegation.js';
import { parseConfig } from '../src/config/schema.js';
import { cancelledEnd, endOfResult, failedEnd, reportedUsage } from '../src/rules/child-end.js';
import { asLimits, resolveLimits } from '../src/rules/budget.js';
import { childInput, planChild, shrunkPlan, type ChildPlan, type PlanningParent } from '../src/rules/run-start.js';
import { compositionFromInput, inheritComposition } from '../src/rules/child-composition.js';
import type { ResolveRunResult } from '../src/contract/composition.js';
import { ZERO_USAGE } from '../src/rules/usage.js';
import { toolMap } from '../src/worker/factory.js';

const config = parseConfig({
  ...benchConfig(true),
  model: 'gpt-4.1-mini',
  prices: { 'gpt-4.1-mini': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } },
  delegation: {
    enabled: true,
    activation: 'unconditional',
    maxDepth: 2,
    childDefaults: { maxTurns: 4, maxTokens: 4000, maxCostUsd: 0.004 },
  },
});
const composition = resolveComposition(
  config,
  toolMap(builtinTools()),
  { scopes: ['tools.calc', 'tools.notes', 'run.delegate'], depth: 0 },
  { childTaskQueue: 'bg' },
);
const REPORT: ArtifactRef = {
  id: 'a1',
  name: 'report.md',
  size: 3,
  digest: 'd',
  mediaType: 'text/markdown',
  savedBy: 'p',
  seal: 's',
} as ArtifactRef;

function parentWith(over: Partial<PlanningParent> = {}): PlanningParent {
  return {
    composition,
    delegationSettings: composition.delegation!,
    depth: 0,
    limits: resolveLimits({ maxTurns: 10, maxTokens: 20_000, maxCostUsd: 0.02, maxToolCalls: 10 }, {}, 0),
    usage: ZERO_USAGE,
    reserved: { tokens: 0, costMicroUsd: 0 },
    synthesisKeep: { tokens: 0, costMicroUsd: 0 },
    artifacts: {
      forBrief: (ids) =>
        (ids ?? []).every((id) => id === 'a1')
          ? { ok: true, refs: (ids ?? []).map(() => REPORT) }
          : { ok: false, error: `no artifact ${ids!.find((id) => id !== 'a1')}` },
    },
    ...over,
  };
}

const own = { definition: composition.presetDefinition, revision: composition.presetRevision, selected: false };
const brief = (over: Partial<Brief> = {}): Brief => ({ task_name: 'tax', message: 'Find the rate.', ...over });
const planned = (b: Brief, parent = parentWith(), childComposition = own) => {
  const result = planChild(b, childComposition, parent, 0);
  if (!result.ok) throw new Error(result.error);
  return result.plan;
};

describe('R2.5 R2.6 R2.7 a child planned from its brief', () => {
  it('R2.5 R2.6 limits are the brief’s or the defaults, within what the parent has left; the reservation is them', () => {
    const plan = planned(brief({ limits: { maxTurns: 2, maxCostUsd: 0.001 } }));
    expect(asLimits(plan.limits)).toMatchObject({ maxTurns: 2, maxTokens: 4000, maxCostUsd: 0.001 });
    expect(plan.reservation).toEqual({ tokens: 4000, costMicroUsd: 1000 });
    expect(plan).toMatchObject({
      brief: brief({ limits: { maxTurns: 2, maxCostUsd: 0.001 } }),
      preset: composition.presetDefinition.id,
      composition: own,
      contextRendering: composition.presetDefinition.contextRendering,
      artifacts: [],
    });
    expect(plan.limits.synthesisReserve).toBeDefined();
    const spent = parentWith({ usage: { ...ZERO_USAGE, totalTokens: 18_000, costMicroUsd: 18_000 } });
    expect(asLimits(planned(brief(), spent).limits)).toMatchObject({ maxTokens: 2000, maxCostUsd: 0.002 });
  });

  it('R2.7 tools are narrowed to the brief’s allowed_tools; a tool the parent lacks is refused by name', () => {
    expect(planned(brief({ allowed_tools: ['calculate'] })).toolGrant).toEqual({
      tools: ['calculate'],
      scopes: ['tools.calc'],
    });
    const refused = planChild(brief({ allowed_tools: ['format_disk'] }), own, parentWith(), 0);
    expect(refused).toEqual({ ok: false, error: expect.stringMatching(/^brief "tax": .*format_disk/) as string });
  });

  it('R2.6 a parent with nothing left, or too little for a child’s own reserve, plans no child', () => {
    const broke = parentWith({ usage: { ...ZERO_USAGE, totalTokens: 20_000, costMicroUsd: 20_000 } });
    const none = planChild(brief(), own, broke, 0);
    expect(none.ok).toBe(false);
    expect(!none.ok && none.error).toMatch(/^brief "tax": nothing is left of this run's budget for a child \(limits /);
    const tight = parentWith({ usage: { ...ZERO_USAGE, totalTokens: 19_990, costMicroUsd: 19_999 } });
    const small = planChild(brief(), own, tight, 0);
    expect(small.ok).toBe(false);
    expect(!small.ok && small.error).toMatch(/^brief "tax": /);
  });

  it('R2.7 a brief gives only artifacts its parent can read; one it cannot is refused by name', () => {
    expect(planned(brief({ artifacts: ['a1'] })).artifacts).toEqual([REPORT]);
    expect(planChild(brief({ artifacts: ['zz'] }), own, parentWith(), 0)).toEqual({
      ok: false,
      error: 'brief "tax": no artifact zz',
    });
  });

  it('R3.1 its context is the brief’s, else the parent preset’s default, else the config’s, else none', () => {
    expect(planned(brief({ context: 'summary' })).contextMode).toBe('summary');
    expect(planned(brief()).contextMode).toBe('none');
    const configDefault = parentWith({
      delegationSettings: { ...composition.delegation!, defaultContext: 'all' },
    });
    expect(planned(brief(), configDefault).contextMode).toBe('all');
    const presetDefault = parentWith({
      composition: {
        ...composition,
        presetDefinition: { ...composition.presetDefinition, defaultContext: 'summary' },
      },
      delegationSettings: { ...composition.delegation!, defaultContext: 'all' },
    });
    expect(planned(brief(), presetDefault).contextMode).toBe('summary');
    expect(planned(brief({ context: 'none' }), presetDefault).contextMode).toBe('none');
  });

  it('R2.5 a child’s deadline never passes its parent’s, whatever its brief asks', () => {
    const parent = parentWith({
      limits: resolveLimits(
        { maxTurns: 10, maxTokens: 20_000, maxCostUsd: 0.02, deadline: '2026-12-01T01:00:00.000Z' },
        {},
        0,
      ),
    });
    const later = brief({ limits: { deadline: '2026-12-02T00:00:00.000Z' } });
    expect(planned(later, parent).limits.deadline).toBe('2026-12-01T01:00:00.000Z');
    const sooner = brief({ limits: { deadline: '2026-12-01T00:30:00.000Z' } });
    expect(planned(sooner, parent).limits.deadline).toBe('2026-12-01T00:30:00.000Z');
  });
});

describe('R2.13 a plan shrunk by its parent’s overrun', () => {
  it('R2.13 the cut comes off its reservation and its token and cost limits; the plan given is left as it was', () => {
    const plan: ChildPlan = planned(brief());
    const shrunk = shrunkPlan(plan, { tokens: 1000, costMicroUsd: 500 });
    expect(shrunk.reservation).toEqual({ tokens: 3000, costMicroUsd: 3500 });
    expect(asLimits(shrunk.limits)).toMatchObject({ maxTurns: 4, maxTokens: 3000, maxCostUsd: 0.0035 });
    expect(plan.reservation).toEqual({ tokens: 4000, costMicroUsd: 4000 });
    expect(asLimits(plan.limits)).toMatchObject({ maxTokens: 4000, maxCostUsd: 0.004 });
    expect(shrunk.brief).toBe(plan.brief);
    // A limit the plan does not set stays unset.
    const open = { ...plan, limits: { maxTurns: 4 } };
    expect(shrunkPlan(open, { tokens: 1, costMicroUsd: 1 }).limits).toEqual({ maxTurns: 4 });
  });
});

describe('R2.9 how a child’s end reads to its parent', () => {
  it('R2.9 a failed child is an error for its brief, charged what it reported; a cancelled one charged nothing it did not', () => {
    const spent = { ...ZERO_USAGE, totalTokens: 5 };
    expect(failedEnd('boom', spent)).toEqual({
      status: 'failed',
      output: null,
      summary: 'boom',
      error: 'boom',
      spent,
    });
    expect(cancelledEnd()).toEqual({
      status: 'cancelled',
      output: null,
      summary: 'the child was cancelled',
      error: 'the child was cancelled before it finished',
      spent: null,
    });
    const result = { status: 'failed', output: null, usage: spent, sessionId: 's' };
    expect(reportedUsage(result)).toEqual(spent);
    expect(reportedUsage({ nothing: true })).toBeNull();
    expect(reportedUsage(undefined)).toBeNull();
  });

  it('R2.9 a child that ended on a limit says which; one with no output reads as such', () => {
    const end = endOfResult(
      { status: 'limit_reached', limit: 'maxTurns', output: null, usage: ZERO_USAGE, sessionId: 's' },
      undefined,
    );
    expect(end.status).toBe('limit_reached');
    expect(end.output).toBeNull();
    expect(end.error).toMatch(/^the child ended limit_reached \(maxTurns\); /);
    const plain = endOfResult({ status: 'failed', output: null, usage: ZERO_USAGE, sessionId: 's' }, undefined);
    expect(plain.error).toMatch(/^the child ended failed; /);
  });
});

describe('R2.7 what a child without a role inherits of its parent’s composition', () => {
  const grant = (tools: string[], scopes: string[]) => ({ tools, scopes });
  const inherit = (
    over: {
      parent?: Partial<ResolveRunResult>;
      plan?: Partial<ChildPlan>;
      brief?: Partial<Brief>;
      depth?: number;
    } = {},
  ) =>
    inheritComposition(
      { ...composition, ...over.parent },
      {
        ...planned(brief()),
        toolGrant: grant(['calculate', 'search_notes'], ['tools.calc', 'tools.notes']),
        ...over.plan,
      },
      { ...over.brief },
      over.depth ?? 1,
    );

  it('R2.7 a role, a selected preset, another model or a follow-up resolve their own composition', () => {
    expect(inherit()).toBeDefined();
    expect(inherit({ brief: { model: composition.model } })).toBeDefined();
    expect(inherit({ brief: { model: 'another-model' } })).toBeUndefined();
    expect(inherit({ brief: { role: 'researcher' } })).toBeUndefined();
    expect(inherit({ plan: { composition: { ...own, selected: true } } })).toBeUndefined();
    expect(inherit({ plan: { restore: { from: 'p/tax-1', events: [] } } })).toBeUndefined();
  });

  it('R2.7 tools: the granted ones of its preset, in its order, with their scopes held; names only when it cannot delegate', () => {
    expect(inherit()!.tools).toEqual(['calculate', 'search_notes']);
    expect(inherit({ plan: { toolGrant: grant(['calculate', 'search_notes'], ['tools.calc']) } })!.tools).toEqual([
      'calculate',
    ]);
    expect(inherit({ plan: { toolGrant: grant(['search_notes'], ['tools.calc', 'tools.notes']) } })!.tools).toEqual([
      'search_notes',
    ]);
    const described = { name: 'calculate', scopes: ['tools.calc'], description: 'adds', parameters: {} };
    const whole = inherit({ parent: { tools: [described, ...composition.tools.slice(1)] } })!;
    expect(whole.tools[0]).toEqual(described);
    expect(whole).not.toHaveProperty('delegation');
    expect(whole).not.toHaveProperty('hooks');
  });

  it('R2.7 a child that may delegate gets the steering tools, the delegation settings and the hooks; only then', () => {
    const delegating = grant(['calculate', 'delegate'], ['tools.calc', 'run.delegate']);
    const may = inherit({ plan: { toolGrant: delegating } })!;
    expect(may.tools).toEqual([
      { name: 'calculate', scopes: ['tools.calc'] },
      ...['delegate', 'interject', 'followup', 'wait', 'answer_child'].map((name) => ({
        name,
        scopes: ['run.delegate'],
      })),
    ]);
    expect(may.delegation).toEqual(composition.delegation);
    expect(may.hooks).toEqual([]);
    const hooks = [
      { name: 'gate', events: ['subagent.start' as const], timeoutSeconds: 10, onError: 'fail_open' as const },
    ];
    expect(inherit({ plan: { toolGrant: delegating }, parent: { hooks } })!.hooks).toEqual(hooks);
    expect(inherit({ plan: { toolGrant: delegating }, parent: { hooks: undefined } })!.hooks).toEqual([]);
    const cannot = (over: Parameters<typeof inherit>[0]) => inherit({ plan: { toolGrant: delegating }, ...over })!;
    expect(cannot({ depth: 2 }).tools).toEqual(['calculate']);
    expect(cannot({ parent: { delegation: undefined } }).tools).toEqual(['calculate']);
    expect(cannot({ parent: { delegation: { ...composition.delegation!, enabled: false } } }).tools).toEqual([
      'calculate',
    ]);
    expect(inherit({ plan: { toolGrant: grant(['calculate'], ['tools.calc', 'run.delegate']) } })!.tools).toEqual([
      'calculate',
    ]);
    expect(inherit({ plan: { toolGrant: grant(['calculate', 'delegate'], ['tools.calc']) } })!.tools).toEqual([
      'calculate',
    ]);
  });

  it('R2.7 defaults its own limits leave open (the duration always), effort, payloads, retry and tenant label as set', () => {
    const inherited = inherit()!;
    expect(inherited.defaultLimits).toEqual({ maxDurationSeconds: 3600 });
    expect(inherit({ plan: { limits: { maxTurns: 2 } } })!.defaultLimits).toEqual({
      maxTokens: 1_000_000_000,
      maxCostUsd: 1000,
      maxToolCalls: 10,
      maxDurationSeconds: 3600,
      synthesisReserve: false,
    });
    expect(inherited).not.toHaveProperty('effort');
    expect(inherit({ brief: { effort: 'low' } })!.effort).toBe('low');
    const withEffort = { ...own, definition: { ...own.definition, effort: 'high' as const } };
    expect(inherit({ plan: { composition: withEffort } })!.effort).toBe('high');
    expect(inherit({ plan: { composition: withEffort }, brief: { effort: 'low' } })!.effort).toBe('low');
    expect(inherited).not.toHaveProperty('payloads');
    const payloads = { maxTextBytes: 1024, maxInputBytes: 1_048_576 };
    expect(inherit({ parent: { payloads } })!.payloads).toEqual(payloads);
    const input = { maxTextBytes: 262_144, maxInputBytes: 2048 };
    expect(inherit({ parent: { payloads: input } })!.payloads).toEqual(input);
    expect(inherit({ parent: { payloads: undefined } })).not.toHaveProperty('payloads');
    expect(inherited).not.toHaveProperty('modelRetry');
    expect(inherited).not.toHaveProperty('tenantLabel');
    const modelRetry = { maxAttempts: 2, initialIntervalSeconds: 1, maxIntervalSeconds: 2 };
    expect(inherit({ parent: { modelRetry } as never })!.modelRetry).toEqual(modelRetry);
    expect(inherit({ parent: { tenantLabel: '' } })!.tenantLabel).toBe('');
    // A parent whose model calls go to a shared queue sends its implicit child's there too; one without, nowhere.
    expect(inherited).not.toHaveProperty('modelTaskQueue');
    expect(inherit({ parent: { modelTaskQueue: 'models' } })!.modelTaskQueue).toBe('models');
    expect(inherited.price).toEqual(composition.price);
    expect(inherited.compaction).toEqual(composition.compaction);
  });
});

describe('R2.4 a child’s origin and its composition read back', () => {
  const parent = { sessionId: 'p', rootId: 'p', depth: 0, tenant: undefined, composition };

  it('R2.4 the spawning call and the parent context are in its origin only when there are some', () => {
    const plan = planned(brief());
    const bare = childInput(plan, plan.brief, 1, undefined, parent, undefined);
    expect(bare.origin).not.toHaveProperty('invocationId');
    expect(bare.origin).not.toHaveProperty('parentBackground');
    expect(bare).not.toHaveProperty('tenant');
    const parentBackground = { source: 'summary' as const, content: 'what the parent knew' };
    const full = childInput(plan, plan.brief, 1, undefined, { ...parent, invocationId: 'call-9' }, parentBackground);
    expect(full.origin).toMatchObject({ invocationId: 'call-9', parentBackground });
  });

  it('R2.4 a composition passed down is read back only whole: a model, a preset definition and a composition', () => {
    const plan = planned(brief());
    const input = childInput(plan, plan.brief, 1, undefined, parent, undefined);
    const read = compositionFromInput(input as never);
    expect(read).toMatchObject({ model: composition.model, preset: own.definition.id, presetRevision: own.revision });
    expect(read!.scopes).toEqual(plan.toolGrant.scopes);
    expect(compositionFromInput({ ...input, scopes: undefined } as never)!.scopes).toEqual([]);
    expect(compositionFromInput({ ...input, model: undefined } as never)).toBeUndefined();
    expect(compositionFromInput({ ...input, origin: { ...input.origin, preset: undefined } } as never)).toBeUndefined();
    const byRevision = { ...input.origin!, preset: { revision: 'r', selected: false } };
    expect(compositionFromInput({ ...input, origin: byRevision } as never)).toBeUndefined();
    expect(compositionFromInput({ ...input, origin: undefined } as never)).toBeUndefined();
  });
});
