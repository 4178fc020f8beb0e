/**
 * Attacks on activation evidence (item 10 of the threat model, docs/security.md): evidence written or edited by hand,
 * and evidence whose runs, kind, origin or failed run a file claims instead of what Temporal records. Every file here
 * starts from evidence `npm run eval` made on this server, then lies.
 */
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  checkEvidence,
  temporalRunRecords,
  tenantDelegation,
  tenantDelegationLookup,
} from '../../src/config/tenant-evidence.js';
import { parseConfig } from '../../src/config/schema.js';
import type { Evidence } from '../../src/config/evidence.js';
import { summariseArm, verdict } from '../../src/config/evidence.js';
import { userSays } from '../../src/testing/script.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import {
  capabilityScenario,
  evidenceDir,
  QUICK_SCENARIO,
  recordEvidence,
  UNHELPFUL_SCENARIO,
  writeEvidence,
} from '../support/evidence.js';
import { testConfig, useHarness } from '../support/harness.js';

const h = useHarness({ config: testConfig({ tenants: undefined }) });
const { dir } = evidenceDir();
/** Honest evidence, made on this server: a case where delegation helps and one where it does not, runs of no tenant. */
let helps: Evidence;
let unhelpful: Evidence;

beforeAll(async () => {
  [helps, unhelpful] = await Promise.all([
    recordEvidence(h, QUICK_SCENARIO, undefined),
    recordEvidence(h, UNHELPFUL_SCENARIO, undefined),
  ]);
}, 120_000);

/** `evidence` edited by `over`, written, and checked against this server's records as the default tenant's. */
async function edited(evidence: Evidence, over: (e: Evidence) => void) {
  const copy = structuredClone(evidence);
  over(copy);
  const file = writeEvidence(dir, `${randomBytes(4).toString('hex')}.json`, copy);
  return checkEvidence(file, PROJECT_ROOT, { tenant: undefined, records: temporalRunRecords(h.client) });
}

/** An arm's means and the verdict made to agree with its (edited) runs, as a careful forger would. */
function agreeing(e: Evidence): void {
  e.arms.single = summariseArm(e.arms.single.runs);
  e.arms.delegating = summariseArm(e.arms.delegating.runs);
  e.verdict = verdict(e.arms.single, e.arms.delegating);
}

describe('attacks on activation evidence', () => {
  it('R5.3 attack 10: hand-written evidence does not activate a tenant', async () => {
    expect(await edited(helps, () => undefined)).toMatchObject({ passes: true });
    // Means raised to win, its runs left as they were.
    expect(await edited(helps, (e) => (e.arms.single.meanScore = 0.1))).toMatchObject({
      passes: false,
      reason: "its single arm's means are not those of its runs",
    });
    // A run's output swapped for one that does not hold the facts its full score claims.
    const swapped = await edited(helps, (e) => (e.arms.delegating.runs[0]!.output = 'I did it.'));
    expect(swapped.passes).toBe(false);
    expect(swapped.reason).toMatch(/^delegating run .*: the file says output "I did it\.", Temporal's records give "/);
    // The scenario named is not on disk.
    expect(await edited(helps, (e) => (e.scenario.file = 'scenarios/made-up.yaml'))).toMatchObject({
      passes: false,
      reason: 'scenarios/made-up.yaml is missing: evidence is checked against the scenario it was made from',
    });
    // A two-arm case that never showed it is deterministic.
    expect((await edited(helps, (e) => delete e.determinism)).reason).toMatch(
      /^a two-arm case must show it is deterministic/,
    );
  });

  it('R5.3 attack 10c: forged runs are refused at the first place they disagree with Temporal’s records', async () => {
    // The honest "does not help" case turned into "helps": each single-agent run said to have missed its look-up,
    // scored down, and the means and the verdict made to agree. Temporal's records show the look-up was made.
    const single = unhelpful.arms.single.runs[0]!.workflowId;
    const forged = await edited(unhelpful, (e) => {
      for (const run of e.arms.single.runs) Object.assign(run, { missing: ['tool search_notes'], score: 0.5 });
      agreeing(e);
    });
    expect(forged.passes).toBe(false);
    expect(forged.reason).toBe(
      `single run ${single}: the file says missing ["tool search_notes"], Temporal's records give []`,
    );
    // Every run id replaced by one that never ran.
    const neverRan = await edited(helps, (e) => {
      for (const run of [...e.arms.single.runs, ...e.arms.delegating.runs])
        run.workflowId = `never-ran-${run.workflowId}`;
      e.determinism = { ...e.determinism!, of: e.arms.delegating.runs[0]!.workflowId };
    });
    expect(neverRan.reason).toBe(
      `single run never-ran-${helps.arms.single.runs[0]!.workflowId}: Temporal's records do not hold it (never run, or past the namespace's retention)`,
    );
    // The single-agent arm's run swapped for a delegating run (its output and score copied too): it delegated.
    const delegated = helps.arms.delegating.runs[0]!;
    const swappedArm = await edited(helps, (e) => {
      e.arms.single.runs = [{ ...delegated, workflowId: helps.determinism!.rerun }];
      agreeing(e);
    });
    expect(swappedArm.reason).toMatch(/^(single run .*: the single-agent arm's run delegated|its re-run )/);
    // The delegating arm's run replaced by another case's single-agent run: it did not delegate.
    const lone = helps.arms.single.runs[0]!;
    const notDelegating = await edited(unhelpful, (e) => (e.arms.delegating.runs = [{ ...lone }]));
    expect(notDelegating.reason).toBe(`delegating run ${lone.workflowId}: the delegating arm's run did not delegate`);
    // Determinism claimed with a "re-run" that is another case's run: it came out otherwise.
    const otherRun = unhelpful.arms.delegating.runs[0]!.workflowId;
    const notRerun = await edited(helps, (e) => (e.determinism = { ...e.determinism!, rerun: otherRun }));
    expect(notRerun.reason).toMatch(
      new RegExp(`^its re-run ${otherRun} came out otherwise than .* in Temporal's records`),
    );
    // The runs are the default tenant's: as another tenant's evidence they count for nothing.
    const asAcme = await checkEvidence(writeEvidence(dir, 'acme.json', helps), PROJECT_ROOT, {
      tenant: 'acme',
      records: temporalRunRecords(h.client),
    });
    expect(asAcme.reason).toBe(
      `single run ${helps.arms.single.runs[0]!.workflowId}: a run of the default tenant, not of tenant acme`,
    );
  });

  it('R5.3 attack 10b: capability evidence cannot be talked into: its kind, its origin and its failed run are not the file’s to say', async () => {
    const records = temporalRunRecords(h.client);
    // Two-arm evidence relabelled capability, citing a run that never existed.
    const relabelled = await edited(helps, (e) => {
      e.scenario.kind = 'capability';
      e.admittedFrom = { sessionId: 'never-existed', status: 'cancelled', exportedAt: 'now', redactions: [] };
    });
    expect(relabelled).toMatchObject({
      kind: 'two-arm',
      passes: false,
      reason: `it calls its scenario capability, and ${helps.scenario.file} is two-arm`,
    });
    // A scenario written by hand, saying it was admitted from a run that failed: Temporal's records say the run never
    // ran, or that it completed. The evidence itself is honest: made by the evaluation on this server.
    const task = 'attack 10b: a run that completed';
    h.model.add({ name: task, when: userSays(task), reply: { text: 'fine' } });
    const completed = h.id('attack-completed');
    await h.deputy.startRun({ task }, { workflowId: completed });
    await h.deputy.result(completed);
    const [never, done] = await Promise.all([
      recordEvidence(h, capabilityScenario(dir, 'never-existed'), undefined),
      recordEvidence(h, capabilityScenario(dir, completed), undefined),
    ]);
    const config = parseConfig({
      delegation: {
        enabled: true,
        evidence: [writeEvidence(dir, 'never.json', never), writeEvidence(dir, 'completed.json', done)],
      },
    });
    const [defaultTenant] = await tenantDelegation(config, PROJECT_ROOT, records);
    expect(defaultTenant).toMatchObject({ activated: false });
    expect(defaultTenant!.evidence[0]!.reason).toMatch(/^cites never-existed, which Temporal's records do not hold/);
    expect(defaultTenant!.evidence[1]!.reason).toBe(
      `cites ${completed}, which ended completed: a capability scenario comes from a failed run`,
    );
    // With no tenants, the flag alone is not enough: runs are the default tenant, which has no evidence.
    const lookup = tenantDelegationLookup(PROJECT_ROOT, records);
    expect(await lookup(parseConfig({ delegation: { enabled: true } }), undefined)).toBe(false);
    expect(await lookup(parseConfig({ delegation: { enabled: true } }), 'any-tenant-named-by-a-caller')).toBe(false);
  });
});
