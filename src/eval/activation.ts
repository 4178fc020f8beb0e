/**
 * Per-tenant activation (R5.3): a tenant named in the config gets delegation only on evidence that passes — at least
 * one capability scenario admitted from a real failed run and one two-arm case, each an evidence file whose
 * delegating arm beats its single-agent arm with no added policy failure. Each file is checked against itself: its
 * verdict is recomputed from its arms (an edited verdict does not count), and its scenario file, when present, must
 * be the one it was made from. Read from disk when a configuration is first used, so a reload re-reads it.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { DeputyConfig } from '../config/schema.js';
import { describeIssues } from '../rules/zod-issues.js';
import { AdmittedFrom } from './scenario.js';
import { Evidence, verdict } from './score.js';

/** One evidence file as checked. */
export interface EvidenceCheck {
  file: string;
  kind: 'two-arm' | 'capability' | null;
  passes: boolean;
  /** Why it passes or not, in one line. */
  reason: string;
}

/** A tenant's activation and the evidence behind it. */
export interface TenantActivation {
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
  const recomputed = verdict(evidence.arms.single, evidence.arms.delegating);
  if (recomputed.helps !== evidence.verdict.helps) {
    return fail(`its verdict says ${evidence.verdict.helps ? 'helps' : 'does not help'}, its runs say otherwise`);
  }
  if (!recomputed.helps) return fail(recomputed.summary);
  if (kind === 'capability') {
    const origin = AdmittedFrom.safeParse(evidence.admittedFrom);
    if (!origin.success) return fail('a capability scenario must say which real run it was admitted from');
    if (origin.data.status === 'completed') {
      return fail(
        `admitted from ${origin.data.sessionId}, which completed: a capability scenario comes from a failed run`,
      );
    }
  }
  const scenarioPath = resolve(baseDir, evidence.scenario.file);
  if (existsSync(scenarioPath)) {
    const sha256 = createHash('sha256').update(readFileSync(scenarioPath)).digest('hex');
    if (sha256 !== evidence.scenario.sha256)
      return fail(`${evidence.scenario.file} changed since this evidence was made`);
  }
  return { file, kind, passes: true, reason: recomputed.summary };
}

/** Every configured tenant's activation. */
export function tenantActivations(config: DeputyConfig, baseDir: string): TenantActivation[] {
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

const cache = new WeakMap<DeputyConfig, Map<string, TenantActivation>>();

/**
 * A lookup for composition: is delegation open to `tenant` under `config`? True for every run when the config names
 * no tenants (the flag alone decides); else only for an activated tenant. Evidence is read once per configuration.
 */
export function activationLookup(baseDir: string): (config: DeputyConfig, tenant: string | undefined) => boolean {
  return (config, tenant) =>
    !config.tenants || (tenant !== undefined && cachedActivations(config, baseDir).get(tenant)?.activated === true);
}

/** `tenantActivations` of `config`, read from disk once per configuration object (a reload makes a new one). */
export function cachedActivations(config: DeputyConfig, baseDir: string): ReadonlyMap<string, TenantActivation> {
  let byTenant = cache.get(config);
  if (!byTenant) {
    byTenant = new Map(tenantActivations(config, baseDir).map((a) => [a.tenant, a]));
    cache.set(config, byTenant);
  }
  return byTenant;
}

/** One line per tenant, for the worker's log and `deputy tenants`. */
export function describeActivations(activations: readonly TenantActivation[]): string[] {
  return activations.flatMap((a) => [
    `tenant ${a.tenant}: ${a.activated ? 'activated' : `NOT activated: ${a.reason}`}`,
    ...a.evidence.map((e) => `  ${e.passes ? 'passes' : 'fails '} ${e.kind ?? '?'} ${e.file}: ${e.reason}`),
  ]);
}
