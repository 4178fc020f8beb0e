/**
 * R4.1 R4.2 presets through the shipped `deputy.config.yaml`: a delegating `assistant` gives one brief a role and
 * another none, each with or without `allowed_tools`; each child's persona and offered tools are what its preset and
 * its grant say, read from the requests its model was sent. And a grant narrower than the scopes it needs: a role
 * child's preset has two tools of one scope and the brief grants one, so only the grant keeps the other out.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { builtinTools } from '../activities/builtin-tools.js';
import { loadConfig, readEnv } from '../src/config/load.js';
import type { DeputyConfig } from '../src/config/schema.js';
import { defineTool } from '../src/contract/tools.js';
import { forTask, offeredTools, userSays, type RecordedRequest } from '../src/testing/script.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { delegateReply } from './support/delegation.js';
import { useHarness } from './support/harness.js';

/** The shipped config with delegation on; activated unconditionally here, as this is about composition, not activation. */
function shipped(): DeputyConfig {
  const config = loadConfig({ ...readEnv({}), configPath: join(PROJECT_ROOT, 'deputy.config.yaml') });
  return { ...config, delegation: { ...config.delegation, enabled: true, activation: 'unconditional' } };
}

/** A second tool of the notes scope, beside `search_notes`. */
const readNote = defineTool({
  name: 'read_note',
  description: 'Read one note whole, by its title.',
  parameters: z.strictObject({ title: z.string() }),
  scopes: ['tools.notes'],
  async execute() {
    return 'the note';
  },
});

const config = ((base) => ({
  ...base,
  presets: base.presets.map((p) => (p.id === 'researcher' ? { ...p, tools: [...p.tools, 'read_note'] } : p)),
}))(shipped());
const h = useHarness({ config, tools: [...builtinTools(), readNote] });
const persona = (id: string) => config.presets.find((p) => p.id === id)!.persona;
const systemOf = (r: RecordedRequest) => r.body.messages.find((m) => m.role === 'system')?.content ?? '';

describe('R4.1 R4.2 presets through the shipped config', () => {
  it('R4.1 R4.2 R2.7 each child’s persona and offered tools are its preset’s (chosen by role, or its parent’s), narrowed by its grant', async () => {
    const task = 'shipped presets: three children';
    const briefs = [
      { task_name: 'by-role', message: 'child by role: look it up', role: 'researcher' },
      { task_name: 'inherited', message: 'child inherited: look it up', allowed_tools: ['search_notes'] },
      {
        task_name: 'role-granted',
        message: 'child role granted: add',
        role: 'assistant',
        allowed_tools: ['calculate'],
      },
    ];
    h.model.add(
      { name: 'parent', when: forTask(task, 0), reply: delegateReply({ briefs }) },
      { name: 'parent done', when: forTask(task, 1), reply: { text: 'done' } },
      ...briefs.map((b) => ({ name: b.task_name, when: userSays(b.message), reply: { text: 'ok' } })),
    );
    const parentId = h.id('shipped');
    await h.deputy.startRun(
      { task, preset: 'assistant', scopes: ['tools.calc', 'tools.notes', 'run.delegate'] },
      { workflowId: parentId },
    );
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const first = (rule: string) => h.model.requests.find((r) => r.rule === rule)!;

    expect(systemOf(first('parent'))).toContain(persona('assistant'));
    expect(offeredTools(first('parent'))).toEqual([
      'calculate',
      'search_notes',
      'delegate',
      'interject',
      'followup',
      'wait',
    ]);
    // Chosen by role: the researcher's persona, and its tools that its parent has too (with no `allowed_tools`, a
    // child is granted its parent's tools: `read_note` is the researcher's, not the assistant's).
    expect(systemOf(first('by-role'))).toContain(persona('researcher'));
    expect(systemOf(first('by-role'))).not.toContain(persona('assistant'));
    expect(offeredTools(first('by-role'))).toEqual(['search_notes', 'ask_parent']);
    // No role: the parent's own preset, its tools narrowed to the grant.
    expect(systemOf(first('inherited'))).toContain(persona('assistant'));
    expect(offeredTools(first('inherited'))).toEqual(['search_notes', 'ask_parent']);
    // A role and a grant: the role's persona, the grant's tools.
    expect(systemOf(first('role-granted'))).toContain(persona('assistant'));
    expect(offeredTools(first('role-granted'))).toEqual(['calculate', 'ask_parent']);
  });

  it('R2.7 R4.2 a role child granted one of two tools of a scope is offered that one only: the grant, not the scope, keeps the other out', async () => {
    const task = 'shipped presets: a grant narrower than its scope';
    h.model.add(
      {
        name: 'grant parent',
        when: forTask(task, 0),
        reply: delegateReply({
          briefs: [
            {
              task_name: 'narrow',
              message: 'child narrow: look it up',
              role: 'researcher',
              allowed_tools: ['search_notes'],
            },
          ],
        }),
      },
      { name: 'grant parent done', when: forTask(task, 1), reply: { text: 'done' } },
      { name: 'narrow', when: userSays('child narrow: look it up'), reply: { text: 'ok' } },
    );
    const parentId = h.id('shipped-grant');
    await h.deputy.startRun({ task, scopes: ['tools.calc', 'tools.notes', 'run.delegate'] }, { workflowId: parentId });
    expect((await h.deputy.result(parentId)).status).toBe('completed');
    const child = h.model.requests.find((r) => r.rule === 'narrow')!;
    expect(systemOf(child)).toContain(persona('researcher'));
    // `read_note` is the researcher's and needs only `tools.notes`, which the child holds for `search_notes`.
    expect(offeredTools(child)).toEqual(['search_notes', 'ask_parent']);
  });
});
