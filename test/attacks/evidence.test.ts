/**
 * Attacks on activation evidence (item 10 of the threat model, docs/security.md): evidence written by hand, and
 * capability evidence whose kind, origin or failed run a file claims instead of what Temporal records.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkEvidence,
  temporalRunRecords,
  tenantDelegation,
  tenantDelegationLookup,
} from '../../src/config/tenant-evidence.js';
import { parseConfig } from '../../src/config/schema.js';
import type { Evidence } from '../../src/config/evidence.js';
import { userSays } from '../../src/testing/script.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { capability, evidenceDir, TWO_ARM, twoArm } from '../support/evidence.js';
import { testConfig, useHarness } from '../support/harness.js';

const h = useHarness({ config: testConfig({ tenants: undefined }) });
describe('attacks on activation evidence', () => {
  it('R5.3 attack 10: hand-written evidence does not activate a tenant', () => {
    const { write } = evidenceDir();
    const edited = (over: (e: Evidence) => void) => {
      const evidence = structuredClone(twoArm);
      over(evidence);
      return checkEvidence(write(`${randomBytes(4).toString('hex')}.json`, evidence), PROJECT_ROOT);
    };
    // Means raised to win, its runs left as they were.
    expect(edited((e) => (e.arms.single.meanScore = 0.1))).toMatchObject({
      passes: false,
      reason: "its single arm's means are not those of its runs",
    });
    // A run's output swapped for one that does not hold the facts its full score claims.
    const swapped = edited((e) => {
      e.arms.delegating.runs[0]!.output = 'I did it.';
    });
    expect(swapped.passes).toBe(false);
    expect(swapped.reason).toMatch(/^delegating run .*: its output lacks "/);
    // "failed" copied from nowhere: the scenario named is not on disk.
    expect(edited((e) => (e.scenario.file = 'scenarios/made-up.yaml'))).toMatchObject({
      passes: false,
      reason: 'scenarios/made-up.yaml is missing: evidence is checked against the scenario it was made from',
    });
    // A two-arm case that never showed it is deterministic, offline or from a real model.
    const undetermined = /^a two-arm case must show it is deterministic/;
    expect(edited((e) => delete e.determinism).reason).toMatch(undetermined);
    expect(edited((e) => ((e.model = 'gpt-4.1'), delete e.determinism)).reason).toMatch(undetermined);
    expect(edited(() => undefined)).toMatchObject({ passes: true });
  });

  it('R5.3 attack 10b: capability evidence cannot be talked into: its kind, its origin and its failed run are not the file’s to say', async () => {
    const { dir, write } = evidenceDir();
    // The shipped two-arm evidence relabelled capability, citing a run that never existed.
    const relabelled = write('relabelled.json', {
      ...twoArm,
      scenario: { ...twoArm.scenario, kind: 'capability' },
      admittedFrom: { sessionId: 'never-existed', status: 'cancelled', exportedAt: 'now', redactions: [] },
    });
    expect(checkEvidence(relabelled, PROJECT_ROOT)).toMatchObject({
      kind: 'two-arm',
      passes: false,
      reason: 'it calls its scenario capability, and scenarios/parallel-lookups.yaml is two-arm',
    });
    // A scenario written by hand, hashed to match, saying it was admitted from a run that failed: Temporal's
    // records say the run never ran, or that it completed.
    const task = 'attack 10b: a run that completed';
    h.model.add({ name: task, when: userSays(task), reply: { text: 'fine' } });
    const completed = h.id('attack-completed');
    await h.deputy.startRun({ task }, { workflowId: completed });
    await h.deputy.result(completed);
    const config = parseConfig({
      delegation: { enabled: true },
      tenants: {
        liar: { evidence: [write('never.json', capability(dir, 'never-existed')), TWO_ARM] },
        other: { evidence: [write('completed.json', capability(dir, completed)), TWO_ARM] },
      },
    });
    const [liar, other] = await tenantDelegation(config, PROJECT_ROOT, temporalRunRecords(h.client));
    expect(liar).toMatchObject({ activated: false });
    expect(liar!.evidence[0]!.reason).toMatch(/^cites never-existed, which Temporal's records do not hold/);
    expect(other).toMatchObject({ activated: false });
    expect(other!.evidence[0]!.reason).toBe(
      `cites ${completed}, which ended completed: a capability scenario comes from a failed run`,
    );
    // With no tenants, the flag alone is not enough: runs are the default tenant, which has no evidence.
    const lookup = tenantDelegationLookup(PROJECT_ROOT, temporalRunRecords(h.client));
    expect(await lookup(parseConfig({ delegation: { enabled: true } }), undefined)).toBe(false);
    expect(await lookup(parseConfig({ delegation: { enabled: true } }), 'any-tenant-named-by-a-caller')).toBe(false);
  });
});
