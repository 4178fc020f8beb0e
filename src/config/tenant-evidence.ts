/**
 * Per-tenant activation: a tenant named in the config gets delegation only on evidence that passes — at least
 * one capability scenario admitted from a real failed run and one two-arm case, each an evidence file whose
 * delegating arm beats its single-agent arm with no added policy failure. Each file is checked against its scenario:
 * the scenario must be on disk and unchanged, every recorded run is re-scored against it, the means and the verdict
 * are recomputed from the runs (edited means, scores or verdicts do not count), and offline evidence must show its
 * script is deterministic. Read from disk when a configuration is first used, so a reload re-reads it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { DeputyConfig } from './schema.js';
import { describeIssues } from '../rules/zod-issues.js';
import { Evidence, summariseArm, verdict, type RunScore } from './evidence.js';
import { AdmittedFrom, loadScenario, type Scenario } from './scenario.js';

/** One evidence file as checked. */
export interface EvidenceCheck {
  file: string;
  kind: 'two-arm' | 'capability' | null;
  passes: boolean;
  /** Why it passes or not, in one line. */
  reason: string;
}

/** A tenant's activation and the evidence behind it. */
export interface TenantDelegation {
  tenant: string;
  activated: boolean;
  reason: string;
  evidence: EvidenceCheck[];
}

/** Checks one evidence file; `baseDir` resolves relative paths (the config file's directory). */
export function checkEvidence(file: string, baseDir: string): EvidenceCheck {
  const path = isAbsolute(file) ? file : resolve(baseDir, file);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return { file, kind: null, passes: false, reason: `cannot read: ${(err as Error).message}` };
  }
  const parsed = Evidence.safeParse(raw);
  if (!parsed.success) {
    return { file, kind: null, passes: false, reason: `not an evidence file: ${describeIssues(parsed.error)[0]}` };
  }
  const evidence = parsed.data;
  const kind = evidence.scenario.kind;
  const fail = (reason: string): EvidenceCheck => ({ file, kind, passes: false, reason });
  // The scenario the evidence was made from must be there, unchanged: it is what the runs are scored against.
  const scenarioPath = resolve(baseDir, evidence.scenario.file);
  if (!existsSync(scenarioPath)) {
    return fail(`${evidence.scenario.file} is missing: evidence is checked against the scenario it was made from`);
  }
  const sha256 = createHash('sha256').update(readFileSync(scenarioPath)).digest('hex');
  if (sha256 !== evidence.scenario.sha256)
    return fail(`${evidence.scenario.file} changed since this evidence was made`);
  let scenario: Scenario;
  try {
    scenario = loadScenario(scenarioPath);
  } catch (err) {
    return fail(`${evidence.scenario.file}: ${(err as Error).message}`);
  }
  // The verdict is recomputed from the recorded runs, each re-scored against the scenario's facts: neither a means
  // line, a score nor a verdict written by hand counts.
  for (const [arm, summary] of Object.entries(evidence.arms)) {
    for (const run of summary.runs) {
      const problem = misScored(scenario, run);
      if (problem) return fail(`${arm} run ${run.workflowId}: ${problem}`);
    }
    const recomputedArm = summariseArm(summary.runs);
    if (
      recomputedArm.meanScore !== summary.meanScore ||
      recomputedArm.policyFailures !== summary.policyFailures ||
      summary.runs.length === 0
    ) {
      return fail(`its ${arm} arm's means are not those of its runs`);
    }
  }
  const recomputed = verdict(summariseArm(evidence.arms.single.runs), summariseArm(evidence.arms.delegating.runs));
  if (recomputed.helps !== evidence.verdict.helps) {
    return fail(`its verdict says ${evidence.verdict.helps ? 'helps' : 'does not help'}, its runs say otherwise`);
  }
  if (!recomputed.helps) return fail(recomputed.summary);
  if (evidence.model.startsWith('offline') && evidence.determinism?.identical !== true) {
    return fail('offline evidence must show its script is deterministic (an arm run twice, the same run both times)');
  }
  if (kind === 'capability') {
    const origin = AdmittedFrom.safeParse(evidence.admittedFrom);
    if (!origin.success) return fail('a capability scenario must say which real run it was admitted from');
    if (origin.data.status === 'completed') {
      return fail(
        `admitted from ${origin.data.sessionId}, which completed: a capability scenario comes from a failed run`,
      );
    }
  }
  return { file, kind, passes: true, reason: recomputed.summary };
}

/** Why a recorded run's score is not what its output and its list of misses give, or `undefined` when it is. */
function misScored(scenario: Scenario, run: RunScore): string | undefined {
  const answer = (run.output ?? '').toLowerCase();
  const unfound = scenario.score.expect.filter((fact) => !answer.includes(fact.toLowerCase()));
  const notListed = unfound.filter((fact) => !run.missing.includes(`fact "${fact}"`));
  if (notListed.length > 0)
    return `its output lacks ${notListed.map((f) => `"${f}"`).join(', ')}, yet it is not listed as missing`;
  const possible = scenario.score.expect.length + scenario.score.requiredTools.length;
  if (Math.abs(run.score - (possible - run.missing.length) / possible) > 1e-9)
    return 'its score is not what its misses give';
  return undefined;
}

/** Every configured tenant's activation. */
export function tenantDelegation(config: DeputyConfig, baseDir: string): TenantDelegation[] {
  return Object.entries(config.tenants ?? {}).map(([tenant, { evidence }]) => {
    const checks = evidence.map((file) => checkEvidence(file, baseDir));
    const passing = (kind: EvidenceCheck['kind']) => checks.some((c) => c.passes && c.kind === kind);
    const missing = [
      ...(passing('capability') ? [] : ['no passing capability evidence (a scenario admitted from a real failed run)']),
      ...(passing('two-arm') ? [] : ['no passing two-arm evidence']),
    ];
    const activated = config.delegation.enabled && missing.length === 0;
    const reason = !config.delegation.enabled
      ? 'delegation is off (the master switch)'
      : missing.length > 0
        ? missing.join('; ')
        : 'evidence passes';
    return { tenant, activated, reason, evidence: checks };
  });
}

const cache = new WeakMap<DeputyConfig, Map<string, TenantDelegation>>();

/**
 * A lookup for composition: is delegation open to `tenant` under `config`? True for every run when the config names
 * no tenants (the flag alone decides); else only for an activated tenant. Evidence is read once per configuration.
 */
export function tenantDelegationLookup(baseDir: string): (config: DeputyConfig, tenant: string | undefined) => boolean {
  return (config, tenant) =>
    !config.tenants ||
    (tenant !== undefined && cachedTenantDelegation(config, baseDir).get(tenant)?.activated === true);
}

/** `tenantDelegation` of `config`, read from disk once per configuration object (a reload makes a new one). */
export function cachedTenantDelegation(config: DeputyConfig, baseDir: string): ReadonlyMap<string, TenantDelegation> {
  let byTenant = cache.get(config);
  if (!byTenant) {
    byTenant = new Map(tenantDelegation(config, baseDir).map((a) => [a.tenant, a]));
    cache.set(config, byTenant);
  }
  return byTenant;
}

/** One line per tenant, for the worker's log and `deputy tenants`. */
export function describeTenantDelegation(activations: readonly TenantDelegation[]): string[] {
  return activations.flatMap((a) => [
    `tenant ${a.tenant}: ${a.activated ? 'activated' : `NOT activated: ${a.reason}`}`,
    ...a.evidence.map((e) => `  ${e.passes ? 'passes' : 'fails '} ${e.kind ?? '?'} ${e.file}: ${e.reason}`),
  ]);
}
