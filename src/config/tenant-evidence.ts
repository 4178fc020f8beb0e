/**
 * Per-tenant activation: a tenant gets delegation only on evidence that passes — at least one capability scenario
 * admitted from a real failed run and one two-arm case, each an evidence file whose delegating arm beats its
 * single-agent arm with no added policy failure. A file only points: at its scenario (on disk, unchanged, and the one
 * source of its kind and origin) and at the runs it was made of. Every run it names is looked up in Temporal's records
 * and scored again from them, and the file is refused at the first figure that differs; determinism is a recorded
 * re-run, and a capability case's failed run must have failed, alone, as the tenant's. Read when a configuration is
 * first used, so a reload reads it again.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { DeputyConfig } from './schema.js';
import { describeIssues } from '../rules/zod-issues.js';
import { Evidence, scoreRun, summariseArm, verdict, type RunScore } from './evidence.js';
import { loadScenario, type Scenario } from './scenario.js';
import type { RecordedRun, RunRecords } from './run-records.js';

export { temporalRunRecords, type RecordedRun, type RunRecords } from './run-records.js';

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

/** Where an evidence file is checked: for which tenant, against which records of Temporal's. */
export interface EvidenceContext {
  /** The tenant it is to activate; `undefined` for the default tenant (runs that name none). */
  tenant: string | undefined;
  /** Temporal's records of the runs it names; without them no evidence passes. */
  records: RunRecords | undefined;
}

/**
 * Checks one evidence file; `baseDir` resolves relative paths (the config file's directory). The file itself only
 * points: at its scenario (by path and hash), and at the runs it was made of. What those runs did is what Temporal
 * recorded of them, and the file is refused at the first place it says otherwise.
 */
export async function checkEvidence(file: string, baseDir: string, context: EvidenceContext): Promise<EvidenceCheck> {
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
  const { records } = context;
  if (!records) return fail('cannot look up the runs it names: the worker has no Temporal client to check them');
  const problem = await recordsProblem(evidence, scenario, context.tenant, records);
  if (problem) return fail(problem);
  // Means and verdict recomputed from the runs, which now match what Temporal recorded of them.
  for (const [arm, summary] of Object.entries(evidence.arms)) {
    const recomputedArm = summariseArm(summary.runs);
    if (recomputedArm.meanScore !== summary.meanScore || recomputedArm.policyFailures !== summary.policyFailures) {
      return fail(`its ${arm} arm's means are not those of its runs`);
    }
  }
  const recomputed = verdict(summariseArm(evidence.arms.single.runs), summariseArm(evidence.arms.delegating.runs));
  if (recomputed.helps !== evidence.verdict.helps) {
    return fail(`its verdict says ${evidence.verdict.helps ? 'helps' : 'does not help'}, its runs say otherwise`);
  }
  if (!recomputed.helps) return fail(recomputed.summary);
  if (kind === 'two-arm') {
    const unproven = await determinismProblem(evidence, scenario, context.tenant, records);
    if (unproven) return fail(unproven);
  }
  if (kind === 'capability') {
    const origin = scenario.admittedFrom;
    if (!origin) return fail(`${evidence.scenario.file} does not say which real run it was admitted from`);
    const cited = await citedRunProblem(origin.sessionId, context.tenant, records);
    if (cited) return fail(cited);
    return { file, kind, passes: true, reason: recomputed.summary, cites: origin.sessionId };
  }
  return { file, kind, passes: true, reason: recomputed.summary };
}

/** The fields of a run the file states and Temporal's records decide, in the order a disagreement is named. */
const RECORDED_FIELDS = ['status', 'output', 'children', 'missing', 'policyFailures', 'score', 'costMicroUsd'] as const;

/**
 * The first place the runs the evidence names disagree with Temporal's records, or `undefined`: each run must be
 * there, ended and the tenant's; the single-agent arm's must not have delegated and the delegating arm's must have;
 * and each must be, field by field, the run the records give, scored against the scenario.
 */
async function recordsProblem(
  evidence: Evidence,
  scenario: Scenario,
  tenant: string | undefined,
  records: RunRecords,
): Promise<string | undefined> {
  const seen = new Set<string>();
  for (const arm of ['single', 'delegating'] as const) {
    const { runs } = evidence.arms[arm];
    if (runs.length === 0) return `its ${arm} arm names no run`;
    for (const run of runs) {
      if (seen.has(run.workflowId)) return `it names run ${run.workflowId} twice`;
      seen.add(run.workflowId);
      const recorded = await recordedRun(run.workflowId, arm, tenant, records);
      if (typeof recorded === 'string') return `${arm} run ${recorded}`;
      const derived = scoredFromRecords(scenario, run, recorded);
      for (const field of RECORDED_FIELDS) {
        if (JSON.stringify(run[field]) !== JSON.stringify(derived[field])) {
          return `${arm} run ${run.workflowId}: the file says ${field} ${JSON.stringify(run[field])}, Temporal's records give ${JSON.stringify(derived[field])}`;
        }
      }
    }
  }
  return undefined;
}

/** The run as Temporal recorded it, or why it does not count for `arm` of `tenant` (starting with its id). */
async function recordedRun(
  workflowId: string,
  arm: 'single' | 'delegating',
  tenant: string | undefined,
  records: RunRecords,
): Promise<RecordedRun | string> {
  const recorded = await records(workflowId);
  if (!recorded) {
    return `${workflowId}: Temporal's records do not hold it (never run, or past the namespace's retention)`;
  }
  if (!recorded.closed) return `${workflowId}: it has not ended`;
  if (recorded.tenant !== tenant) {
    return `${workflowId}: a run of ${tenantName(recorded.tenant)}, not of ${tenantName(tenant)}`;
  }
  if (arm === 'single' && recorded.children > 0) {
    return `${workflowId}: the single-agent arm's run delegated (${recorded.children} run(s) below it)`;
  }
  if (arm === 'delegating' && recorded.children === 0)
    return `${workflowId}: the delegating arm's run did not delegate`;
  return recorded;
}

const tenantName = (tenant: string | undefined) => (tenant === undefined ? 'the default tenant' : `tenant ${tenant}`);

/** A run the evidence names, scored from what Temporal recorded of it (only its tokens and wall time are the file's). */
function scoredFromRecords(scenario: Scenario, run: RunScore, recorded: RecordedRun): RunScore {
  return scoreRun(scenario, {
    workflowId: run.workflowId,
    status: recorded.ended,
    output: recorded.output,
    toolCalls: recorded.toolCalls,
    tokens: run.tokens,
    costMicroUsd: recorded.costMicroUsd ?? run.costMicroUsd,
    maxCostMicroUsd: recorded.maxCostMicroUsd,
    wallMs: run.wallMs,
    children: recorded.children,
  });
}

const UNPROVEN =
  'a two-arm case must show it is deterministic (a run of an arm and its re-run, the same in Temporal’s records): run it offline or seeded';

/**
 * Why a two-arm case has not shown it is deterministic, or `undefined`: it names a run of an arm and a re-run of it,
 * a run of its own, and Temporal's records show the two came out the same.
 */
async function determinismProblem(
  evidence: Evidence,
  scenario: Scenario,
  tenant: string | undefined,
  records: RunRecords,
): Promise<string | undefined> {
  const shown = evidence.determinism;
  if (!shown) return UNPROVEN;
  const first = evidence.arms[shown.repeatedArm].runs.find((r) => r.workflowId === shown.of);
  if (!first) return `its re-run is of ${shown.of}, which is not a run of its ${shown.repeatedArm} arm`;
  const named = [...evidence.arms.single.runs, ...evidence.arms.delegating.runs].map((r) => r.workflowId);
  if (named.includes(shown.rerun)) return `its re-run ${shown.rerun} is one of its arms' runs, not a run of its own`;
  const recorded = await recordedRun(shown.rerun, shown.repeatedArm, tenant, records);
  if (typeof recorded === 'string') return `re-run ${recorded}`;
  const again = scoredFromRecords(scenario, { ...first, workflowId: shown.rerun }, recorded);
  const same = (r: RunScore) => JSON.stringify([r.status, r.score, r.output, r.children, r.policyFailures]);
  if (same(again) !== same(first)) {
    return `its re-run ${shown.rerun} came out otherwise than ${shown.of} in Temporal's records (${again.status}, score ${again.score}): ${UNPROVEN}`;
  }
  return undefined;
}

/** Why the failed run a capability scenario cites does not back `tenant`, or `undefined` when Temporal's records say it does. */
async function citedRunProblem(
  cites: string,
  tenant: string | undefined,
  records: RunRecords,
): Promise<string | undefined> {
  const run = await records(cites);
  if (!run) {
    return `cites ${cites}, which Temporal's records do not hold (never run, or past the namespace's retention)`;
  }
  if (!run.failed) return `cites ${cites}, which ended ${run.ended}: a capability scenario comes from a failed run`;
  if (run.tenant !== tenant) {
    return `cites ${cites}, a run of ${run.tenant === undefined ? 'no tenant' : `tenant ${run.tenant}`}, not of ${tenantName(tenant)}`;
  }
  if (run.children > 0) {
    return `cites ${cites}, which delegated: a capability scenario comes from a single-agent run that failed`;
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
  // Each run is looked up once, however many files and tenants name it.
  const looked = new Map<string, ReturnType<RunRecords>>();
  const once: RunRecords | undefined = records && ((id) => looked.get(id) ?? looked.set(id, records(id)).get(id)!);
  const unconditional = config.delegation.activation === 'unconditional';
  return Promise.all(
    entries.map(async ([tenant, evidence]): Promise<TenantDelegation> => {
      const owner = tenant === DEFAULT_TENANT ? undefined : tenant;
      const checks = await Promise.all(
        evidence.map((file) => checkEvidence(file, baseDir, { tenant: owner, records: once })),
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
          ? 'activation is unconditional (the config says so): the flag alone decides, without evidence — a departure from the design (docs/activation.md)'
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
    : 'delegation: offered to every run WITHOUT evidence (delegation.activation: unconditional in the config): a departure from the design; remove it to activate on evidence (docs/activation.md)';
}
