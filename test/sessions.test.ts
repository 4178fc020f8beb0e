import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { ConfigStore } from '../src/config/store.js';
import { parseConfig } from '../src/config/schema.js';
import { InputError } from '../src/contract/errors.js';
import { RunState } from '../src/contract/run.js';
import { parseSessionExport } from '../src/rules/sessions.js';
import { decideRestoration } from '../src/rules/restoration.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { forTask, offeredTools, userSays } from '../src/testing/script.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';

const execFileAsync = promisify(execFile);
const base = delegationConfig();
const store = new ConfigStore(base);
const h = useHarness({ config: store, tools: DELEGATION_TOOLS });

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'test', 'fixtures', 'sessions', `${name}.json`), 'utf8'));

describe('R4.5 cold restoration', () => {
  it('R4.5 imported: an independent session runs with its preset as registered now; implicit ones with the exported composition', async () => {
    store.set(base);
    const personaOf = async (name: string) => {
      const task = `restored ${name}: and the tax?`;
      h.model.add({ name: task, when: forTask(task), reply: { text: 'tax is 8%' } });
      const handle = await h.deputy.importSession(fixture(name), { task, scopes: ['tools.notes'] });
      const result = await h.deputy.result(handle.workflowId);
      const request = h.model.requests.find((r) => r.rule === task);
      return { result, request, workflowId: handle.workflowId };
    };
    const a = await personaOf('a-selected-before-descriptor');
    expect(a.request!.body.messages[0]!.content).toBe('You research.');
    expect(offeredTools(a.request!)).toEqual(['search_notes']);
    // The restored dialogue comes before the new task.
    expect(a.request!.body.messages.slice(1).map((m) => m.content)).toEqual([
      '## Your task\nFind the shipping cost.',
      'Shipping is $4.99.',
      'restored a-selected-before-descriptor: and the tax?',
    ]);
    for (const name of ['c-preset-only-in-header', 'e-selection-after-descriptor']) {
      const run = await personaOf(name);
      expect(run.result.status, name).toBe('completed');
      expect(run.request!.body.messages[0]!.content, name).toBe('You are the exported persona.');
      expect(offeredTools(run.request!), name).toEqual(['search_notes']);
    }

    const b = await personaOf('b-selected-preset-removed');
    expect(b.request).toBeUndefined(); // it never called the model
    expect(b.result).toMatchObject({
      status: 'failed',
      error: 'unknown preset "retired"; the config defines: assistant, researcher',
    });
  });

  it('R4.5 import rejects a malformed or future-version session, naming the problem', async () => {
    const good = fixture('c-preset-only-in-header') as Record<string, unknown>;
    const broken = { ...good, events: [{ type: 'message/user', at: 'yesterday' }] };
    await expect(h.deputy.importSession(broken, { task: 'x' })).rejects.toThrow(InputError);
    await expect(h.deputy.importSession(broken, { task: 'x' })).rejects.toThrow(
      /events\.0\.at: .*events\.0\.content: /,
    );
    await expect(h.deputy.importSession({ ...good, version: 2 }, { task: 'x' })).rejects.toThrow(
      'invalid session: version: this session is version 2, newer than this Deputy reads (1); upgrade Deputy to import it',
    );
    await expect(h.deputy.importSession({ ...good, format: 'other' }, { task: 'x' })).rejects.toThrow(/format: /);
  });
});

describe('R4.6 fork', () => {
  it("R4.6 a preset argument is rejected; without one the branch runs with the source's composition", async () => {
    store.set(base);
    const task = 'fork source: what is 2+2?';
    h.model.add({ when: forTask(task), reply: { text: 'four' } });
    const source = await h.deputy.startRun({ task }, { workflowId: h.id('fork-source') });
    await h.deputy.result(source.workflowId);

    await expect(h.deputy.fork(source.workflowId, { task: 'and 3+3?', preset: 'researcher' })).rejects.toThrow(
      "preset: a fork keeps its source's composition",
    );
    // The registry changes after the source ran: the branch still runs with the source's definition.
    store.set(
      parseConfig({
        ...base,
        presets: base.presets.map((p) => (p.id === 'assistant' ? { ...p, persona: 'Changed persona.' } : p)),
      }),
    );
    h.model.add({ name: 'branch', when: userSays('and 3+3?'), reply: { text: 'six' } });
    const branch = await h.deputy.fork(source.workflowId, { task: 'and 3+3?' });
    expect((await h.deputy.result(branch.workflowId)).output).toBe('six');
    const request = h.model.requests.find((r) => r.rule === 'branch')!;
    expect(request.body.messages.map((m) => m.content)).toEqual(['You are the parent.', task, 'four', 'and 3+3?']);
    const state = RunState.parse(await h.deputy.getState(branch.workflowId));
    expect(state.session.filter((e) => e.inherited).map((e) => e.type)).toEqual(['message/user', 'message/assistant']);
    expect(state.session.at(-3)).toMatchObject({ type: 'message/user', content: 'and 3+3?' });
    store.set(base);
  });
});

describe('R4.5 R4.6 a real fork of an independently selected child', () => {
  it('R4.5 the fork copies the selection as inherited events: restoring the fork is implicit, never the copied selection', async () => {
    store.set(base);
    const task = 'fork fixture: delegate to a researcher';
    h.model.add(
      { name: 'selected child', when: userSays('Find the shipping cost.'), reply: { text: 'Shipping is $4.99.' } },
      {
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [{ task_name: 'finder', message: 'Find the shipping cost.', role: 'researcher' }],
        }),
      },
      { when: forTask(task, 1), reply: { text: 'done' } },
    );
    const parent = await h.deputy.startRun({ task, scopes: PARENT_SCOPES }, { workflowId: h.id('fork-fixture') });
    await h.deputy.result(parent.workflowId);
    // The selected preset's tools, not the parent's: the researcher has only search_notes.
    const selected = offeredTools(h.model.requests.find((r) => r.rule === 'selected child')!);
    expect(selected).toContain('search_notes');
    expect(selected).not.toContain('calculate');
    const childId = `${parent.workflowId}/finder-1`;
    const child = await h.deputy.exportSession(childId);
    expect(decideRestoration(child.events)).toMatchObject({ kind: 'independent', presetId: 'researcher' });

    h.model.add({ name: 'fork of child', when: userSays('And for express?'), reply: { text: 'Express is $9.99.' } });
    const fork = await h.deputy.fork(childId, { task: 'And for express?' });
    expect((await h.deputy.result(fork.workflowId)).status).toBe('completed');
    const exported = await h.deputy.exportSession(fork.workflowId);
    // Deputy writes a fork's own header first, then the copied events, marked inherited.
    expect(exported.events.map((e) => [e.type, e.inherited ?? false]).slice(0, 4)).toEqual([
      ['session/header', false],
      ['agent-preset/selected', true],
      ['subagent/descriptor', true],
      ['message/user', true],
    ]);
    expect(decideRestoration(exported.events)).toEqual({ kind: 'implicit' });
    if (process.env.RECORD_SESSION_FIXTURES === '1') {
      const path = join(PROJECT_ROOT, 'test', 'fixtures', 'sessions', 'd-fork-of-a-selected-child.json');
      writeFileSync(path, `${JSON.stringify(exported, null, 2)}\n`);
    }

    // The registry drops the copied selection's preset: the fork's session still restores, with its own composition.
    store.set(parseConfig({ ...base, presets: base.presets.filter((p) => p.id !== 'researcher') }));
    h.model.add({ name: 'restored fork', when: userSays('And overnight?'), reply: { text: 'Overnight is $19.99.' } });
    const restored = await h.deputy.importSession(exported, { task: 'And overnight?' });
    expect((await h.deputy.result(restored.workflowId)).status).toBe('completed');
    const restoredRequest = h.model.requests.find((r) => r.rule === 'restored fork')!;
    expect(restoredRequest.body.messages[0]!.content).toBe('You research.');
    // Its tools too: the researcher's, though the registry no longer has it and the run may hold tools.calc.
    expect(offeredTools(restoredRequest)).toEqual(['search_notes']);
    store.set(base);
  });
});

describe('sessions as data', () => {
  it('R4.5 export → import round trip (CLI export, client import), and listing sessions from visibility', async () => {
    store.set(base);
    const task = 'round trip: what is 5+5?';
    h.model.add({ when: forTask(task), reply: { text: 'ten' } });
    const source = await h.deputy.startRun({ task }, { workflowId: h.id('export-source') });
    await h.deputy.result(source.workflowId);
    // Not spawnSync: the worker answering the export's query runs in this process and must keep running.
    const cli = await execFileAsync(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'export', source.workflowId],
      {
        cwd: PROJECT_ROOT,
        env: { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') },
      },
    );
    const exported = parseSessionExport(JSON.parse(cli.stdout));
    if (!exported.ok) throw new Error(exported.problems.join('\n'));
    expect(exported.session).toMatchObject({
      format: 'deputy.session',
      version: 1,
      sessionId: source.workflowId,
      parentId: null,
    });
    expect(exported.session.composition).toMatchObject({ preset: { id: 'assistant' }, model: 'test-model' });

    h.model.add({ name: 'imported', when: userSays('and 6+6?'), reply: { text: 'twelve' } });
    const imported = await h.deputy.importSession(exported.session, { task: 'and 6+6?' });
    expect((await h.deputy.result(imported.workflowId)).output).toBe('twelve');
    expect(h.model.requests.find((r) => r.rule === 'imported')!.body.messages.map((m) => m.content)).toEqual([
      'You are the parent.',
      task,
      'ten',
      'and 6+6?',
    ]);
    await expect
      .poll(
        async () =>
          (await h.deputy.listSessions(`WorkflowId = '${imported.workflowId}'`)).map((s) => [
            s.sessionId,
            s.status,
            s.preset,
            s.parentId,
          ]),
        { timeout: 10_000 },
      )
      .toEqual([[imported.workflowId, 'completed', 'assistant', null]]);
  });
});
