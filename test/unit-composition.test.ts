import { describe, expect, it } from 'vitest';
import { composeRun, type CompositionSource } from '../src/rules/composition.js';
import type { ResolveRunResult } from '../src/contract/composition.js';

const preset = { id: 'writer', persona: 'p', tools: ['calc', 'notes', 'web'], skills: {}, contextRendering: 'block' };
const source: CompositionSource = {
  tool: (name) =>
    ({ calc: { name: 'calc', scopes: ['tools.calc'] }, notes: { name: 'notes', scopes: ['tools.notes'] } })[name],
  price: { inputMicroUsdPerMTok: 1, outputMicroUsdPerMTok: 2 },
  defaultLimits: { maxTurns: 4 },
  delegation: { enabled: true, maxDepth: 1, childTaskQueue: 'bg' } as never,
  compaction: {} as never,
  hooks: [],
};
const request = {
  preset: preset as never,
  revision: 'r1',
  model: 'm',
  effort: undefined,
  scopes: ['tools.calc', 'tools.notes', 'run.delegate'],
  granted: undefined,
  depth: 0,
};

describe('composeRun: one resolver for the config and for an implicit child', () => {
  it('R4.3 offers the preset tools the source has, granted and scoped, then the steering tools', () => {
    const { composition, mayDelegate } = composeRun(source, request);
    expect(composition.tools.map((tool) => tool.name)).toEqual([
      'calc',
      'notes',
      'delegate',
      'interject',
      'followup',
      'wait',
      'answer_child',
    ]);
    expect(mayDelegate).toBe(true);
    const narrowed = composeRun(source, { ...request, scopes: ['tools.notes'], granted: ['notes', 'calc'] });
    expect(narrowed.composition.tools).toEqual([{ name: 'notes', scopes: ['tools.notes'] }]);
    expect(narrowed.mayDelegate).toBe(false);
    // At the depth limit nothing steers, whatever is granted.
    expect(composeRun(source, { ...request, depth: 1 }).mayDelegate).toBe(false);
  });

  it("R4.3 takes from a parent what it offers, never what is the parent's own (its effort, scopes, approvals)", () => {
    const parent = {
      ...source,
      preset: 'lead',
      presetRevision: 'r0',
      model: 'm',
      effort: 'high',
      scopes: ['admin'],
      tools: [{ name: 'admin_tool', scopes: [] }],
      approvals: { tools: { calc: { when: 'always' } } },
    } as unknown as ResolveRunResult & CompositionSource;
    const { composition } = composeRun(parent, { ...request, scopes: ['tools.calc'] });
    expect(composition.effort).toBeNull();
    expect(composition.scopes).toEqual(['tools.calc']);
    expect(composition).not.toHaveProperty('approvals');
    expect(composition.tools.map((tool) => tool.name)).toEqual(['calc']);
    expect(composition.preset).toBe('writer');
    // What a source does not set, the run does not carry, not even as nothing.
    expect(composition).not.toHaveProperty('tenantLabel');
    expect(composition).not.toHaveProperty('modelTaskQueue');
    const queued = composeRun({ ...source, tenantLabel: '', modelTaskQueue: 'models' }, request).composition;
    expect([queued.tenantLabel, queued.modelTaskQueue]).toEqual(['', 'models']);
    expect(composition.presetRevision).toBe('r1');
  });
});
