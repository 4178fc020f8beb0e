/**
 * R2.12 the search attributes that place a run in its tree, by the names Temporal UI and a listing use, and the
 * query of a tree (a root id with a quote in it cannot widen it).
 */
import { describe, expect, it } from 'vitest';
import { treeAttributes, treeQuery } from '../src/contract/search-attributes.js';

const named = (place: Parameters<typeof treeAttributes>[0]) =>
  treeAttributes(place).map(({ key, value }) => [key.name, key.type, value]);

describe('R2.12 a run’s place in its tree', () => {
  it('R2.12 a root: its id, depth, preset, status running and tenant; no parent, task or context', () => {
    expect(named({ rootId: 'r', depth: 0, tenant: 'acme', preset: 'assistant' })).toEqual([
      ['DeputyRootId', 'KEYWORD', 'r'],
      ['DeputyDepth', 'INT', 0],
      ['DeputyPreset', 'KEYWORD', 'assistant'],
      ['DeputyStatus', 'KEYWORD', 'running'],
      ['DeputyTenant', 'KEYWORD', 'acme'],
    ]);
    expect(named({ rootId: 'r', depth: 0, tenant: undefined, preset: 'p' }).map(([name]) => name)).not.toContain(
      'DeputyTenant',
    );
  });

  it('R2.12 a child also names its parent, its task and the context it was given', () => {
    const child = { parentId: 'r', taskName: 'tax', contextMode: 'summary' };
    expect(named({ rootId: 'r', depth: 1, tenant: undefined, preset: 'researcher', child })).toEqual([
      ['DeputyRootId', 'KEYWORD', 'r'],
      ['DeputyParentId', 'KEYWORD', 'r'],
      ['DeputyDepth', 'INT', 1],
      ['DeputyTaskName', 'KEYWORD', 'tax'],
      ['DeputyContextMode', 'KEYWORD', 'summary'],
      ['DeputyPreset', 'KEYWORD', 'researcher'],
      ['DeputyStatus', 'KEYWORD', 'running'],
    ]);
  });

  it('R2.12 a tree’s query quotes its root id', () => {
    expect(treeQuery('root-1')).toBe("DeputyRootId = 'root-1'");
    expect(treeQuery("x' OR DeputyRootId != '")).toBe("DeputyRootId = 'x\\' OR DeputyRootId != \\''");
  });
});
