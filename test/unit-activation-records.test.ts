/**
 * R5.3 capability evidence against the runs it cites, as a lookup of Temporal's records answers for them (the lookup
 * on a real server is attacked in test/attacks/evidence.test.ts); the lines `deputy tenants` and the worker print;
 * evidence whose arms or verdict were written by hand.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/schema.js';
import type { Evidence } from '../src/config/evidence.js';
import {
  cachedTenantDelegation,
  checkEvidence,
  describeTenantDelegation,
  tenantDelegation,
  tenantDelegationLookup,
  type RecordedRun,
  type RunRecords,
} from '../src/config/tenant-evidence.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { delegationConfig } from './support/delegation.js';
import { capability, evidenceDir, failedRun, forTenant, recordsOf, TWO_ARM, twoArm } from './support/evidence.js';

const { dir, write } = evidenceDir();
const failedOf = failedRun;
/** Every evidence file written, for the records that back its runs. */
const written: Evidence[] = [twoArm];
const record = (name: string, evidence: Evidence) => (written.push(evidence), write(name, evidence));

/** Temporal's records as a table: the runs of every evidence file written so far, and `extra`. */
const records = (extra: Record<string, RecordedRun>) => recordsOf(written, extra);

/** Each tenant's own evidence (its runs its own): capability citing its run, and two-arm. */
function evidenceOf(tenant: string, cited: string): string[] {
  return [
    record(`capability-${tenant}.json`, forTenant(capability(dir, cited), tenant)),
    record(`two-arm-${tenant}.json`, forTenant(twoArm, tenant)),
  ];
}

function tenantsCiting(cited: Record<string, string>) {
  const tenants = Object.fromEntries(
    Object.entries(cited).map(([tenant, run]) => [tenant, { evidence: evidenceOf(tenant, run) }]),
  );
  return parseConfig({
    ...delegationConfig(),
    delegation: { ...delegationConfig().delegation, activation: 'evidence' },
    tenants,
  });
}

describe('R5.3 capability evidence counts only when the run it cites backs its tenant', () => {
  it('R5.3 a cited run that Temporal does not hold, that did not fail, or that is another tenant’s does not count', async () => {
    const config = tenantsCiting({
      acme: 'acme-run',
      ghost: 'never-run',
      happy: 'completed-run',
      thief: 'acme-run',
      orphan: 'tenantless-run',
    });
    const table = records({
      'acme-run': failedOf('acme'),
      'completed-run': { ...failedOf('happy'), failed: false, ended: 'completed' },
      'tenantless-run': failedOf(undefined),
    });
    const byTenant = new Map((await tenantDelegation(config, PROJECT_ROOT, table)).map((t) => [t.tenant, t]));
    expect(byTenant.get('acme')).toMatchObject({ activated: true, reason: 'evidence passes' });
    const reasonOf = (tenant: string) => byTenant.get(tenant)!.evidence[0]!.reason;
    expect(reasonOf('ghost')).toBe(
      "cites never-run, which Temporal's records do not hold (never run, or past the namespace's retention)",
    );
    expect(reasonOf('happy')).toBe(
      'cites completed-run, which ended completed: a capability scenario comes from a failed run',
    );
    expect(reasonOf('thief')).toBe('cites acme-run, a run of tenant acme, not of tenant thief');
    expect(reasonOf('orphan')).toBe('cites tenantless-run, a run of no tenant, not of tenant orphan');
    for (const tenant of ['ghost', 'happy', 'thief', 'orphan']) {
      expect(byTenant.get(tenant), tenant).toMatchObject({
        activated: false,
        reason: 'no passing capability evidence (a scenario admitted from a real failed run)',
      });
      expect(byTenant.get(tenant)!.evidence.map((e) => e.passes)).toEqual([false, true]);
    }
    // A run cited by two tenants is looked up once; so is every other.
    expect(table.asked.filter((id) => id === 'acme-run')).toHaveLength(1);
    expect(new Set(table.asked).size).toBe(table.asked.length);
    expect(table.asked).toEqual(expect.arrayContaining(['acme-run', 'completed-run', 'never-run', 'tenantless-run']));
  });

  it('R5.3 the default tenant is backed by a run of no tenant, and not by a tenant’s run', async () => {
    const evidence = (run: string) => [record(`default-${run}.json`, capability(dir, run)), TWO_ARM];
    const config = (run: string) =>
      parseConfig({
        ...delegationConfig(),
        delegation: { ...delegationConfig().delegation, activation: 'evidence', evidence: evidence(run) },
      });
    const table = records({ 'plain-run': failedOf(undefined), 'acme-run': failedOf('acme') });
    const [backed] = await tenantDelegation(config('plain-run'), PROJECT_ROOT, table);
    expect(backed).toMatchObject({ tenant: '(default)', activated: true, reason: 'evidence passes' });
    expect(describeTenantDelegation([backed!])[0]).toBe(
      "delegation: offered to every run: the default tenant's evidence passes",
    );
    const [stolen] = await tenantDelegation(config('acme-run'), PROJECT_ROOT, table);
    expect(stolen!.activated).toBe(false);
    expect(stolen!.evidence[0]!.reason).toBe('cites acme-run, a run of tenant acme, not of the default tenant');
    const lookup = tenantDelegationLookup(PROJECT_ROOT, table);
    expect(await lookup(config('plain-run'), undefined)).toBe(true);
    expect(await lookup(config('acme-run'), 'acme')).toBe(false);
  });

  it('R5.3 a run only a tenant was activated for: its lookup answers for that tenant alone; off is off whatever the evidence', async () => {
    const config = tenantsCiting({ acme: 'acme-run', other: 'missing-run' });
    const table = records({ 'acme-run': failedOf('acme') });
    const lookup = tenantDelegationLookup(PROJECT_ROOT, table);
    expect(await lookup(config, 'acme')).toBe(true);
    expect(await lookup(config, 'other')).toBe(false);
    expect(await lookup(config, 'nobody')).toBe(false);
    // Without a tenant a run of a config that names tenants is nobody's.
    expect(await lookup(config, undefined)).toBe(false);
    const off = parseConfig({ ...config, delegation: { ...config.delegation, enabled: false } });
    expect(await lookup(off, 'acme')).toBe(false);
    const unconditionalOff = parseConfig({
      ...config,
      delegation: { ...config.delegation, enabled: false, activation: 'unconditional' },
    });
    expect(await lookup(unconditionalOff, 'acme')).toBe(false);
  });
});

describe('R5.3 what the worker and `deputy tenants` print', () => {
  it('R5.3 one line per tenant, then one per evidence file: activated, activated by the config, or not and why', async () => {
    const config = tenantsCiting({ acme: 'acme-run', other: 'missing-run' });
    const table = records({ 'acme-run': failedOf('acme') });
    const lines = describeTenantDelegation(await tenantDelegation(config, PROJECT_ROOT, table));
    expect(lines).toEqual([
      'tenant acme: activated',
      `  passes capability ${dir}/capability-acme.json: delegation helps: 100% vs 50% with no added policy failure`,
      `  passes two-arm ${dir}/two-arm-acme.json: delegation helps: 100% vs 50% with no added policy failure`,
      'tenant other: NOT activated: no passing capability evidence (a scenario admitted from a real failed run)',
      `  fails  capability ${dir}/capability-other.json: cites missing-run, which Temporal's records do not hold (never run, or past the namespace's retention)`,
      `  passes two-arm ${dir}/two-arm-other.json: delegation helps: 100% vs 50% with no added policy failure`,
    ]);
    const unconditional = parseConfig({ ...config, delegation: { ...config.delegation, activation: 'unconditional' } });
    expect(describeTenantDelegation(await tenantDelegation(unconditional, PROJECT_ROOT, table))[0]).toBe(
      'tenant acme: activated: activation is unconditional (the config says so): the flag alone decides, without evidence — a departure from the design (docs/activation.md)',
    );
    const off = parseConfig({
      ...delegationConfig(),
      delegation: { ...delegationConfig().delegation, enabled: false },
    });
    expect(describeTenantDelegation(await tenantDelegation(off, PROJECT_ROOT))).toEqual([
      'delegation: off (the master switch)',
    ]);
    const unreadable = describeTenantDelegation([
      {
        tenant: 'x',
        activated: false,
        reason: 'r',
        evidence: [{ file: 'f.json', kind: null, passes: false, reason: 'cannot read' }],
      },
    ]);
    expect(unreadable).toEqual(['tenant x: NOT activated: r', '  fails  ? f.json: cannot read']);
  });

  it('R5.3 evidence is read once per configuration; a read that failed is tried again', async () => {
    const config = tenantsCiting({ acme: 'flaky-run' });
    const table = records({ 'flaky-run': failedOf('acme') });
    let calls = 0;
    const flaky: RunRecords = async (id) => {
      calls += 1;
      if (calls === 1) throw new Error('server away');
      return table(id);
    };
    await expect(cachedTenantDelegation(config, PROJECT_ROOT, flaky)).rejects.toThrow('server away');
    await new Promise((resolve) => setTimeout(resolve, 0));
    const second = await cachedTenantDelegation(config, PROJECT_ROOT, flaky);
    expect(second.get('acme')).toMatchObject({ activated: true });
    expect(await cachedTenantDelegation(config, PROJECT_ROOT, flaky)).toBe(second);
    // The first read asked once and failed; the second asked once for each run its evidence names.
    expect(calls).toBe(1 + new Set(table.asked).size);
  });
});

describe('R5.3 evidence whose figures were written by hand', () => {
  const arms = twoArm.arms;
  it.each([
    ['a mean score', { delegating: { ...arms.delegating, meanScore: 0.99 } }, "its delegating arm's means"],
    ['a policy failure count', { single: { ...arms.single, policyFailures: 3 } }, "its single arm's means"],
    [
      'an arm with no runs',
      { single: { ...arms.single, runs: [] as typeof arms.single.runs, meanScore: 0, policyFailures: 0 } },
      'single arm',
    ],
  ] as const)('R5.3 refused: %s that its runs do not give', async (_, changed, says) => {
    const file = write(`hand-${says.length}.json`, { ...twoArm, arms: { ...arms, ...changed } });
    expect(await checkEvidence(file, PROJECT_ROOT, { tenant: undefined, records: recordsOf([twoArm]) })).toMatchObject({
      passes: false,
      reason: expect.stringContaining(says) as string,
    });
  });

  it('R5.3 refused: a verdict its runs do not give, and arms swapped to give the verdict it wants', async () => {
    const context = { tenant: undefined, records: recordsOf([twoArm]) };
    const flipped = write('flipped.json', { ...twoArm, verdict: { ...twoArm.verdict, helps: false } });
    expect((await checkEvidence(flipped, PROJECT_ROOT, context)).reason).toBe(
      'its verdict says does not help, its runs say otherwise',
    );
    const swapped = write('swapped.json', {
      ...twoArm,
      arms: { single: twoArm.arms.delegating, delegating: twoArm.arms.single },
    });
    expect((await checkEvidence(swapped, PROJECT_ROOT, context)).reason).toBe(
      `single run ${twoArm.arms.delegating.runs[0]!.workflowId}: the single-agent arm's run delegated (3 run(s) below it)`,
    );
  });
});
