/**
 * Per-tenant activation (R5.3): with tenants configured, a run is offered `delegate` only when its tenant's evidence
 * passes — a capability scenario admitted from a real failed run of that tenant (looked up in Temporal's records) and
 * a two-arm case, each re-checked against itself —
 * and a tenant whose evidence is edited to fail loses it on reload. `DeputyTenant` is searchable on its runs.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { ConfigStore } from '../src/config/store.js';
import type { Evidence } from '../src/config/evidence.js';
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
import {
  capabilityScenario,
  evidenceDir,
  QUICK_SCENARIO,
  recordEvidence,
  UNHELPFUL_SCENARIO,
  writeEvidence,
} from './support/evidence.js';

const { dir } = evidenceDir();
/** The runs capability evidence cites, by their ids: each is run (or not) in `beforeAll`. */
const cited = {
  acmeFailed: `tenant-acme-failed-${randomUUID().slice(0, 8)}`,
  iotaCompleted: `tenant-iota-completed-${randomUUID().slice(0, 8)}`,
  neverRun: `tenant-never-run-${randomUUID().slice(0, 8)}`,
};
/** Evidence files, written in `beforeAll` once their runs are in Temporal's records. */
const CAPABILITY = join(dir, 'capability.json');
const TWO_ARM = join(dir, 'two-arm.json');
const TWO_ARM_BETA = join(dir, 'two-arm-beta.json');
/** Acme's capability evidence, a delegating run's misses edited so it scores less than Temporal's records give. */
const TAMPERED = join(dir, 'tampered.json');
const COMPLETED = join(dir, 'completed.json');
const NEVER_RUN = join(dir, 'never-run.json');
const UNHELPFUL = join(dir, 'unhelpful.json');
/** The evidence recorded, by file. */
const made: Record<string, Evidence> = {};

const base = delegationConfig();
const config = {
  ...base,
  delegation: { ...base.delegation, activation: 'evidence' as const },
  tenants: {
    acme: { evidence: [CAPABILITY, TWO_ARM], admissionSweepSeconds: 30 },
    beta: { evidence: [TWO_ARM_BETA], admissionSweepSeconds: 30 },
    gamma: { evidence: [TAMPERED, TWO_ARM], admissionSweepSeconds: 30 },
    // Honest evidence that delegation does not help its work (the shipped single look-up case), and acme's evidence.
    epsilon: { evidence: [CAPABILITY, UNHELPFUL], admissionSweepSeconds: 30 },
    // Acme's evidence cited as another tenant's; evidence citing a run that completed, and a run Temporal never saw.
    theta: { evidence: [CAPABILITY, TWO_ARM], admissionSweepSeconds: 30 },
    iota: { evidence: [COMPLETED], admissionSweepSeconds: 30 },
    kappa: { evidence: [NEVER_RUN], admissionSweepSeconds: 30 },
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
  // Each tenant's evidence, its runs that tenant's, made as `npm run eval` makes it.
  const recorded: [string, string, string | undefined][] = [
    [CAPABILITY, capabilityScenario(dir, cited.acmeFailed), 'acme'],
    [TWO_ARM, QUICK_SCENARIO, 'acme'],
    [TWO_ARM_BETA, QUICK_SCENARIO, 'beta'],
    [COMPLETED, capabilityScenario(dir, cited.iotaCompleted), 'iota'],
    [NEVER_RUN, capabilityScenario(dir, cited.neverRun), 'kappa'],
    [UNHELPFUL, UNHELPFUL_SCENARIO, 'epsilon'],
  ];
  await Promise.all(
    recorded.map(async ([file, scenario, tenant]) => {
      made[file] = await recordEvidence(h, scenario, tenant);
      writeEvidence(dir, basename(file), made[file]);
    }),
  );
  const tampered = structuredClone(made[CAPABILITY]!);
  tampered.arms.delegating.runs[0]!.missing = ['tool search_notes'];
  writeEvidence(dir, basename(TAMPERED), tampered);
  store.set({ ...config }); // what a reload does: the evidence is read again, now that its runs have ended
}, 180_000);

/** The first run of an arm of the evidence recorded into `file`. */
const runOf = (file: string, arm: 'single' | 'delegating') => made[file]!.arms[arm].runs[0]!.workflowId;

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

  it('R5.3 each evidence file is checked against its scenario and every run it names in Temporal, and the worker says why', async () => {
    const records = temporalRunRecords(h.client);
    const asAcme = { tenant: 'acme', records };
    expect(await checkEvidence(TAMPERED, PROJECT_ROOT, asAcme)).toMatchObject({
      passes: false,
      reason: `delegating run ${runOf(CAPABILITY, 'delegating')}: the file says missing ["tool search_notes"], Temporal's records give []`,
    });
    expect(await checkEvidence(UNHELPFUL, PROJECT_ROOT, { tenant: 'epsilon', records })).toMatchObject({
      passes: false,
      kind: 'two-arm',
    });
    // Evidence made from a scenario that has changed since does not count.
    const scenarioDir = mkdtempSync(join(tmpdir(), 'deputy-scenario-'));
    const scenarioFile = made[TWO_ARM]!.scenario.file;
    mkdirSync(join(scenarioDir, dirname(scenarioFile)), { recursive: true });
    writeFileSync(join(scenarioDir, scenarioFile), `${readFileSync(QUICK_SCENARIO, 'utf8')}# edited\n`);
    expect(await checkEvidence(TWO_ARM, scenarioDir, asAcme)).toMatchObject({
      passes: false,
      reason: `${scenarioFile} changed since this evidence was made`,
    });
    const helps = 'delegation helps: 100% vs 67% with no added policy failure';
    const noCapability = 'no passing capability evidence (a scenario admitted from a real failed run)';
    const noTwoArm = 'no passing two-arm evidence';
    const looked: string[] = [];
    const counted = (id: string) => (looked.push(id), records(id));
    const lines = describeTenantDelegation(await tenantDelegation(config, PROJECT_ROOT, counted));
    // Runs named by several files and tenants (acme's evidence is named by four tenants): Temporal is asked once each.
    expect(looked.filter((id) => id === cited.acmeFailed)).toHaveLength(1);
    expect(new Set(looked).size).toBe(looked.length);
    const notOf = (file: string, tenant: string) =>
      `single run ${runOf(file, 'single')}: a run of tenant acme, not of tenant ${tenant}`;
    expect(lines).toEqual([
      'tenant acme: activated',
      `  passes capability ${CAPABILITY}: ${helps}`,
      `  passes two-arm ${TWO_ARM}: ${helps}`,
      `tenant beta: NOT activated: ${noCapability}`,
      `  passes two-arm ${TWO_ARM_BETA}: ${helps}`,
      `tenant gamma: NOT activated: ${noCapability}; ${noTwoArm}`,
      `  fails  capability ${TAMPERED}: ${notOf(CAPABILITY, 'gamma')}`,
      `  fails  two-arm ${TWO_ARM}: ${notOf(TWO_ARM, 'gamma')}`,
      `tenant epsilon: NOT activated: ${noCapability}; ${noTwoArm}`,
      `  fails  capability ${CAPABILITY}: ${notOf(CAPABILITY, 'epsilon')}`,
      `  fails  two-arm ${UNHELPFUL}: ${made[UNHELPFUL]!.verdict.summary}`,
      `tenant theta: NOT activated: ${noCapability}; ${noTwoArm}`,
      `  fails  capability ${CAPABILITY}: ${notOf(CAPABILITY, 'theta')}`,
      `  fails  two-arm ${TWO_ARM}: ${notOf(TWO_ARM, 'theta')}`,
      `tenant iota: NOT activated: ${noCapability}; ${noTwoArm}`,
      `  fails  capability ${COMPLETED}: cites ${cited.iotaCompleted}, which ended completed: a capability scenario comes from a failed run`,
      `tenant kappa: NOT activated: ${noCapability}; ${noTwoArm}`,
      `  fails  capability ${NEVER_RUN}: cites ${cited.neverRun}, which Temporal's records do not hold (never run, or past the namespace's retention)`,
    ]);
    expect(made[UNHELPFUL]!.verdict.summary).toMatch(/^delegation does not help: 100% vs 100%, at \d+\.\d× the cost$/);
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
    const scenarioFile = made[TWO_ARM]!.scenario.file;
    mkdirSync(join(dir, dirname(scenarioFile)), { recursive: true });
    copyFileSync(QUICK_SCENARIO, join(dir, scenarioFile));
    writeFileSync(
      configFile,
      JSON.stringify({
        delegation: { enabled: true },
        tenants: { acme: { evidence: [CAPABILITY, TWO_ARM] }, beta: { evidence: [TWO_ARM_BETA] } },
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
