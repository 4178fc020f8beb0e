/**
 * Per-tenant activation: a tenant gets delegation only on evidence that passes — at least one capability scenario
 * admitted from a real failed run and one two-arm case, each an evidence file whose delegating arm beats its
 * single-agent arm with no added policy failure. Each file is checked against its scenario: the scenario must be on
 * disk and unchanged, its kind and where it was admitted from are read from it (the evidence file only points at
 * it), every recorded run is re-scored against it, the means and the verdict are recomputed from the runs (edited
 * means, scores or verdicts do not count), and a two-arm case must show it is deterministic. The failed run a
 * capability scenario cites is looked up in Temporal's records: it must exist, have failed and be the tenant's.
 * Read when a configuration is first used, so a reload reads it again.
 */
import { createHash } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { DeputyConfig } from './schema.js';
import { describeIssues } from '../rules/zod-issues.js';
import { Evidence, summariseArm, verdict, type RunScore } from './evidence.js';
import { loadScenario, type Scenario } from './scenario.js';
import { DEPUTY_STATUS, DEPUTY_TENANT } from '../contract/search-attributes.js';

/** One evidence file as checked. */
export interface EvidenceCheck {
  file: string;
  kind: 'two-arm' | 'capability' | null;
  passes: boolean;
  /** Why it passes or not, in one line. */
  reason: string;
  /** The failed run a capability scenario was admitted from: it passes only once Temporal's records confirm it. */
  cites?: string;
}

/** The tenant of runs that name none, when the config names no tenants. */
const DEFAULT_TENANT = '(default)';

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
  let kind: EvidenceCheck['kind'] = evidence.scenario.kind;
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
  // What kind of case this is, and where it came from, is what the hashed scenario says, never the evidence file.
  if (scenario.kind !== kind) {
    const says = kind;
    kind = scenario.kind;
    return fail(`it calls its scenario ${says}, and ${evidence.scenario.file} is ${scenario.kind}`);
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
  if (kind === 'two-arm' && evidence.determinism?.identical !== true) {
    return fail(
      'a two-arm case must show it is deterministic (an arm run twice, the same run both times): run it offline or seeded',
    );
  }
  if (kind === 'capability') {
    const origin = scenario.admittedFrom;
    if (!origin) return fail(`${evidence.scenario.file} does not say which real run it was admitted from`);
    return { file, kind, passes: true, reason: recomputed.summary, cites: origin.sessionId };
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

/** What Temporal's records say about a run: whether it failed, how it ended, whose it is; `null` when none. */
export interface RecordedRun {
  failed: boolean;
  ended: string;
  tenant: string | undefined;
}
export type RunRecords = (workflowId: string) => Promise<RecordedRun | null>;

/** A run as Temporal's records have it: failed when Temporal or Deputy says so (a run out of budget failed its task). */
export function temporalRunRecords(client: Client): RunRecords {
  return async (workflowId) => {
    try {
      const run = await client.workflow.getHandle(workflowId).describe();
      const status = run.typedSearchAttributes.get(DEPUTY_STATUS);
      const temporal = run.status.name;
      return {
        failed:
          ['FAILED', 'TIMED_OUT', 'TERMINATED'].includes(temporal) || status === 'failed' || status === 'limit_reached',
        ended: status ?? temporal.toLowerCase(),
        tenant: run.typedSearchAttributes.get(DEPUTY_TENANT),
      };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    }
  };
}

/** Why the run `check` cites does not back `tenant`, or `undefined` when Temporal's records say it does. */
async function citedRunProblem(cites: string, tenant: string, records: RunRecords | undefined) {
  if (!records) return `cannot look up ${cites}: the worker has no Temporal client to check the run it cites`;
  const run = await records(cites);
  if (!run)
    return `cites ${cites}, which Temporal's records do not hold (never run, or past the namespace's retention)`;
  if (!run.failed) return `cites ${cites}, which ended ${run.ended}: a capability scenario comes from a failed run`;
  const owner = tenant === DEFAULT_TENANT ? undefined : tenant;
  if (run.tenant !== owner) {
    return `cites ${cites}, a run of ${run.tenant === undefined ? 'no tenant' : `tenant ${run.tenant}`}, not of ${owner === undefined ? 'the default tenant' : `tenant ${owner}`}`;
  }
  return undefined;
}

/**
 * Every tenant's activation: each named tenant, or with none named the default tenant (`delegation.evidence`).
 * `records` looks up the runs capability evidence cites; without it no capability evidence passes.
 */
export async function tenantDelegation(
  config: DeputyConfig,
  baseDir: string,
  records?: RunRecords,
): Promise<TenantDelegation[]> {
  const entries: [string, readonly string[]][] = config.tenants
    ? Object.entries(config.tenants).map(([tenant, { evidence }]) => [tenant, evidence])
    : [[DEFAULT_TENANT, config.delegation.evidence]];
  const files = new Map<string, EvidenceCheck>();
  const checked = (file: string) => files.get(file) ?? files.set(file, checkEvidence(file, baseDir)).get(file)!;
  // Each cited run is looked up once, however many tenants cite it.
  const looked = new Map<string, ReturnType<RunRecords>>();
  const once: RunRecords | undefined = records && ((id) => looked.get(id) ?? looked.set(id, records(id)).get(id)!);
  const unconditional = config.delegation.activation === 'unconditional';
  return Promise.all(
    entries.map(async ([tenant, evidence]): Promise<TenantDelegation> => {
      const checks = await Promise.all(
        evidence.map(async (file) => {
          const check = checked(file);
          const problem = check.passes && check.cites && (await citedRunProblem(check.cites, tenant, once));
          return problem ? { ...check, passes: false, reason: problem } : check;
        }),
      );
      const passing = (kind: EvidenceCheck['kind']) => checks.some((c) => c.passes && c.kind === kind);
      const missing = [
        ...(passing('capability')
          ? []
          : ['no passing capability evidence (a scenario admitted from a real failed run)']),
        ...(passing('two-arm') ? [] : ['no passing two-arm evidence']),
      ];
      const activated = config.delegation.enabled && (unconditional || missing.length === 0);
      const reason = !config.delegation.enabled
        ? 'delegation is off (the master switch)'
        : unconditional
          ? 'activation is unconditional (the config says so): the flag alone decides'
          : missing.length > 0
            ? missing.join('; ')
            : 'evidence passes';
      return { tenant, activated, reason, evidence: checks };
    }),
  );
}

/**
 * A lookup for composition: is delegation open to a run of `tenant` under `config`? With tenants named, only an
 * activated one's runs; with none, every run as the default tenant. Evidence is read once per configuration.
 */
export function tenantDelegationLookup(
  baseDir: string,
  records?: RunRecords,
): (config: DeputyConfig, tenant: string | undefined) => Promise<boolean> {
  return async (config, tenant) => {
    if (config.delegation.activation === 'unconditional') return config.delegation.enabled;
    const key = config.tenants ? tenant : DEFAULT_TENANT;
    if (key === undefined) return false;
    return (await cachedTenantDelegation(config, baseDir, records)).get(key)?.activated === true;
  };
}

const cache = new WeakMap<DeputyConfig, Promise<ReadonlyMap<string, TenantDelegation>>>();

/** `tenantDelegation` of `config`, read once per configuration object (a reload makes a new one); a failed read is tried again. */
export function cachedTenantDelegation(
  config: DeputyConfig,
  baseDir: string,
  records?: RunRecords,
): Promise<ReadonlyMap<string, TenantDelegation>> {
  let byTenant = cache.get(config);
  if (!byTenant) {
    byTenant = tenantDelegation(config, baseDir, records).then((all) => new Map(all.map((a) => [a.tenant, a])));
    cache.set(config, byTenant);
    byTenant.catch(() => cache.delete(config));
  }
  return byTenant;
}

/** One line per tenant, for the worker's log and `deputy tenants`; runs without tenants read as the default tenant. */
export function describeTenantDelegation(activations: readonly TenantDelegation[]): string[] {
  return activations.flatMap((a) => [
    a.tenant === DEFAULT_TENANT ? describeDefault(a) : `tenant ${a.tenant}: ${describeState(a)}`,
    ...a.evidence.map((e) => `  ${e.passes ? 'passes' : 'fails '} ${e.kind ?? '?'} ${e.file}: ${e.reason}`),
  ]);
}

function describeState(a: TenantDelegation): string {
  if (!a.activated) return `NOT activated: ${a.reason}`;
  return a.reason === 'evidence passes' ? 'activated' : `activated: ${a.reason}`;
}

function describeDefault(a: TenantDelegation): string {
  if (!a.activated && a.reason.startsWith('delegation is off')) return `delegation: off (the master switch)`;
  if (!a.activated) {
    return `delegation: NOT offered: no tenants are configured, and the default tenant's evidence (delegation.evidence) does not pass: ${a.reason}; give it evidence, or set delegation.activation: unconditional (docs/activation.md)`;
  }
  return a.evidence.length > 0
    ? "delegation: offered to every run: the default tenant's evidence passes"
    : 'delegation: offered to every run without evidence (delegation.activation: unconditional in the config)';
}
