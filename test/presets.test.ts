import { describe, expect, it } from 'vitest';
import proto from '@temporalio/proto';
import OpenAI from 'openai';
import { createActivities } from '../activities/index.js';
import { createPresetLookup, presetRecordedBy } from '../activities/runs.js';
import { toolMap } from '../src/worker/factory.js';
import { decodePayloads } from '../src/codec/decode.js';
import { ConfigStore } from '../src/config/store.js';
import { presetRevision } from '../src/config/presets.js';
import { parseConfig } from '../src/config/schema.js';
import { RunState } from '../src/contract/run.js';
import { forTask, userSays } from '../src/testing/script.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';

const base = delegationConfig();
const store = new ConfigStore(base);
const h = useHarness({ config: store, tools: DELEGATION_TOOLS });

/** The config with the `assistant` preset's persona changed, or (persona null) with that preset removed. */
function withAssistant(persona: string | null) {
  const presets = base.presets.filter((p) => p.id !== 'assistant');
  const assistant = base.presets.find((p) => p.id === 'assistant')!;
  return parseConfig({
    ...base,
    defaultPreset: persona === null ? 'researcher' : 'assistant',
    presets: persona === null ? presets : [{ ...assistant, persona }, ...presets],
  });
}

describe('R4.1 R4.2 R4.3 R4.4 explicit or inherited composition', () => {
  it("R4.2 R4.3 R4.4 after a config change, an explicit child gets the new revision and an implicit one the parent's", async () => {
    store.set(base);
    const task = 'presets: live change';
    const oldRevision = presetRevision(base.presets.find((p) => p.id === 'assistant')!);
    h.model.add(
      {
        name: 'parent first',
        when: forTask(task, 0),
        delayMs: 1500,
        reply: delegateReply({
          briefs: [
            { task_name: 'explicit', message: 'explicit role child', role: 'assistant' },
            { task_name: 'implicit', message: 'implicit child' },
          ],
        }),
      },
      { when: forTask(task, 1), reply: { text: 'done' } },
      { name: 'explicit', when: userSays('explicit role child'), reply: { text: 'ok' } },
      { name: 'implicit', when: userSays('implicit child'), reply: { text: 'ok' } },
    );
    const parentId = h.id('presets');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'parent first'));
    const changed = withAssistant('You are the parent, version 2.');
    store.set(changed); // while the parent is live
    const newRevision = presetRevision(changed.presets.find((p) => p.id === 'assistant')!);
    expect(newRevision).not.toBe(oldRevision);
    expect((await h.deputy.result(parentId)).status).toBe('completed');

    const system = (rule: string) => h.model.requests.find((r) => r.rule === rule)!.body.messages[0]!.content;
    expect(system('explicit')).toBe('You are the parent, version 2.');
    expect(system('implicit')).toBe('You are the parent.');

    const explicit = RunState.parse(await h.deputy.getState(`${parentId}/explicit-1`));
    const implicit = RunState.parse(await h.deputy.getState(`${parentId}/implicit-1`));
    expect(explicit.session.map((e) => e.type).slice(0, 3)).toEqual([
      'session/header',
      'agent-preset/selected',
      'subagent/descriptor',
    ]);
    expect(explicit.session[1]).toMatchObject({ presetId: 'assistant', revision: newRevision });
    expect(implicit.session.map((e) => e.type).slice(0, 2)).toEqual(['session/header', 'subagent/descriptor']);
    expect(implicit.session.some((e) => e.type === 'agent-preset/selected')).toBe(false);
  });

  it("R4.3 with the preset removed from the config, an implicit child still spawns with the parent's definition; an explicit one is refused", async () => {
    store.set(base);
    const task = 'presets: removed';
    h.model.add(
      {
        name: 'removed first',
        when: forTask(task, 0),
        delayMs: 1500,
        reply: delegateReply({ briefs: [{ task_name: 'orphaned', message: 'child of a removed preset' }] }),
      },
      {
        when: forTask(task, 1),
        reply: delegateReply({ briefs: [{ task_name: 'named', message: 'never runs', role: 'assistant' }] }),
      },
      { name: 'removed join', when: forTask(task, 2), reply: { text: 'done' } },
      { name: 'orphaned', when: userSays('child of a removed preset'), reply: { text: 'still here' } },
    );
    const parentId = h.id('removed');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'removed first'));
    store.set(withAssistant(null));
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    expect(h.model.requests.find((r) => r.rule === 'orphaned')!.body.messages[0]!.content).toBe('You are the parent.');
    const join = h.model.requests.find((r) => r.rule === 'removed join')!;
    expect(join.body.messages.at(-1)!.content).toBe(
      'unknown role "assistant"; the presets are: researcher; nothing was spawned',
    );
    store.set(base);
  });
  it('R4.5 R2.16 a follow-up of a role child whose preset is no longer registered is refused, naming it; nothing is spawned', async () => {
    store.set(base);
    const task = 'presets: follow a removed role';
    h.model.add(
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [{ task_name: 'look', message: 'role child before removal', role: 'researcher' }],
        }),
      },
      {
        name: 'follow removed',
        when: forTask(task, 1),
        delayMs: 1500,
        reply: { toolCalls: [{ name: 'followup', arguments: { task_name: 'look', message: 'role child: go on' } }] },
      },
      { name: 'follow refused', when: forTask(task, 2), reply: { text: 'done' } },
      { when: userSays('role child before removal'), reply: { text: 'found it' } },
      { name: 'never', when: userSays('role child: go on'), reply: { text: 'must not run' } },
    );
    const parentId = h.id('follow-removed');
    const revision = presetRevision(base.presets.find((p) => p.id === 'researcher')!);
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'follow removed'));
    store.set(parseConfig({ ...base, presets: base.presets.filter((p) => p.id !== 'researcher') }));
    try {
      expect((await h.deputy.result(parentId)).status).toBe('completed');
    } finally {
      store.set(base);
    }
    const refused = h.model.requests.find((r) => r.rule === 'follow refused')!;
    expect(refused.body.messages.at(-1)!.content).toBe(
      `cannot restore "look": it selected preset "researcher" (revision ${revision}), which is no longer registered; nothing was spawned`,
    );
    expect(h.model.requests.some((r) => r.rule === 'never')).toBe(false);
    const state = RunState.parse(await h.deputy.getState(parentId));
    expect(state.delegations.map((d) => d.taskName)).toEqual(['look']);
  });
});

describe('R4.3 a large preset goes to a child by reference', () => {
  const { HistoryEvent } = proto.temporal.api.history.v1;
  /** Over the size past which a child's input carries the preset's revision instead of its definition. */
  const long = `You are the parent, at length. ${'Mind every detail. '.repeat(80)}`;
  const assistantOf = (config: ReturnType<typeof withAssistant>) => config.presets.find((p) => p.id === 'assistant')!;

  /** The run's events with the input each start carried (a child's, in its parent or in itself) decoded. */
  async function eventsOf(workflowId: string) {
    const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
    return Promise.all(
      (history.events ?? []).map(async (event) => {
        const started =
          event.startChildWorkflowExecutionInitiatedEventAttributes ?? event.workflowExecutionStartedEventAttributes;
        const [input] = started
          ? await decodePayloads(h.client.options.loadedDataConverter, started.input?.payloads)
          : [];
        return {
          event,
          bytes: Buffer.from(HistoryEvent.encode(event).finish()),
          input: input as { origin?: { taskName?: string; preset?: unknown } } | undefined,
        };
      }),
    );
  }

  it("R4.3 after the config moves on, an implicit child runs with the parent's exact preset, read from what the parent recorded; its start carries only the revision", async () => {
    const before = withAssistant(long);
    store.set(before);
    const revision = presetRevision(assistantOf(before));
    const task = 'presets: by reference';
    h.model.add(
      {
        name: 'ref first',
        when: forTask(task, 0),
        delayMs: 1500,
        reply: delegateReply({
          briefs: [
            { task_name: 'implicit', message: 'implicit by reference' },
            { task_name: 'explicit', message: 'explicit by reference', role: 'assistant' },
          ],
        }),
      },
      { when: forTask(task, 1), reply: { text: 'done' } },
      { name: 'ref implicit', when: userSays('implicit by reference'), reply: { text: 'ok' } },
      { name: 'ref explicit', when: userSays('explicit by reference'), reply: { text: 'ok' } },
    );
    const parentId = h.id('by-reference');
    await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: parentId });
    await h.model.waitFor((rs) => rs.some((r) => r.rule === 'ref first'));
    const after = withAssistant(`${long} Version 2.`);
    store.set(after); // the worker's config no longer has the parent's revision
    try {
      expect((await h.deputy.result(parentId)).status).toBe('completed');
    } finally {
      store.set(base);
    }
    const system = (rule: string) => h.model.requests.find((r) => r.rule === rule)!.body.messages[0]!.content;
    expect(system('ref implicit')).toBe(long);
    // A role is looked up when the parent spawns it: after the change, the new revision, from the config.
    expect(system('ref explicit')).toBe(`${long} Version 2.`);

    const implicit = RunState.parse(await h.deputy.getState(`${parentId}/implicit-1`));
    expect(implicit.composition).toEqual({ preset: assistantOf(before), revision, model: 'test-model' });
    const explicit = RunState.parse(await h.deputy.getState(`${parentId}/explicit-1`));
    expect(explicit.composition?.revision).toBe(presetRevision(assistantOf(after)));

    // Both starts of the implicit child (the parent's initiated event, the child's started one) carry the revision,
    // not the persona; the child records it in its look-up's marker, then sends it to the model as any run does.
    const parentEvents = await eventsOf(parentId);
    const childEvents = await eventsOf(`${parentId}/implicit-1`);
    const initiated = parentEvents.find((e) => e.input?.origin?.taskName === 'implicit')!;
    const started = childEvents[0]!;
    for (const start of [initiated, started]) {
      expect(start.input?.origin?.preset).toEqual({ revision, selected: false });
      expect(start.bytes.includes('Mind every detail')).toBe(false);
    }
    const withPersona = childEvents.filter((e) => e.bytes.includes('Mind every detail'));
    expect(withPersona.map((e) => e.event.eventType)).toEqual([
      proto.temporal.api.enums.v1.EventType.EVENT_TYPE_MARKER_RECORDED,
      proto.temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    ]);
    expect(withPersona[0]!.bytes.includes('presetAtRevision')).toBe(true);
    // A role child looks its preset up inside resolveRun: one marker holds the definition, no second look-up.
    const roleEvents = await eventsOf(`${parentId}/explicit-1`);
    const roleWithPersona = roleEvents.filter((e) => e.bytes.includes('Mind every detail'));
    expect(roleWithPersona.map((e) => e.event.eventType)).toEqual([
      proto.temporal.api.enums.v1.EventType.EVENT_TYPE_MARKER_RECORDED,
      proto.temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    ]);
    expect(roleWithPersona[0]!.bytes.includes('resolveRun')).toBe(true);
    expect(roleEvents.some((e) => e.bytes.includes('presetAtRevision'))).toBe(false);

    // What the parent recorded answers for that revision and no other.
    const parent = { workflowId: parentId, runId: (await h.client.workflow.getHandle(parentId).describe()).runId };
    expect(await presetRecordedBy(h.client, { id: 'assistant', revision, parent })).toEqual(assistantOf(before));
    expect(await presetRecordedBy(h.client, { id: 'assistant', revision: 'ffffffffffff', parent })).toBeUndefined();
    // resolveRun, asked for a preset by reference its config no longer has, resolves the parent's recorded one.
    const activities = createActivities({
      openai: new OpenAI({ apiKey: 'unused', baseURL: 'http://127.0.0.1:9' }),
      config: store,
      tools: toolMap(DELEGATION_TOOLS),
      childTaskQueue: 'unused',
      client: h.client,
    });
    const resolved = await activities.resolveRun({
      preset: 'assistant',
      depth: 1,
      presetAt: { id: 'assistant', revision, parent },
    });
    expect(resolved.presetDefinition).toEqual(assistantOf(before));
    expect(resolved.presetRevision).toBe(revision);
    // A revision nobody recorded fails the look-up, saying where it looked; so does a worker without a client.
    const unknown = { id: 'assistant', revision: 'ffffffffffff', parent };
    await expect(createPresetLookup(store, h.client)(unknown)).rejects.toMatchObject({
      type: 'Config.PresetNotRecorded',
      nonRetryable: true,
      message: `preset "assistant" at revision ffffffffffff is not in this worker's config, nor recorded by the parent run ${parentId}`,
    });
    await expect(createPresetLookup(store, undefined)({ ...unknown, revision })).rejects.toMatchObject({
      type: 'Config.PresetNotRecorded',
      message: expect.stringContaining('needs a Temporal client') as unknown,
    });
  });

  it("R4.3 attack: a preset a caller put in a root's input is never taken for what the root recorded", async () => {
    store.set(base);
    const task = 'presets: caller preset';
    h.model.add({ when: forTask(task, 0), reply: { text: 'done' } });
    // The config grants `assistant` no `fetch_page`: the root runs with it narrowed away.
    const claimed = { ...assistantOf(withAssistant(long)), tools: ['calculate', 'fetch_page'] };
    const rootId = h.id('caller-preset');
    await h.deputy.startRun(
      { task, scopes: PARENT_SCOPES, restore: { kind: 'import', events: [], preset: claimed } },
      { workflowId: rootId },
    );
    expect((await h.deputy.result(rootId)).status).toBe('completed');
    const parent = { workflowId: rootId, runId: (await h.client.workflow.getHandle(rootId).describe()).runId };
    const recorded = RunState.parse(await h.deputy.getState(rootId)).composition!;
    expect(recorded.preset.tools).toEqual(['calculate']);
    expect(
      await presetRecordedBy(h.client, { id: 'assistant', revision: presetRevision(claimed), parent }),
    ).toBeUndefined();
    expect(await presetRecordedBy(h.client, { id: 'assistant', revision: recorded.revision, parent })).toEqual(
      recorded.preset,
    );
  });
});
