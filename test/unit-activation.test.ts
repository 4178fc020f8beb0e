/**
 * Per-tenant activation (R5.3) as rules over evidence files: each file is checked against itself and its scenario,
 * and a tenant is activated only with a passing capability case and a passing two-arm case. End to end (a tenant's
 * runs offered `delegate` or not) in tenants.test.ts.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/load.js';
import {
  tenantDelegationLookup,
  checkEvidence,
  describeTenantDelegation,
  tenantDelegation,
} from '../src/config/tenant-evidence.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { capability, evidenceDir, TWO_ARM, twoArm } from './support/evidence.js';
import { delegationConfig } from './support/delegation.js';

const { write } = evidenceDir();
const CAPABILITY = write('capability.json', capability());
const single = twoArm.arms.single;
const delegating = twoArm.arms.delegating;

describe('R5.3 each evidence file is checked against itself', () => {
  it('R5.3 the shipped two-arm evidence and capability evidence made from it pass, each of its kind', () => {
    expect(checkEvidence(TWO_ARM, PROJECT_ROOT)).toEqual({
      file: TWO_ARM,
      kind: 'two-arm',
      passes: true,
      reason: 'delegation helps: 100% vs 50% with no added policy failure',
    });
    expect(checkEvidence(CAPABILITY, PROJECT_ROOT)).toMatchObject({ kind: 'capability', passes: true });
    // A relative path is read from the config's directory.
    expect(checkEvidence('evidence/parallel-lookups.json', PROJECT_ROOT)).toMatchObject({ passes: true });
  });

  it.each([
    [
      'a file that cannot be read',
      () => join(tmpdir(), 'deputy-no-such-evidence.json'),
      { kind: null, reason: /^cannot read: ENOENT/ },
    ],
    [
      'a file that is not evidence',
      () => write('not-evidence.json', { hello: 1 } as never),
      { kind: null, reason: /^not an evidence file: / },
    ],
    [
      'a scenario that is gone',
      () => write('gone.json', { ...twoArm, scenario: { ...twoArm.scenario, file: 'scenarios/gone.yaml' } }),
      {
        kind: 'two-arm',
        reason: 'scenarios/gone.yaml is missing: evidence is checked against the scenario it was made from',
      },
    ],
    [
      'a run whose score is not what its misses give',
      () =>
        write('score.json', {
          ...twoArm,
          arms: {
            ...twoArm.arms,
            single: { ...single, runs: [{ ...single.runs[0]!, score: 0.75 }, ...single.runs.slice(1)] },
          },
        }),
      { reason: /^single run .*: its score is not what its misses give$/ },
    ],
    [
      'a run whose output lacks a fact it does not list as missing',
      () =>
        write('unlisted.json', {
          ...twoArm,
          arms: {
            ...twoArm.arms,
            delegating: {
              ...delegating,
              runs: [{ ...delegating.runs[0]!, output: 'nothing' }, ...delegating.runs.slice(1)],
            },
          },
        }),
      { reason: /^delegating run .*: its output lacks "[^"]+"(, "[^"]+")*, yet it is not listed as missing$/ },
    ],
    [
      'an arm with no runs',
      () => write('empty.json', { ...twoArm, arms: { ...twoArm.arms, single: { ...single, runs: [] } } }),
      { reason: "its single arm's means are not those of its runs" },
    ],
    [
      'a verdict its runs do not give',
      () => write('verdict.json', { ...twoArm, verdict: { ...twoArm.verdict, helps: false } }),
      { reason: 'its verdict says does not help, its runs say otherwise' },
    ],
    [
      'offline evidence without a determinism check',
      () => write('determinism.json', { ...twoArm, model: 'offline-script', determinism: undefined }),
      { reason: 'offline evidence must show its script is deterministic (an arm run twice, the same run both times)' },
    ],
    [
      'capability evidence that does not say where it was admitted from',
      () => write('origin.json', capability({ admittedFrom: undefined })),
      { kind: 'capability', reason: 'a capability scenario must say which real run it was admitted from' },
    ],
    [
      'capability evidence admitted from a run that completed',
      () => write('completed.json', capability({}, 'completed')),
      { reason: 'admitted from run-7, which completed: a capability scenario comes from a failed run' },
    ],
  ] as const)('R5.3 refused: %s', (_, file, expected) => {
    const check = checkEvidence(file(), PROJECT_ROOT);
    expect(check.passes).toBe(false);
    if ('kind' in expected) expect(check.kind).toBe(expected.kind);
    if (typeof expected.reason === 'string') expect(check.reason).toBe(expected.reason);
    else expect(check.reason).toMatch(expected.reason);
  });

  it('R5.3 a scenario edited since, or no longer a scenario, fails the evidence made from it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'deputy-scenario-'));
    mkdirSync(join(dir, 'scenarios'));
    const copy = join(dir, twoArm.scenario.file);
    cpSync(join(PROJECT_ROOT, twoArm.scenario.file), copy);
    expect(checkEvidence(TWO_ARM, dir)).toMatchObject({ passes: true });
    writeFileSync(copy, `${readFileSync(copy, 'utf8')}# edited\n`);
    expect(checkEvidence(TWO_ARM, dir)).toMatchObject({
      passes: false,
      reason: `${twoArm.scenario.file} changed since this evidence was made`,
    });
  });
});

describe('R5.3 a tenant is activated on passing capability and two-arm evidence', () => {
  const UNHELPFUL = join(PROJECT_ROOT, 'evidence', 'single-lookup.json');
  const config = parseConfig({
    ...delegationConfig(),
    tenants: {
      both: { evidence: [CAPABILITY, TWO_ARM] },
      'two-arm-only': { evidence: [TWO_ARM] },
      'capability-only': { evidence: [CAPABILITY, UNHELPFUL] },
    },
  });

  it('R5.3 only the tenant with both is activated; each other says what it lacks', () => {
    expect(tenantDelegation(config, PROJECT_ROOT).map((a) => [a.tenant, a.activated, a.reason])).toEqual([
      ['both', true, 'evidence passes'],
      ['two-arm-only', false, 'no passing capability evidence (a scenario admitted from a real failed run)'],
      ['capability-only', false, 'no passing two-arm evidence'],
    ]);
    const off = parseConfig({ ...config, delegation: { ...config.delegation, enabled: false } });
    expect(tenantDelegation(off, PROJECT_ROOT)[0]).toMatchObject({
      activated: false,
      reason: 'delegation is off (the master switch)',
    });
    expect(describeTenantDelegation(tenantDelegation(config, PROJECT_ROOT))[0]).toBe('tenant both: activated');
  });

  it('R5.3 the lookup: without tenants the flag decides for every run; with tenants only an activated one, by name', () => {
    const lookup = tenantDelegationLookup(PROJECT_ROOT);
    expect(lookup(config, 'both')).toBe(true);
    expect(lookup(config, 'two-arm-only')).toBe(false);
    expect(lookup(config, 'nobody')).toBe(false);
    expect(lookup(config, undefined)).toBe(false);
    const noTenants = parseConfig({ ...delegationConfig() });
    expect(lookup(noTenants, undefined)).toBe(true);
    expect(lookup(noTenants, 'anyone')).toBe(true);
  });
});
