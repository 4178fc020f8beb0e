/**
 * Per-tenant activation (R5.3): with tenants configured, a run is offered `delegate` only when its tenant's evidence
 * passes — a capability scenario admitted from a real failed run of that tenant (looked up in Temporal's records) and
 * a two-arm case, each re-checked against itself —
 * and a tenant whose evidence is edited to fail loses it on reload. `DeputyTenant` is searchable on its runs.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ConfigStore } from '../src/config/store.js';
import {
  checkEvidence,
  describeTenantDelegation,
  temporalRunRecords,
  tenantDelegation,
} from '../src/config/tenant-evidence.js';
import { offeredTools, userSays } from '../src/testing/script.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { delegateReply, delegationConfig, DELEGATION_TOOLS, PARENT_SCOPES } from './support/delegation.js';
import { useHarness } from './support/harness.js';
import { capability, evidenceDir, TWO_ARM, twoArm } from './support/evidence.js';

const { dir, write } = evidenceDir();
/** The runs capability evidence cites, by their ids: each is run (or not) in `beforeAll`. */
const cited = {
  acmeFailed: `tenant-acme-failed-${randomUUID().slice(0, 8)}`,
  iotaCompleted: `tenant-iota-completed-${randomUUID().slice(0, 8)}`,
  neverRun: `tenant-never-run-${randomUUID().slice(0, 8)}`,
};
const CAPABILITY = write('capability.json', capability(dir, cited.acmeFailed));
/** Its runs edited so the delegating arm no longer wins, its verdict left saying it helps. */
const TAMPERED = write(
  'tampered.json',
  capability(dir, cited.acmeFailed, {
    arms: { ...twoArm.arms, delegating: { ...twoArm.arms.delegating, meanScore: 0.25 } },
  }),
);
const COMPLETED = write('completed.json', capability(dir, cited.iotaCompleted));
const NEVER_RUN = write('never-run.json', capability(dir, cited.neverRun));

const UNHELPFUL = join(PROJECT_ROOT, 'evidence', 'single-lookup.json');

const base = delegationConfig();
const config = {
  ...base,
  delegation: { ...base.delegation, activation: 'evidence' as const },
  tenants: {
    acme: { evidence: [CAPABILITY, TWO_ARM], admissionSweepSeconds: 30 },
    beta: { evidence: [TWO_ARM], admissionSweepSeconds: 30 },
    gamma: { evidence: [TAMPERED, TWO_ARM], admissionSweepSeconds: 30 },
    // Honest evidence that delegation does not help its work (the shipped single look-up case), and acme's run.
    epsilon: { evidence: [CAPABILITY, UNHELPFUL], admissionSweepSeconds: 30 },
    // Acme's failed run cited as another tenant's; a run that completed; a run Temporal never saw.
    theta: { evidence: [CAPABILITY, TWO_ARM], admissionSweepSeconds: 30 },
    iota: { evidence: [COMPLETED, TWO_ARM], admissionSweepSeconds: 30 },
    kappa: { evidence: [NEVER_RUN, TWO_ARM], admissionSweepSeconds: 30 },
  },
};
const store = new ConfigStore(config);
const h = useHarness({ config: store, tools: DELEGATION_TOOLS });

beforeAll(async () => {
  // A run of acme that runs out of turns (it failed its task), and a run of iota that completes.
  h.model.add(
    {
      when: userSays('acme: a run that fails'),
      reply: { toolCalls: [{ name: 'calculate', arguments: { expression: '1+1' } }] },
    },
    { when: userSays('iota: a run that completes'), reply: { text: 'done' } },
  );
  await h.deputy.startRun(
    { task: 'acme: a run that fails', tenant: 'acme', limits: { maxTurns: 1 } },
    { workflowId: cited.acmeFailed },
  );
  await h.deputy.startRun({ task: 'iota: a run that completes', tenant: 'iota' }, { workflowId: cited.iotaCompleted });
  expect((await h.deputy.result(cited.acmeFailed)).status).toBe('limit_reached');
  expect((await h.deputy.result(cited.iotaCompleted)).status).toBe('completed');
  store.set({ ...config }); // what a reload does: the evidence is read again, now that the cited runs have ended
});

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
    expect((await h.deputy.getState(acme.id)).activation).toBe('evidence');
    for (const [tenant, task] of [
      ['beta', 'tenant beta: only two-arm evidence'],
      ['gamma', 'tenant gamma: tampered capability evidence'],
      ['epsilon', 'tenant epsilon: honest evidence that delegation does not help'],
      ['theta', 'tenant theta: citing a run of acme'],
      ['iota', 'tenant iota: citing a run that completed'],
      ['kappa', 'tenant kappa: citing a run that never ran'],
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
    const before = readFileSync(CAPABILITY, 'utf8');
    copyFileSync(TAMPERED, CAPABILITY);
    store.set({ ...config }); // what a SIGHUP or a change to the config file does
    expect((await offeredTo('acme', 'tenant acme: after the edit')).tools).not.toContain('delegate');
    writeFileSync(CAPABILITY, before); // leave it as the other tests expect
    store.set({ ...config });
  });

  it('R5.3 each evidence file is checked against itself and its cited run in Temporal, and the worker says why', async () => {
    expect(checkEvidence(TAMPERED, PROJECT_ROOT)).toMatchObject({
      passes: false,
      reason: "its delegating arm's means are not those of its runs",
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
    const helps = 'delegation helps: 100% vs 50% with no added policy failure';
    const noCapability = 'no passing capability evidence (a scenario admitted from a real failed run)';
    const records = temporalRunRecords(h.client);
    const looked: string[] = [];
    const counted = (id: string) => (looked.push(id), records(id));
    const lines = describeTenantDelegation(await tenantDelegation(config, PROJECT_ROOT, counted));
    // Three tenants cite acme's failed run: Temporal is asked about it once.
    expect(looked.filter((id) => id === cited.acmeFailed)).toHaveLength(1);
    expect(new Set(looked).size).toBe(looked.length);
    expect(lines).toEqual([
      'tenant acme: activated',
      `  passes capability ${CAPABILITY}: ${helps}`,
      `  passes two-arm ${TWO_ARM}: ${helps}`,
      `tenant beta: NOT activated: ${noCapability}`,
      `  passes two-arm ${TWO_ARM}: ${helps}`,
      `tenant gamma: NOT activated: ${noCapability}`,
      `  fails  capability ${TAMPERED}: its delegating arm's means are not those of its runs`,
      `  passes two-arm ${TWO_ARM}: ${helps}`,
      `tenant epsilon: NOT activated: ${noCapability}; no passing two-arm evidence`,
      `  fails  capability ${CAPABILITY}: cites ${cited.acmeFailed}, a run of tenant acme, not of tenant epsilon`,
      `  fails  two-arm ${UNHELPFUL}: delegation does not help: 100% vs 100%, at 2.0× the cost`,
      `tenant theta: NOT activated: ${noCapability}`,
      `  fails  capability ${CAPABILITY}: cites ${cited.acmeFailed}, a run of tenant acme, not of tenant theta`,
      `  passes two-arm ${TWO_ARM}: ${helps}`,
      `tenant iota: NOT activated: ${noCapability}`,
      `  fails  capability ${COMPLETED}: cites ${cited.iotaCompleted}, which ended completed: a capability scenario comes from a failed run`,
      `  passes two-arm ${TWO_ARM}: ${helps}`,
      `tenant kappa: NOT activated: ${noCapability}`,
      `  fails  capability ${NEVER_RUN}: cites ${cited.neverRun}, which Temporal's records do not hold (never run, or past the namespace's retention)`,
      `  passes two-arm ${TWO_ARM}: ${helps}`,
    ]);
    expect(
      (await tenantDelegation({ ...config, delegation: { ...config.delegation, enabled: false } }, PROJECT_ROOT))[0],
    ).toMatchObject({
      activated: false,
      reason: 'delegation is off (the master switch)',
    });
  });

  it('R5.3 with no tenants, the flag alone offers nothing unless activation is unconditional, which state shows', async () => {
    const { tenants: _tenants, ...untenanted } = config;
    try {
      store.set({ ...untenanted, delegation: { ...config.delegation, activation: 'evidence' } });
      const withoutEvidence = await offeredTo(undefined, 'no tenants, no evidence');
      expect(withoutEvidence.tools).not.toContain('delegate');
      expect((await h.deputy.getState(withoutEvidence.id)).activation).toBeNull();
      store.set({ ...untenanted, delegation: { ...config.delegation, activation: 'unconditional' } });
      const unconditional = await offeredTo(undefined, 'no tenants, unconditional');
      expect(unconditional.tools).toContain('delegate');
      expect((await h.deputy.getState(unconditional.id)).activation).toBe('unconditional');
    } finally {
      store.set({ ...config });
    }
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
          env: { ...process.env, DEPUTY_CONFIG: configFile, TEMPORAL_ADDRESS: inject('temporalAddress') },
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
