/**
 * Per-tenant activation (R5.3): with tenants configured, a run is offered `delegate` only when its tenant's evidence
 * passes — a capability scenario admitted from a real failed run and a two-arm case, each re-checked against itself —
 * and a tenant whose evidence is edited to fail loses it on reload. `DeputyTenant` is searchable on its runs.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigStore } from '../src/config/store.js';
import { checkEvidence, describeTenantDelegation, tenantDelegation } from '../src/config/tenant-evidence.js';
import { offeredTools, userSays } from '../src/testing/scripted-model.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';
import { capability, evidenceDir, TWO_ARM, twoArm } from './support/evidence.js';

const { dir, write } = evidenceDir();
const CAPABILITY = write('capability.json', capability());
/** Its runs edited so the delegating arm no longer wins, its verdict left saying it helps. */
const TAMPERED = write(
  'tampered.json',
  capability({ arms: { ...twoArm.arms, delegating: { ...twoArm.arms.delegating, meanScore: 0.25 } } }),
);

const UNHELPFUL = join(PROJECT_ROOT, 'evidence', 'single-lookup.json');

const base = delegationConfig();
const config = {
  ...base,
  tenants: {
    acme: { evidence: [CAPABILITY, TWO_ARM], admissionSweepSeconds: 30 },
    beta: { evidence: [TWO_ARM], admissionSweepSeconds: 30 },
    gamma: { evidence: [TAMPERED, TWO_ARM], admissionSweepSeconds: 30 },
    // Honest evidence that delegation does not help its work (the shipped single look-up case).
    epsilon: { evidence: [CAPABILITY, UNHELPFUL], admissionSweepSeconds: 30 },
  },
};
const store = new ConfigStore(config);
const h = useHarness({ config: store, tools: DELEGATION_TOOLS });

/** Starts a run for `tenant` and returns the tools its model was offered. */
async function offeredTo(tenant: string | undefined, task: string) {
  h.model.add({ name: task, when: userSays(task), reply: { text: 'ok' } });
  const id = h.id('tenant');
  await h.deputy.startRun({ task, scopes: PARENT_SCOPES, ...(tenant && { tenant }) }, { workflowId: id });
  await h.deputy.result(id);
  return { id, tools: offeredTools(h.model.requests.find((r) => r.rule === task)!) };
}

describe('R5.3 per-tenant activation', () => {
  it('R5.3 only a tenant whose capability and two-arm evidence pass is offered delegate; runs carry DeputyTenant', async () => {
    const acme = await offeredTo('acme', 'tenant acme: anything');
    expect(acme.tools).toContain('delegate');
    for (const [tenant, task] of [
      ['beta', 'tenant beta: only two-arm evidence'],
      ['gamma', 'tenant gamma: tampered capability evidence'],
      ['epsilon', 'tenant epsilon: honest evidence that delegation does not help'],
      ['delta', 'tenant delta: not configured'],
      [undefined, 'no tenant at all'],
    ] as const) {
      expect((await offeredTo(tenant, task)).tools, String(tenant)).not.toContain('delegate');
    }
    expect((await h.client.workflow.getHandle(acme.id).describe()).searchAttributes.DeputyTenant).toEqual(['acme']);

    // A child of an activated tenant's run is listed under the same tenant.
    h.model.add(
      {
        when: userSays('tenant acme: delegate'),
        reply: delegateReply({ briefs: [{ task_name: 'kid', message: 'tenant kid' }] }),
      },
      { when: userSays('tenant kid'), reply: { text: 'kid ok' } },
    );
    h.model.add({
      when: (r) => userSays('tenant acme: delegate')(r) && r.body.messages.at(-1)?.role === 'tool',
      reply: { text: 'done' },
    });
    const parent = h.id('tenant-parent');
    await h.deputy.startRun(
      { task: 'tenant acme: delegate', scopes: PARENT_SCOPES, tenant: 'acme' },
      { workflowId: parent },
    );
    expect((await h.deputy.result(parent)).status).toBe('completed');
    const kid = await h.client.workflow.getHandle(`${parent}/kid-1`).describe();
    expect(kid.searchAttributes.DeputyTenant).toEqual(['acme']);
  });

  it('R5.3 a tenant whose evidence is edited to fail is deactivated on reload', async () => {
    expect((await offeredTo('acme', 'tenant acme: before the edit')).tools).toContain('delegate');
    copyFileSync(TAMPERED, CAPABILITY);
    store.set({ ...config }); // what a SIGHUP or a change to the config file does
    expect((await offeredTo('acme', 'tenant acme: after the edit')).tools).not.toContain('delegate');
    writeFileSync(CAPABILITY, JSON.stringify(capability())); // leave it as the other test expects
    store.set({ ...config });
  });

  it('R5.3 each evidence file is checked against itself, and the worker says why a tenant is not activated', () => {
    expect(checkEvidence(TAMPERED, PROJECT_ROOT)).toMatchObject({
      passes: false,
      reason: "its delegating arm's means are not those of its runs",
    });
    expect(checkEvidence(write('completed.json', capability({}, 'completed')), PROJECT_ROOT)).toMatchObject({
      passes: false,
      reason: 'admitted from run-7, which completed: a capability scenario comes from a failed run',
    });
    const unhelpful = UNHELPFUL;
    expect(checkEvidence(unhelpful, PROJECT_ROOT)).toMatchObject({ passes: false, kind: 'two-arm' });
    // Evidence made from a scenario that has changed since does not count.
    const scenarioDir = mkdtempSync(join(tmpdir(), 'deputy-scenario-'));
    const copy = join(scenarioDir, 'scenarios', 'parallel-lookups.yaml');
    mkdirSync(join(scenarioDir, 'scenarios'));
    writeFileSync(copy, `${readFileSync(join(PROJECT_ROOT, twoArm.scenario.file), 'utf8')}# edited\n`);
    expect(checkEvidence(TWO_ARM, scenarioDir)).toMatchObject({
      passes: false,
      reason: 'scenarios/parallel-lookups.yaml changed since this evidence was made',
    });
    expect(describeTenantDelegation(tenantDelegation(config, PROJECT_ROOT))).toEqual([
      'tenant acme: activated',
      `  passes capability ${CAPABILITY}: delegation helps: 100% vs 50% with no added policy failure`,
      `  passes two-arm ${TWO_ARM}: delegation helps: 100% vs 50% with no added policy failure`,
      'tenant beta: NOT activated: no passing capability evidence (a scenario admitted from a real failed run)',
      `  passes two-arm ${TWO_ARM}: delegation helps: 100% vs 50% with no added policy failure`,
      'tenant gamma: NOT activated: no passing capability evidence (a scenario admitted from a real failed run)',
      `  fails  capability ${TAMPERED}: its delegating arm's means are not those of its runs`,
      `  passes two-arm ${TWO_ARM}: delegation helps: 100% vs 50% with no added policy failure`,
      'tenant epsilon: NOT activated: no passing two-arm evidence',
      `  passes capability ${CAPABILITY}: delegation helps: 100% vs 50% with no added policy failure`,
      `  fails  two-arm ${UNHELPFUL}: delegation does not help: 100% vs 100%, at 2.0× the cost`,
    ]);
    expect(
      tenantDelegation({ ...config, delegation: { ...config.delegation, enabled: false } }, PROJECT_ROOT)[0],
    ).toMatchObject({
      activated: false,
      reason: 'delegation is off (the master switch)',
    });
  });

  it('R5.3 deputy tenants prints each tenant’s state and evidence; deputy eval admit writes a scenario', () => {
    const configFile = join(dir, 'deputy.config.json');
    // Evidence names its scenario relative to where it is checked from: this directory has a copy of it.
    mkdirSync(join(dir, 'scenarios'), { recursive: true });
    copyFileSync(join(PROJECT_ROOT, twoArm.scenario.file), join(dir, twoArm.scenario.file));
    writeFileSync(
      configFile,
      JSON.stringify({
        delegation: { enabled: true },
        tenants: { acme: { evidence: [CAPABILITY, TWO_ARM] }, beta: { evidence: [TWO_ARM] } },
      }),
    );
    const cli = (...args: string[]) =>
      spawnSync(
        process.execPath,
        ['--import', import.meta.resolve('tsx'), join(PROJECT_ROOT, 'src/cli/main.ts'), ...args],
        {
          cwd: dir,
          env: { ...process.env, DEPUTY_CONFIG: configFile },
          encoding: 'utf8',
        },
      );
    const tenants = cli('tenants');
    expect(tenants.status).toBe(1); // not every tenant is activated
    expect(tenants.stdout).toContain('tenant acme: activated');
    expect(tenants.stdout).toContain('tenant beta: NOT activated: no passing capability evidence');
    const exported = join(dir, 'run-9.json');
    writeFileSync(
      exported,
      JSON.stringify({
        format: 'deputy.session',
        version: 1,
        sessionId: 'run-9',
        parentId: null,
        exportedAt: '2026-11-30T10:00:00.000Z',
        composition: {
          preset: { id: 'assistant', persona: '', tools: [], skills: {}, contextRendering: 'block' },
          revision: 'r',
          model: 'm',
        },
        events: [
          { type: 'message/user', at: '2026-11-30T10:00:00.000Z', content: 'Call me on +1 555 010 0199' },
          { type: 'run/ended', at: '2026-11-30T10:00:01.000Z', status: 'failed', output: null },
        ],
      }),
    );
    const admitted = cli('eval', 'admit', exported);
    expect(admitted.status, admitted.stderr).toBe(0);
    const text = readFileSync(join(dir, 'scenarios', 'admitted-run-9.yaml'), 'utf8');
    expect(text).toContain('task: Call me on [phone-number-1]');
    expect(text).not.toContain('555');
  });
});
