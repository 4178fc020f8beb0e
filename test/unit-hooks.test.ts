/**
 * R3.4 hooks as the config declares them and as they answer: a name a log can show, at least one event, exactly one
 * of a URL or a function, timeouts and failure modes with their defaults; a decision that defaults to accept and a
 * rewrite that cannot empty a task.
 */
import { describe, expect, it } from 'vitest';
import { HookConfig, HookDecision, HookEvent, HookSpec } from '../src/contract/hooks.js';

const messages = (raw: unknown) => {
  const parsed = HookConfig.safeParse(raw);
  return parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
};

describe('R3.4 a hook in the config', () => {
  it('R3.4 a function hook on one event gets the defaults: 10 s a try, and closed on error', () => {
    expect(HookConfig.parse({ name: 'gate.v2_x-1', events: ['task.submitted'], function: 'gate' })).toEqual({
      name: 'gate.v2_x-1',
      events: ['task.submitted'],
      function: 'gate',
      timeoutSeconds: 10,
      onError: 'fail_closed',
    });
    const webhook = { name: 'audit', events: ['subagent.start', 'subagent.end'], url: 'https://audit.example/h' };
    expect(HookConfig.parse({ ...webhook, timeoutSeconds: 2.5, onError: 'fail_open' })).toMatchObject({
      timeoutSeconds: 2.5,
      onError: 'fail_open',
    });
  });

  it.each([
    ['a name with capitals', { name: 'Gate' }, 'name: use lowercase letters, digits, ., - and _'],
    ['a name that starts with a dot', { name: '.gate' }, 'name: use lowercase letters, digits, ., - and _'],
    ['a name with a space', { name: 'my gate' }, 'name: use lowercase letters, digits, ., - and _'],
    ['a name with a slash at the end', { name: 'gate/' }, 'name: use lowercase letters, digits, ., - and _'],
    ['no event', { events: [] }, 'events: '],
    ['an event that does not exist', { events: ['run.started'] }, 'events.0: '],
    ['a URL and a function', { url: 'https://a.example' }, ': give exactly one of url or function'],
    ['neither a URL nor a function', { function: undefined }, ': give exactly one of url or function'],
    ['no time to answer', { timeoutSeconds: 0 }, 'timeoutSeconds: '],
    ['an unknown failure mode', { onError: 'retry' }, 'onError: '],
    ['a key the config does not know', { retries: 3 }, ': '],
  ])('R3.4 refused: %s', (_, change, says) => {
    const found = messages({ name: 'gate', events: ['subagent.start'], function: 'gate', ...change });
    expect(found.length).toBeGreaterThan(0);
    expect(found.some((m) => m.startsWith(says))).toBe(true);
  });

  it('R3.4 the three events a hook can name, and the hook as the workflow gets it', () => {
    expect(HookEvent.options).toEqual(['task.submitted', 'subagent.start', 'subagent.end']);
    const spec = { name: 'gate', events: ['subagent.end'], timeoutSeconds: 10, onError: 'fail_open' };
    expect(HookSpec.parse(spec)).toEqual(spec);
    expect(HookSpec.safeParse({ ...spec, onError: 'maybe' }).success).toBe(false);
    expect(HookSpec.safeParse({ ...spec, events: ['run.ended'] }).success).toBe(false);
  });
});

describe('R3.4 what a hook answers', () => {
  it('R3.4 an empty answer accepts; a rewrite or a rejection is read as given; a rewrite to nothing is refused', () => {
    expect(HookDecision.parse({})).toEqual({ decision: 'accept' });
    expect(HookDecision.parse({ decision: 'rewrite', task: 'Find the rate.' })).toEqual({
      decision: 'rewrite',
      task: 'Find the rate.',
    });
    expect(HookDecision.parse({ decision: 'reject', reason: 'not here' })).toEqual({
      decision: 'reject',
      reason: 'not here',
    });
    expect(HookDecision.safeParse({ decision: 'rewrite', task: '' }).success).toBe(false);
    expect(HookDecision.safeParse({ decision: 'maybe' }).success).toBe(false);
    for (const decision of ['accept', 'rewrite', 'reject']) {
      expect(HookDecision.parse({ decision }).decision).toBe(decision);
    }
  });
});
