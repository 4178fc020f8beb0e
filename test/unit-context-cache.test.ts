/** The worker-side dialogue cache is bounded and answers only for exactly what it holds. */
import { describe, expect, it } from 'vitest';
import { ContextCache } from '../activities/context-cache.js';
import type { ChatMessage } from '../src/contract/dialogue.js';

const messages = (n: number, size = 10): ChatMessage[] =>
  Array.from({ length: n }, (_, i) => ({ role: 'user' as const, content: `${i}`.padEnd(size, '.') }));

describe('R1.1 ContextCache: the worker-side dialogue cache', () => {
  it('holds a run’s last two calls, and answers only for the length asked', () => {
    const cache = new ContextCache();
    for (const seq of [1, 2, 3]) cache.set('wf/run', seq, messages(seq), messages(1));
    expect(cache.get('wf/run', 1, 1)).toBeUndefined();
    expect(cache.get('wf/run', 2, 2)).toHaveLength(2);
    expect(cache.get('wf/run', 3, 3)).toHaveLength(3);
    expect(cache.get('wf/run', 3, 4)).toBeUndefined();
    expect(cache.get('wf/other', 3, 3)).toBeUndefined();
  });

  it('drops the least recently used runs past maxRuns and past maxChars', () => {
    const byRuns = new ContextCache({ maxRuns: 2 });
    byRuns.set('a', 1, messages(1), messages(1));
    byRuns.set('b', 1, messages(1), messages(1));
    expect(byRuns.get('a', 1, 1)).toBeDefined(); // a is now the most recently used
    byRuns.set('c', 1, messages(1), messages(1));
    expect(byRuns.size).toBe(2);
    expect(byRuns.get('b', 1, 1)).toBeUndefined();
    expect(byRuns.get('a', 1, 1)).toBeDefined();

    const byChars = new ContextCache({ maxChars: 1000 });
    for (const run of ['a', 'b', 'c']) byChars.set(run, 1, messages(4, 100), messages(4, 100));
    expect(byChars.get('a', 1, 4)).toBeUndefined();
    expect(byChars.get('c', 1, 4)).toBeDefined();
    // One run bigger than the whole budget is still kept: the call in flight needs it.
    byChars.set('d', 1, messages(20, 100), messages(20, 100));
    expect(byChars.get('d', 1, 20)).toBeDefined();
    expect(byChars.size).toBe(1);
  });
});
