/**
 * R1.6 the compaction prompt the worker writes from the messages it holds: each kind of message as its line, steering
 * calls and their results left out, a tool result named by its call, and the whole cut to the activity's input
 * budget; and the turns a plan replaces, counted with those earlier summaries replaced.
 */
import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../src/contract/dialogue.js';
import { compactionPromptFromMessages, planCompaction } from '../src/rules/compaction.js';
import { answer, at, user } from './support/events.js';

const call = (id: string, name: string, args = '{}') => ({
  id,
  type: 'function' as const,
  function: { name, arguments: args },
});

const MESSAGES = [
  { role: 'system', content: 'persona' },
  { role: 'user', content: 'price the order' },
  { role: 'assistant', content: '  ', tool_calls: [call('c1', 'calculate', '{"a":1}'), call('d1', 'delegate')] },
  { role: 'tool', tool_call_id: 'c1', content: ' 42 ' },
  { role: 'tool', tool_call_id: 'd1', content: 'children said 8%' },
  { role: 'tool', tool_call_id: 'unknown', content: 'orphan' },
  { role: 'assistant', content: 'the total is 42' },
] as ChatMessage[];

describe('R1.6 the compaction prompt from the worker’s messages', () => {
  it('R1.6 each message its line; steering calls and their results left out; a result with no call is a tool’s', () => {
    const [system, prompt] = compactionPromptFromMessages(MESSAGES, { from: 0, to: MESSAGES.length, maxBytes: 1e6 });
    expect(system!.role).toBe('system');
    expect(prompt!.content).toBe(
      [
        '## Conversation to compact',
        'system: persona',
        'user: price the order',
        'assistant called calculate({"a":1})',
        'calculate returned: 42',
        'a tool returned: orphan',
        'assistant: the total is 42',
        '',
        'Write the compacted summary.',
      ].join('\n'),
    );
  });

  it('R1.6 only the range is written, and past the budget it is cut with its marker', () => {
    const [, some] = compactionPromptFromMessages(MESSAGES, { from: 1, to: 2, maxBytes: 1e6 });
    expect(some!.content).toBe('## Conversation to compact\nuser: price the order\n\nWrite the compacted summary.');
    const long = [{ role: 'user', content: 'x'.repeat(10_000) }] as ChatMessage[];
    const [, cut] = compactionPromptFromMessages(long, { from: 0, to: 1, maxBytes: 4096 });
    expect(cut!.content!.length).toBeLessThan(2200);
    expect(cut!.content).toMatch(/\[truncated: 10 KB → 2 KB\]\n\nWrite the compacted summary\.$/);
  });
});

describe('R1.6 a compaction plan', () => {
  it('R1.6 the turns it replaces count those earlier summaries replaced; background leads what is replaced', () => {
    const turn = (n: number) => [user(`question ${n} ${'w '.repeat(200)}`), answer(`answer ${n}`)];
    const events = [
      { type: 'context/background', at, source: 'summary', content: 'inherited' } as const,
      { type: 'compaction/summary', at, summary: 'turns 1-4', replacesTurns: 4 } as const,
      ...turn(5),
      ...turn(6),
      ...turn(7),
    ];
    const plan = planCompaction(events, 10, 1)!;
    expect(plan.replacesTurns).toBe(6);
    expect(plan.replaced.slice(0, 2).map((e) => e.type)).toEqual(['context/background', 'compaction/summary']);
    expect(plan.replaced).toHaveLength(6);
    expect(plan.recent).toEqual(turn(7));
    expect(planCompaction(events, 10, 3)).toBeNull();
    expect(planCompaction(events, 1e6, 1)).toBeNull();
  });
});
