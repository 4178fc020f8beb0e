/**
 * Trees as a terminal shows them: within its width, ids elided in the middle, notes wrapped under their run, a failed
 * run's reason, and the glyphs `deputy tree` and `deputy watch` share.
 */
import { describe, expect, it } from 'vitest';
import type { WatchEvent } from '../src/client/watch-events.js';
import { TreeView } from '../src/client/watch-view.js';
import { elide, renderTree, wrapParts, wrapText, type TreeNode } from '../src/client/tree.js';

let seq = 0;
const at = '2026-12-01T00:00:00.000Z';
const ev = (run: string, parent: string | null, body: Record<string, unknown>) =>
  ({ run, parent, seq: ++seq, at, cursor: 'c', ...body }) as WatchEvent;

describe('74.7 text that fits a terminal', () => {
  it('74.7 an id keeps its start and its end; parts and words wrap within the width, none lost', () => {
    expect(elide('short', 10)).toBe('short');
    expect(elide('abcdefghijklmnopqrstuvwxyz', 11)).toBe('abcde…vwxyz');
    expect(elide('abcdefghijklmnopqrstuvwxyz', 10)).toBe('abcde…wxyz');
    expect(elide('abcdefghijklmnopqrstuvwxyz', 10)).toHaveLength(10);
    expect(wrapParts(['aaaa', 'bbbb', 'cccc'], '> ', 15)).toEqual(['> aaaa · bbbb', '> cccc']);
    expect(wrapParts(['x'.repeat(30)], '  ', 12)).toEqual([`  ${'x'.repeat(9)}…`]);
    expect(wrapParts([], '  ', 12)).toEqual([]);
    const text = 'one two three four five six seven eight nine ten eleven twelve thirteen';
    const wrapped = wrapText(text, '  ', 24);
    for (const line of wrapped) expect(line.length).toBeLessThanOrEqual(24);
    expect(wrapped.map((l) => l.slice(2)).join(' ')).toBe(text);
    expect(wrapText(`a ${'y'.repeat(50)} b`, '', 20)).toEqual([
      'a',
      'y'.repeat(20),
      'y'.repeat(20),
      `${'y'.repeat(10)} b`,
    ]);
  });

  it('74.7 74.2 deputy tree: every line within 80 columns, the failed run’s reason under it, colour on the status only', () => {
    const node = (workflowId: string, parentId: string | null, extra: Partial<TreeNode> = {}): TreeNode => ({
      workflowId,
      parentId,
      taskName: parentId ? workflowId.slice(workflowId.lastIndexOf('/') + 1) : null,
      status: 'completed',
      preset: 'assistant',
      contextMode: parentId ? 'none' : null,
      usage: null,
      costUsd: 0.000123,
      ...extra,
    });
    const root = 'demo-2026-12-07T20-16-19-867Z';
    const text = renderTree([
      node(root, null),
      node(`${root}/tax-rate-for-the-customer-in-springfield-1`, root, { background: true, interjections: 1 }),
      node(`${root}/shipping-1`, root, { status: 'failed', error: `answered 400: ${'a long reason '.repeat(10)}` }),
    ]);
    const lines = text.split('\n');
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(lines[0]).toMatch(/^demo-2026-12-07T20-16-19-867Z +completed +tree \$0\.000123$/);
    expect(lines[1]).toBe('│  [assistant]');
    expect(lines[2]).toMatch(/^├─ shipping-1 +failed +tree \$0\.000123$/);
    expect(lines[3]).toBe(`│     [assistant, context none] · ${elide(`${root}/shipping-1`, 30)}`);
    expect(lines[4]).toMatch(/^│ {5}why: answered 400: a long reason .*…$/);
    expect(lines[5]).toMatch(/^└─ tax-rate-for-…springfield-1 +completed +tree \$0\.000123$/);
    expect(lines[6]).toBe(
      `      [assistant, context none] · ${elide(`${root}/tax-rate-for-the-customer-in-springfield-1`, 30)} · background`,
    );
    expect(lines[7]).toBe('      1 interjection');
    const painted = renderTree([node(root, null, { status: 'failed', error: 'boom' })], {
      paint: (status, t) => `<${status}>${t}</>`,
    }).split('\n');
    expect(painted[0]).toMatch(/^demo-2026-12-07T20-16-19-867Z +<failed>failed {14}<\/> tree/);
    expect(painted.at(-1)).toBe('<failed>   why: boom</>');
  });
});

describe('74.2 74.7 a failed run in the watched tree', () => {
  it('74.2 its reason whole, wrapped under it within the width; siblings drawn with the glyphs of deputy tree', () => {
    const view = new TreeView();
    const reason = `http://127.0.0.1:9/v1 answered 400 for test-model: check the model name ${'and more '.repeat(12)}`;
    for (const event of [
      ev('r', null, { type: 'run/started', taskName: null, depth: 0, task: 't' }),
      ev('r', null, {
        type: 'delegation/started',
        child: 'r/a-1',
        taskName: 'a',
        reserved: { maxTokens: null, maxCostUsd: null },
      }),
      ev('r', null, {
        type: 'delegation/started',
        child: 'r/b-1',
        taskName: 'b',
        reserved: { maxTokens: null, maxCostUsd: null },
      }),
      ev('r/a-1', 'r', { type: 'run/ended', status: 'failed', error: reason }),
      ev('r/b-1', 'r', { type: 'run/ended', status: 'completed' }),
    ])
      view.apply(event);
    expect(view.runs.get('r/a-1')!.error).toBe(reason);
    expect(view.runs.get('r/b-1')!.error).toBeNull();
    const lines = view.lines({ width: 80 });
    for (const line of lines) expect(line.length, line).toBeLessThanOrEqual(80);
    expect(lines[2]).toMatch(/^├─ a +failed +own 0 tok \$0\.000000$/);
    expect(lines[3]).toBe('│     failed');
    const why = lines.slice(
      4,
      lines.findIndex((l) => l.startsWith('└─ b')),
    );
    expect(why[0]).toMatch(/^│ {5}why: http:\/\/127\.0\.0\.1:9\/v1 answered 400/);
    expect(why.map((l) => l.slice(6)).join(' ')).toBe(`why: ${reason.trim()}`);
    expect(lines.at(-1)).toBe('      completed');
    // A painter colours each status, and only the status.
    const painted = view.lines({ paint: (status, text) => `<${status}>${text.trim()}</>` });
    expect(painted[2]).toMatch(/^├─ a +<failed>failed<\/> own 0 tok/);
  });
});
