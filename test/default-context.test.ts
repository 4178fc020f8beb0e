/**
 * Default context per layer (R3.10): `delegation.defaultContext` decides what a brief without `context` gets, a
 * preset's `defaultContext` overrides it for runs with that preset, and a brief's own `context` wins over both.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/schema.js';
import { RunState } from '../src/contract/run.js';
import { lastMessage, type RecordedRequest } from '../src/testing/script.js';
import { delegateReply, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { testConfig, useHarness } from './support/harness.js';

const h = useHarness({
  config: testConfig({
    presets: [
      // The conversation layer forks by default (the config's default); inner layers stay isolated or see a little.
      { id: 'assistant', persona: 'You talk to the person.', tools: ['calculate', 'search_notes'] },
      { id: 'isolated', persona: 'You work alone.', tools: ['calculate'], defaultContext: 'none' },
      { id: 'recent', persona: 'You see a little.', tools: ['calculate'], defaultContext: 1 },
    ],
    delegation: {
      enabled: true,
      activation: 'unconditional',
      defaultContext: 'all',
      childDefaults: { maxTurns: 5, maxTokens: 8000, maxCostUsd: 0.005, maxToolCalls: 5 },
    },
  }),
  tools: DELEGATION_TOOLS,
});

const HISTORY = [
  { role: 'user' as const, content: 'default ctx: my budget is 300 EUR' },
  { role: 'assistant' as const, content: 'Noted: 300 EUR.' },
];

/** The user messages a child's first request holds before its task. */
const childSaw = (r: RecordedRequest) =>
  r.body.messages
    .filter((m) => m.role === 'user')
    .slice(0, -1)
    .map((m) => m.content ?? '');

/** Runs a root with `preset` that delegates the briefs, and returns its ledger's context modes and what each child saw. */
async function delegateAs(preset: string, briefs: { task_name: string; context?: string }[]) {
  const task = `default ctx as ${preset}: go`;
  h.model.add(
    {
      when: (r) => lastMessage(r) === task,
      reply: delegateReply({ briefs: briefs.map((b) => ({ ...b, message: `default ctx ${preset} ${b.task_name}` })) }),
    },
    {
      when: (r) => r.body.messages.at(-1)?.role === 'tool' && lastMessage(r).includes('EXTERNAL_UNTRUSTED'),
      reply: { text: 'done' },
    },
    ...briefs.map((b) => ({
      name: `${preset}:${b.task_name}`,
      when: (r: RecordedRequest) => lastMessage(r).endsWith(`default ctx ${preset} ${b.task_name}`),
      reply: { text: 'child done' },
    })),
  );
  const id = h.id(`default-ctx-${preset}`);
  await h.deputy.startRun({ task, preset, messages: HISTORY, scopes: PARENT_SCOPES }, { workflowId: id });
  expect((await h.deputy.result(id)).status).toBe('completed');
  const state = RunState.parse(await h.deputy.getState(id));
  return briefs.map((b) => ({
    mode: state.delegations.find((d) => d.taskName === b.task_name)!.preparation.contextMode,
    saw: childSaw(h.model.requests.find((r) => r.rule === `${preset}:${b.task_name}`)!),
  }));
}

describe('R3.10 default context per layer', () => {
  it("R3.10 the config's default forks a brief without context; a brief's own context wins", async () => {
    const [implicit, explicit] = await delegateAs('assistant', [
      { task_name: 'forked' },
      { task_name: 'alone', context: 'none' },
    ]);
    expect(implicit!.mode).toBe('all');
    expect(implicit!.saw.join('\n')).toMatch(
      /^## Parent Chat Context\n[\s\S]*outer_user: default ctx: my budget is 300 EUR\nouter_assistant: Noted: 300 EUR\./,
    );
    expect(explicit).toEqual({ mode: 'none', saw: [] });
  });

  it("R3.10 a preset's defaultContext overrides the config's: none for an isolated layer, the last turn for another", async () => {
    const [isolated] = await delegateAs('isolated', [{ task_name: 'inner' }]);
    expect(isolated).toEqual({ mode: 'none', saw: [] });
    const [recent] = await delegateAs('recent', [{ task_name: 'inner' }]);
    expect(recent!.mode).toBe(1);
    // The last turn only: the task that delegated, not the earlier messages.
    expect(recent!.saw.join('\n')).toContain('outer_user: default ctx as recent: go');
    expect(recent!.saw.join('\n')).not.toContain('300 EUR');
  });

  it('R3.10 a bad defaultContext is one config problem naming its field', () => {
    expect(() => parseConfig({ delegation: { defaultContext: 'some' } })).toThrow(/delegation\.defaultContext: /);
    expect(() => parseConfig({ presets: [{ id: 'a', defaultContext: 0 }] })).toThrow(/presets\.0\.defaultContext: /);
    expect(parseConfig({}).delegation.defaultContext).toBeUndefined();
  });
});
