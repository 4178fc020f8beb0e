/**
 * What a restored session takes from its file (R4.5, R4.6), how a failure chain reads for people and for the ledger
 * (R2.13, R2.15), and how compaction cuts a dialogue (R1.6): pure rules, no server.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import type { SessionEvent } from '../src/contract/session.js';
import { answer, at, result, user } from './support/events.js';
import {
  applyCompaction,
  compactionPrompt,
  compactionPromptFromMessages,
  COMPACTION_SYSTEM_PROMPT,
  dialogueTokens,
  messagesAfterCompaction,
  planCompaction,
} from '../src/rules/compaction.js';
import { billedBy, budgetExceeded, failureMessage, findFailure, rootMessage } from '../src/rules/failure-message.js';
import { closeUnansweredToolCalls, NOT_RUN_ON_RESTORE } from '../src/rules/restoration.js';
import { parseSessionExport } from '../src/rules/sessions.js';
import { decideRestoration, forkEvents } from '../src/rules/restoration.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'sessions', `${name}.json`), 'utf8'));

describe('R4.5 R4.6 restoring a session', () => {
  it.each([
    ['a-selected-before-descriptor', { kind: 'independent', presetId: 'researcher' }],
    ['b-selected-preset-removed', { kind: 'independent', presetId: 'retired' }],
    ['c-preset-only-in-header', { kind: 'implicit' }],
    ['d-fork-of-a-selected-child', { kind: 'implicit' }],
    ['e-selection-after-descriptor', { kind: 'implicit' }],
  ] as const)('R4.5 %s decides %o', (name, expected) => {
    const parsed = parseSessionExport(fixture(name));
    if (!parsed.ok) throw new Error(parsed.problems.join('\n'));
    expect(decideRestoration(parsed.session.events)).toEqual(
      expected.kind === 'independent' ? { ...expected, revision: expect.any(String) as string } : expected,
    );
  });

  it('R4.5 a session without its own descriptor is implicit; a selection after the descriptor does not count', () => {
    const selected: SessionEvent = { type: 'agent-preset/selected', at, presetId: 'p', revision: 'r1' };
    expect(decideRestoration([])).toEqual({ kind: 'implicit' });
    expect(decideRestoration([selected])).toEqual({ kind: 'implicit' });
  });

  it('R4.5 a newer version is refused first, naming both versions; other problems are each named', () => {
    const raw = fixture('a-selected-before-descriptor') as Record<string, unknown>;
    const newer = parseSessionExport({ ...raw, version: 99, sessionId: '' });
    expect(newer).toEqual({
      ok: false,
      problems: ['version: this session is version 99, newer than this Deputy reads (1); upgrade Deputy to import it'],
    });
    const broken = parseSessionExport({ ...raw, format: 'other', sessionId: '' });
    expect(broken.ok).toBe(false);
    expect(!broken.ok && broken.problems.length).toBe(2);
    expect(parseSessionExport(null).ok).toBe(false);
  });

  it('R4.6 a fork copies every event as inherited, the end of the run left out', () => {
    const events: SessionEvent[] = [
      user('q'),
      answer('a'),
      { type: 'run/ended', at, status: 'completed' } as SessionEvent,
    ];
    const fork = forkEvents(events);
    expect(fork).toEqual([
      { ...events[0], inherited: true },
      { ...events[1], inherited: true },
    ]);
    expect(events[0]).not.toHaveProperty('inherited');
  });

  it('R4.5 a restored call that was never answered is closed by an error result right after its message', () => {
    const events = [
      user('q'),
      answer('two calls', [
        ['c1', 'calculate'],
        ['c2', 'search_notes'],
      ]),
      result('c1', 'calculate', '3'),
      answer('done'),
    ];
    expect(closeUnansweredToolCalls(events)).toEqual([
      events[0],
      events[1],
      { type: 'tool/result', at, toolCallId: 'c2', name: 'search_notes', content: NOT_RUN_ON_RESTORE, isError: true },
      events[2],
      events[3],
    ]);
    expect(closeUnansweredToolCalls([user('q')])).toEqual([user('q')]);
  });
});

describe('R2.13 R2.15 failure chains', () => {
  const budget = ApplicationFailure.create({
    type: 'ModelCall.BudgetExceeded',
    message: 'not calling m: too big (maxCostUsd)',
    nonRetryable: true,
    details: [{ limit: 'maxCostUsd', billed: { inputTokens: 40, outputTokens: 2 } }],
  });
  const wrapped = new Error('activity failed', { cause: budget });

  it('R2.13 the message that says what to fix is the first ApplicationFailure of the chain, else the root', () => {
    expect(failureMessage(wrapped)).toBe('not calling m: too big (maxCostUsd)');
    expect(findFailure(wrapped)).toBe(budget);
    expect(findFailure(wrapped, 'Model.Timeout' as never)).toBeUndefined();
    const plain = new Error('outer', { cause: new Error('inner', { cause: new Error('root cause') }) });
    expect(rootMessage(plain)).toBe('root cause');
    expect(failureMessage(plain)).toBe('root cause');
    expect(rootMessage('a string')).toBe('a string');
  });

  it('R2.13 a call refused for its budget names the limit it did not fit; other failures name none', () => {
    expect(budgetExceeded(wrapped)).toBe('maxCostUsd');
    const tokens = ApplicationFailure.create({
      type: 'ModelCall.BudgetExceeded',
      message: 'x',
      details: [{ limit: 'maxTokens' }],
    });
    expect(budgetExceeded(tokens)).toBe('maxTokens');
    expect(budgetExceeded(ApplicationFailure.create({ type: 'ModelCall.BudgetExceeded', message: 'x' }))).toBe(
      'maxTokens',
    );
    expect(budgetExceeded(ApplicationFailure.create({ type: 'Other', message: 'x' }))).toBeNull();
    expect(budgetExceeded(new Error('x'))).toBeNull();
  });

  it('R2.15 what a failed call was billed is read from its failure, its cancellation or its last heartbeat', () => {
    expect(billedBy(wrapped)).toEqual({ inputTokens: 40, outputTokens: 2 });
    const cancelled = new CancelledFailure('cancelled', [{ billed: { inputTokens: 7, outputTokens: 0 } }]);
    expect(billedBy(new Error('x', { cause: cancelled }))).toEqual({ inputTokens: 7, outputTokens: 0 });
    const timeout = new TimeoutFailure('timed out', { billed: { inputTokens: 9, outputTokens: 3 } }, 'HEARTBEAT');
    expect(billedBy(timeout)).toEqual({ inputTokens: 9, outputTokens: 3 });
    expect(
      billedBy(ApplicationFailure.create({ message: 'x', details: [{ billed: { inputTokens: -1 } }] })),
    ).toBeNull();
    expect(billedBy(new Error('x'))).toBeNull();
  });
});

describe('R1.6 compaction', () => {
  const header = {
    type: 'session/header',
    at,
    version: 1,
    sessionId: 's',
    parentId: null,
    depth: 0,
    preset: 'p',
    model: 'm',
  } as SessionEvent;
  const long = (n: number) => `turn ${n} ${'words '.repeat(200)}`;
  const session: SessionEvent[] = [
    header,
    user(long(1)),
    answer(long(1), [['c1', 'calculate']]),
    result('c1', 'calculate', '42'),
    user(long(2)),
    answer(long(2)),
    user(long(3)),
    answer(long(3)),
  ];

  it('R1.6 nothing is planned under the threshold or with no more turns than are kept', () => {
    expect(planCompaction(session, dialogueTokens(session), 1)).toBeNull();
    expect(planCompaction(session, 10, 3)).toBeNull();
    expect(dialogueTokens([header])).toBe(0);
    expect(dialogueTokens([user('abcd')])).toBe(Math.ceil(JSON.stringify(user('abcd')).length / 4));
  });

  it('R1.6 the oldest turns are replaced; the header stays before the summary and the recent turns after it', () => {
    const plan = planCompaction(session, 10, 1)!;
    expect(plan.kept).toEqual([header]);
    expect(plan.replaced).toEqual(session.slice(1, 6));
    expect(plan.recent).toEqual(session.slice(6));
    expect(plan.replacesTurns).toBe(2);
    const compacted = applyCompaction(plan, 'SUMMARY', at);
    expect(compacted).toEqual([
      header,
      { type: 'compaction/summary', at, summary: 'SUMMARY', replacesTurns: 2 },
      ...session.slice(6),
    ]);
    // A later compaction counts the turns its summary already replaced.
    const again = planCompaction([...compacted, user(long(4)), answer(long(4))], 10, 1)!;
    expect(again.replacesTurns).toBe(3);
    expect(again.replaced[0]).toMatchObject({ type: 'compaction/summary', summary: 'SUMMARY' });
  });

  it('R1.6 the compaction prompt shows the replaced turns as text, tool traffic included, steering left out', () => {
    const replaced = [
      user('what is 6 x 7?'),
      answer('let me see', [
        ['c1', 'calculate'],
        ['d1', 'delegate'],
      ]),
      result('c1', 'calculate', '42'),
      result('d1', 'delegate', 'child said hi'),
    ];
    const [system, prompt] = compactionPrompt(replaced, 100_000);
    expect(system).toEqual({ role: 'system', content: COMPACTION_SYSTEM_PROMPT });
    expect(prompt!.role).toBe('user');
    expect(prompt!.content).toMatch(/^## Conversation to compact\n/);
    expect(prompt!.content).toContain('user: what is 6 x 7?');
    expect(prompt!.content).toContain('assistant: let me see');
    expect(prompt!.content).toContain('called calculate');
    expect(prompt!.content).not.toContain('called delegate');
    expect(prompt!.content).toMatch(/\n\nWrite the compacted summary\.$/);
  });

  it('R1.6 the worker writes the same kind of prompt from the messages it holds, and the dialogue after the summary', () => {
    const messages = [
      { role: 'system' as const, content: 'persona' },
      { role: 'user' as const, content: 'what is 6 x 7?' },
      {
        role: 'assistant' as const,
        content: 'let me see',
        tool_calls: [
          { id: 'c1', type: 'function' as const, function: { name: 'calculate', arguments: '{"a":6}' } },
          { id: 'd1', type: 'function' as const, function: { name: 'delegate', arguments: '{}' } },
        ],
      },
      { role: 'tool' as const, tool_call_id: 'c1', content: '42' },
      { role: 'tool' as const, tool_call_id: 'd1', content: 'child said hi' },
      { role: 'user' as const, content: 'and now?' },
    ];
    const [system, prompt] = compactionPromptFromMessages(messages, { from: 1, to: 5, maxBytes: 100_000 });
    expect(system!.content).toBe(COMPACTION_SYSTEM_PROMPT);
    expect(prompt!.content).toBe(
      '## Conversation to compact\nuser: what is 6 x 7?\nassistant: let me see\nassistant called calculate({"a":6})\ncalculate returned: 42\n\nWrite the compacted summary.',
    );
    const after = messagesAfterCompaction(messages, { from: 1, to: 5 }, 'SUMMARY');
    expect(after.map((m) => m.role)).toEqual(['system', 'user', 'user']);
    expect(after[1]!.content).toMatch(/SUMMARY$/);
    expect(after[2]).toBe(messages[5]);
    // An earlier summary in the range is shown as such.
    const [, resummary] = compactionPromptFromMessages(after, { from: 1, to: 2, maxBytes: 100_000 });
    expect(resummary!.content).toContain('summary of earlier turns: SUMMARY');
  });
});
