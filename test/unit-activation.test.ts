/**
 * Per-tenant activation (R5.3) as rules over evidence files: each file is checked against itself and its scenario,
 * and a tenant is activated only with a passing capability case and a passing two-arm case. End to end (a tenant's
 * runs offered `delegate` or not) in tenants.test.ts.
 */
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../src/config/schema.js';
import {
  tenantDelegationLookup,
  checkEvidence,
  describeTenantDelegation,
  tenantDelegation,
} from '../src/config/tenant-evidence.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { capability, evidenceDir, failedRun, recordsOf, TWO_ARM, twoArm } from './support/evidence.js';
import { delegationConfig } from './support/delegation.js';

const { dir, write } = evidenceDir();
const CAPABILITY = write('capability.json', capability(dir, 'run-7'));
const single = twoArm.arms.single;
const delegating = twoArm.arms.delegating;
/** The records of the shipped evidence's runs, and of the failed run the capability evidence cites. */
const records = recordsOf([twoArm], { 'run-7': failedRun(undefined), 'differing-rerun': null });
const asDefault = { tenant: undefined, records };

describe('R5.3 each evidence file is checked against itself', () => {
  it('R5.3 the shipped two-arm evidence and capability evidence made from it pass against their records, each of its kind', async () => {
    expect(await checkEvidence(TWO_ARM, PROJECT_ROOT, asDefault)).toEqual({
      file: TWO_ARM,
      kind: 'two-arm',
      passes: true,
      reason: 'delegation helps: 100% vs 50% with no added policy failure',
    });
    // Capability evidence passes its own checks and names the run Temporal's records must still confirm.
    expect(await checkEvidence(CAPABILITY, PROJECT_ROOT, asDefault)).toMatchObject({
      kind: 'capability',
      passes: true,
      cites: 'run-7',
    });
    // A relative path is read from the config's directory.
    expect(await checkEvidence('evidence/parallel-lookups.json', PROJECT_ROOT, asDefault)).toMatchObject({
      passes: true,
    });
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
      { reason: /^single run .*: the file says score 0\.75, Temporal's records give 0\.\d+$/ },
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
      { reason: /^delegating run .*: the file says output "nothing", Temporal's records give "[^"]+"$/ },
    ],
    [
      'an arm with no runs',
      () => write('empty.json', { ...twoArm, arms: { ...twoArm.arms, single: { ...single, runs: [] } } }),
      { reason: 'its single arm names no run' },
    ],
    [
      'a verdict its runs do not give',
      () => write('verdict.json', { ...twoArm, verdict: { ...twoArm.verdict, helps: false } }),
      { reason: 'its verdict says does not help, its runs say otherwise' },
    ],
    [
      'a two-arm case without a determinism check, offline',
      () => write('determinism.json', { ...twoArm, model: 'offline-script', determinism: undefined }),
      {
        reason:
          'a two-arm case must show it is deterministic (a run of an arm and its re-run, the same in Temporal’s records): run it offline or seeded',
      },
    ],
    [
      'a two-arm case whose re-run Temporal does not hold',
      () =>
        write('real-model.json', {
          ...twoArm,
          model: 'gpt-4.1',
          determinism: { ...twoArm.determinism!, rerun: 'differing-rerun' },
        }),
      { kind: 'two-arm', reason: /^re-run differing-rerun: Temporal's records do not hold it/ },
    ],
    [
      'a two-arm case whose re-run is one of its own runs',
      () =>
        write('rerun-is-run.json', {
          ...twoArm,
          determinism: { ...twoArm.determinism!, rerun: delegating.runs[1]!.workflowId },
        }),
      { kind: 'two-arm', reason: /^its re-run .* is one of its arms' runs, not a run of its own$/ },
    ],
    [
      'a run named twice',
      () =>
        write('twice.json', {
          ...twoArm,
          arms: { ...twoArm.arms, single: { ...single, runs: [single.runs[0]!, single.runs[0]!] } },
        }),
      { reason: /^it names run .* twice$/ },
    ],
    [
      'two-arm evidence relabelled capability, citing a run that never existed',
      () =>
        write('relabelled.json', {
          ...twoArm,
          scenario: { ...twoArm.scenario, kind: 'capability' },
          admittedFrom: { sessionId: 'never-existed', status: 'cancelled', exportedAt: 'now', redactions: [] },
        }),
      { kind: 'two-arm', reason: 'it calls its scenario capability, and scenarios/parallel-lookups.yaml is two-arm' },
    ],
    [
      'a capability scenario that does not say where it was admitted from',
      () => {
        const evidence = capability(dir, 'origin-less');
        const file = evidence.scenario.file;
        const text = readFileSync(file, 'utf8').replace(/^admittedFrom:[\s\S]*$/m, '');
        writeFileSync(file, text);
        const sha256 = createHash('sha256').update(text).digest('hex');
        return write('origin.json', { ...evidence, scenario: { ...evidence.scenario, sha256 } });
      },
      { kind: 'capability', reason: /does not say which real run it was admitted from$/ },
    ],
  ] as const)('R5.3 refused: %s', async (_, file, expected) => {
    const check = await checkEvidence(file(), PROJECT_ROOT, asDefault);
    expect(check.passes).toBe(false);
    if ('kind' in expected) expect(check.kind).toBe(expected.kind);
    if (typeof expected.reason === 'string') expect(check.reason).toBe(expected.reason);
    else expect(check.reason).toMatch(expected.reason);
  });

  it('R5.3 a scenario edited since, or no longer a scenario, fails the evidence made from it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deputy-scenario-'));
    mkdirSync(join(dir, 'scenarios'));
    const copy = join(dir, twoArm.scenario.file);
    cpSync(join(PROJECT_ROOT, twoArm.scenario.file), copy);
    expect(await checkEvidence(TWO_ARM, dir, asDefault)).toMatchObject({ passes: true });
    writeFileSync(copy, `${readFileSync(copy, 'utf8')}# edited\n`);
    expect(await checkEvidence(TWO_ARM, dir, asDefault)).toMatchObject({
      passes: false,
      reason: `${twoArm.scenario.file} changed since this evidence was made`,
    });
  });
});

describe('R5.3 activation without a Temporal record to check, and without tenants', () => {
  const UNHELPFUL = join(PROJECT_ROOT, 'evidence', 'single-lookup.json');

  it('R5.3 without records to look its runs up, no evidence counts', async () => {
    const config = parseConfig({
      ...delegationConfig(),
      delegation: { ...delegationConfig().delegation, activation: 'evidence' },
      tenants: { both: { evidence: [CAPABILITY, TWO_ARM] }, 'capability-only': { evidence: [CAPABILITY, UNHELPFUL] } },
    });
    const [both, capabilityOnly] = await tenantDelegation(config, PROJECT_ROOT);
    expect(both).toMatchObject({ activated: false });
    expect(both!.reason).toBe(
      'no passing capability evidence (a scenario admitted from a real failed run); no passing two-arm evidence',
    );
    for (const check of [...both!.evidence, ...capabilityOnly!.evidence]) {
      expect(check.reason).toBe('cannot look up the runs it names: the worker has no Temporal client to check them');
    }
    expect(capabilityOnly!.reason).toBe(
      'no passing capability evidence (a scenario admitted from a real failed run); no passing two-arm evidence',
    );
    const off = parseConfig({ ...config, delegation: { ...config.delegation, enabled: false } });
    expect((await tenantDelegation(off, PROJECT_ROOT))[0]).toMatchObject({
      activated: false,
      reason: 'delegation is off (the master switch)',
    });
  });

  it('R5.3 with no tenants, runs are the default tenant: the flag alone gives nothing, unless activation is unconditional', async () => {
    const lookup = tenantDelegationLookup(PROJECT_ROOT, records);
    const evidenceOnly = parseConfig({
      ...delegationConfig(),
      delegation: { ...delegationConfig().delegation, activation: 'evidence', evidence: [TWO_ARM] },
    });
    expect(await lookup(evidenceOnly, undefined)).toBe(false);
    expect(await lookup(evidenceOnly, 'anyone')).toBe(false);
    expect(describeTenantDelegation(await tenantDelegation(evidenceOnly, PROJECT_ROOT, records))).toEqual([
      "delegation: NOT offered: no tenants are configured, and the default tenant's evidence (delegation.evidence) does not pass: no passing capability evidence (a scenario admitted from a real failed run); give it evidence, or set delegation.activation: unconditional (docs/activation.md)",
      `  passes two-arm ${TWO_ARM}: delegation helps: 100% vs 50% with no added policy failure`,
    ]);
    // The default of a config that says nothing is evidence.
    expect(parseConfig({ delegation: { enabled: true } }).delegation.activation).toBe('evidence');
    const unconditional = parseConfig({ ...delegationConfig() });
    expect(unconditional.delegation.activation).toBe('unconditional');
    expect(await lookup(unconditional, undefined)).toBe(true);
    expect(await lookup(unconditional, 'anyone')).toBe(true);
    expect(describeTenantDelegation(await tenantDelegation(unconditional, PROJECT_ROOT, records))).toEqual([
      'delegation: offered to every run WITHOUT evidence (delegation.activation: unconditional in the config): a departure from the design; remove it to activate on evidence (docs/activation.md)',
    ]);
    const tenants = parseConfig({ ...evidenceOnly, tenants: { acme: { evidence: [TWO_ARM] } } });
    expect(await lookup(tenants, 'acme')).toBe(false);
    expect(await lookup(tenants, undefined)).toBe(false);
  });
});
