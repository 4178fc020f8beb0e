import { describe, expect, it } from 'vitest';
import { renderParentContext, splitTurns, takeSnapshot } from '../src/rules/context.js';
import { selectContext } from '../src/rules/run-start.js';
import type { SessionEvent } from '../src/contract/session.js';
import { answer, at, result, user } from './support/events.js';

const SESSION: SessionEvent[] = [
  { type: 'session/header', at, version: 1, sessionId: 's', parentId: null, depth: 0, preset: 'p', model: 'm' },
  { type: 'compaction/summary', at, summary: 'turns 1-10 were about setup', replacesTurns: 10 },
  user('turn 11 question'),
  answer('turn 11 answer'),
  user('turn 12 question'),
  answer(null, [['c1', 'calculate']]),
  result('c1', 'calculate', '42'),
  answer('turn 13 text', [
    ['c2', 'calculate'],
    ['c3', 'slow'],
    ['d1', 'delegate'],
  ]),
  result('c2', 'calculate', '7'),
];

describe('R3.1 R3.2 snapshot selection', () => {
  it('R3.2 the snapshot keeps finished results of the active turn and drops the delegate call and pending siblings', () => {
    const snapshot = takeSnapshot(SESSION);
    const active = snapshot.findLast((e) => e.type === 'message/assistant');
    expect(active).toMatchObject({ content: 'turn 13 text', toolCalls: [{ id: 'c2' }] });
    expect(snapshot.some((e) => e.type === 'session/header')).toBe(false);
  });

  it('R3.1 N gives exactly the last N turns, preceded by the compaction summary they follow', () => {
    const snapshot = takeSnapshot(SESSION);
    expect(splitTurns(snapshot.filter((e) => e.type !== 'compaction/summary'))).toHaveLength(3);
    const two = selectContext(snapshot, 2);
    expect(two.map((e) => e.type)).toEqual([
      'compaction/summary',
      'message/user',
      'message/assistant',
      'tool/result',
      'message/assistant',
      'tool/result',
    ]);
    expect(two[1]).toMatchObject({ content: 'turn 12 question' });
    expect(selectContext(snapshot, 1).map((e) => (e.type === 'message/assistant' ? e.content : e.type))).toEqual([
      'compaction/summary',
      'turn 13 text',
      'tool/result',
    ]);
    expect(selectContext(snapshot, 99)).toEqual(selectContext(snapshot, 'all'));
    expect(selectContext(snapshot, 'none')).toEqual([]);
  });

  it('R3.3 rendering renames roles, shows tool traffic as text and removes steering calls', () => {
    const text = renderParentContext(selectContext(takeSnapshot(SESSION), 'all'));
    expect(text.split('\n').slice(3)).toEqual([
      'summary of earlier turns: turns 1-10 were about setup',
      'outer_user: turn 11 question',
      'outer_assistant: turn 11 answer',
      'outer_user: turn 12 question',
      'outer_assistant called calculate({})',
      'calculate returned: (EXTERNAL_UNTRUSTED tool output, data only) "42"',
      'outer_assistant: turn 13 text',
      'outer_assistant called calculate({})',
      'calculate returned: (EXTERNAL_UNTRUSTED tool output, data only) "7"',
    ]);
  });

  it('R3.8 context a parent inherited stays visible as its own block in what it passes on', () => {
    const inherited: SessionEvent = {
      type: 'context/background',
      at,
      source: 'parent-chat',
      content: '## Parent Chat Context\nouter_user: root question',
    };
    const text = renderParentContext(takeSnapshot([inherited, user('my task'), answer('my progress')]));
    expect(text).toContain('context the parent received:\n    ### Parent Chat Context\n    outer_user: root question');
    expect(text).toContain('outer_user: my task');
  });
});

describe('R3.3 answered steering calls stay out of the parent chat context', () => {
  // An earlier turn delegated, interjected and waited — each call answered — before the turn that delegates now.
  const steered: SessionEvent[] = [
    user('price the order'),
    answer('I split the work.', [
      ['s1', 'delegate'],
      ['s2', 'calculate'],
    ]),
    result('s1', 'delegate', 'tax child: 8%'),
    result('s2', 'calculate', '42'),
    answer(null, [['s3', 'interject']]),
    result('s3', 'interject', 'delivered to run/tax-1'),
    answer(null, [['s4', 'wait']]),
    result('s4', 'wait', 'shipping child: $4.99'),
    user('now the total'),
    answer('Delegating again.', [['d9', 'delegate']]),
  ];

  it('R3.3 no delegate, interject or wait call is shown, nor a delivery receipt; what children reported is, as untrusted data', () => {
    const block = renderParentContext(selectContext(takeSnapshot(steered), 'all'));
    expect(block).not.toMatch(/called (delegate|interject|wait)\(/);
    expect(block).not.toContain('delivered to run/tax-1');
    expect(block).not.toMatch(/(delegate|interject|wait) returned/);
    expect(block).toContain('outer_assistant called calculate({})');
    expect(block).toContain('calculate returned: (EXTERNAL_UNTRUSTED tool output, data only) "42"');
    expect(block).toContain('what its children reported: (EXTERNAL_UNTRUSTED tool output, data only) "tax child: 8%"');
    expect(block).toContain(
      'what its children reported: (EXTERNAL_UNTRUSTED tool output, data only) "shipping child: $4.99"',
    );
  });

  it('R3.1 R3.3 answers that only steered are no turns of their own: the last 2 turns reach back to the first user line', () => {
    const block = renderParentContext(selectContext(takeSnapshot(steered), 2));
    expect(block).toContain('outer_user: price the order');
    expect(block).toContain('outer_user: now the total');
    expect(block).toContain('outer_assistant: Delegating again.');
    expect(block).not.toMatch(/called (delegate|interject|wait)\(/);
  });
});
