/** The events a new run's session opens with, in order, for a root and for children. */
import { describe, expect, it } from 'vitest';
import { openingEvents } from '../src/rules/run-start.js';

const AT = '2026-12-01T00:00:00.000Z';
const composition = { preset: 'assistant', model: 'test-model' };

describe('R1.5 R4.4 a session opens with its header, a child its selection and descriptor, then its task', () => {
  it('R1.5 a root: its header, its seed messages, then its task', () => {
    const events = openingEvents(
      {
        task: 'sum the invoices',
        messages: [
          { role: 'user', content: 'earlier question' },
          { role: 'assistant', content: 'earlier answer' },
        ],
      },
      { sessionId: 'root-1', depth: 0, composition },
      AT,
    );
    expect(events).toEqual([
      {
        type: 'session/header',
        at: AT,
        version: 1,
        sessionId: 'root-1',
        parentId: null,
        depth: 0,
        preset: 'assistant',
        model: 'test-model',
      },
      { type: 'message/user', at: AT, content: 'earlier question' },
      { type: 'message/assistant', at: AT, content: 'earlier answer', toolCalls: [] },
      { type: 'message/user', at: AT, content: 'sum the invoices' },
    ]);
  });

  it('R4.4 an independently selected child records its selection before its descriptor, then its background', () => {
    const origin = {
      parentId: 'root-1',
      rootId: 'root-1',
      depth: 1,
      taskName: 'tax',
      preset: { definition: { id: 'researcher', persona: 'p', tools: [] }, revision: 'rev-7', selected: true },
      parentBackground: { source: 'summary' as const, content: 'what the parent knew' },
    };
    const events = openingEvents(
      { task: 'find the rate', origin } as never,
      { sessionId: 'root-1/tax-1', depth: 1, composition: { preset: 'researcher', model: 'm' } },
      AT,
    );
    expect(events.map((e) => e.type)).toEqual([
      'session/header',
      'agent-preset/selected',
      'subagent/descriptor',
      'context/background',
      'message/user',
    ]);
    expect(events[0]).toMatchObject({ parentId: 'root-1', depth: 1, preset: 'researcher', model: 'm' });
    expect(events[1]).toEqual({ type: 'agent-preset/selected', at: AT, presetId: 'researcher', revision: 'rev-7' });
    expect(events[2]).toEqual({ type: 'subagent/descriptor', at: AT, taskName: 'tax', parentId: 'root-1' });
    expect(events[3]).toEqual({
      type: 'context/background',
      at: AT,
      source: 'summary',
      content: 'what the parent knew',
    });
  });

  it('R4.4 an implicit child records no selection; a restored dialogue goes on under its own header', () => {
    const origin = { parentId: 'p', rootId: 'p', depth: 1, taskName: 'look' };
    const restored = [
      {
        type: 'session/header',
        at: AT,
        version: 1,
        sessionId: 'old',
        parentId: null,
        depth: 0,
        preset: 'a',
        model: 'm',
      },
      { type: 'message/user', at: AT, content: 'old task' },
      { type: 'message/assistant', at: AT, content: 'old answer', toolCalls: [] },
      { type: 'run/ended', at: AT, status: 'completed', output: 'old answer' },
    ];
    const events = openingEvents(
      { task: 'go on', origin, restore: { events: restored } } as never,
      { sessionId: 'p/look-2', depth: 1, composition },
      AT,
    );
    expect(events.map((e) => e.type)).toEqual([
      'session/header',
      'subagent/descriptor',
      'message/user',
      'message/assistant',
      'message/user',
    ]);
    expect(events.at(-1)).toEqual({ type: 'message/user', at: AT, content: 'go on' });
    expect(events[2]).toEqual({ type: 'message/user', at: AT, content: 'old task' });
  });
});
