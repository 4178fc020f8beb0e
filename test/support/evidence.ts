/**
 * Evidence for tenant tests (R5.3), made the way `npm run eval` makes it: a scenario's two arms run on the test
 * server as a tenant's, scored from Temporal's records. A quick two-arm case (one run an arm, no waits), and
 * capability scenarios made from it the way an admitted scenario would be — the same case naming the failed run it
 * came from.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { inject } from 'vitest';
import { parse } from 'yaml';
import { asCapability } from '../../src/eval/admit.js';
import type { Evidence, RunScore } from '../../src/config/evidence.js';
import type { RecordedRun, RunRecords } from '../../src/config/run-records.js';
import { runEvaluation } from '../../src/eval/evaluation.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import type { Harness } from './harness.js';
import { delegationConfig } from './delegation.js';

/**
 * The committed evidence of `scenarios/parallel-lookups.yaml`. Its runs are in the records of the server it was made
 * on, not the test server's, so it activates no tenant here: configs that name it for tenant settings (admission
 * caps) activate delegation unconditionally.
 */
export const TWO_ARM = join(PROJECT_ROOT, 'evidence', 'parallel-lookups.json');
export const twoArm = JSON.parse(readFileSync(TWO_ARM, 'utf8')) as Evidence;

/**
 * Capability evidence for rule tests: the shipped case's runs, its scenario rewritten (in `dir`) as admitted from
 * `sessionId`, which ended `status` by the scenario's account.
 */
export function capability(dir: string, sessionId: string, over: Partial<Evidence> = {}, status = 'failed'): Evidence {
  const file = admitted(join(PROJECT_ROOT, twoArm.scenario.file), dir, sessionId, status);
  const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
  return { ...twoArm, scenario: { ...twoArm.scenario, kind: 'capability', file, sha256 }, ...over };
}

/** The scenario at `path` rewritten into `dir` as admitted from `sessionId`, which ended `status` by its account. */
function admitted(path: string, dir: string, sessionId: string, status: string): string {
  const file = join(dir, `admitted-${sessionId.replace(/[^a-z0-9-]/gi, '-')}-${status}.yaml`);
  const origin = { sessionId, status, exportedAt: '2026-11-30T10:00:00.000Z' };
  writeFileSync(file, asCapability(readFileSync(path, 'utf8'), origin));
  return file;
}

/** `evidence` as made for `tenant`: each run (and re-run) renamed as that tenant's own. */
export function forTenant(evidence: Evidence, tenant: string): Evidence {
  const own = (id: string) => `${id}@${tenant}`;
  const arm = (a: Evidence['arms']['single']) => ({
    ...a,
    runs: a.runs.map((r) => ({ ...r, workflowId: own(r.workflowId) })),
  });
  return {
    ...evidence,
    tenant,
    arms: { single: arm(evidence.arms.single), delegating: arm(evidence.arms.delegating) },
    ...(evidence.determinism && {
      determinism: {
        ...evidence.determinism,
        of: own(evidence.determinism.of),
        rerun: own(evidence.determinism.rerun),
      },
    }),
  };
}

/**
 * For rule tests, Temporal's records as a table: each run the evidence names as it says it went (its answer, the
 * required tools it did not miss, its children), the tenant's its evidence says, a re-run the same as its run; and
 * `extra` (cited failed runs, or runs recorded otherwise). Every look-up is listed in `asked`.
 */
export function recordsOf(
  evidence: readonly Evidence[],
  extra: Record<string, RecordedRun | null> = {},
): RunRecords & { asked: string[] } {
  const table = new Map<string, RecordedRun | null>();
  for (const e of evidence) {
    const scenario = parse(readFileSync(resolve(PROJECT_ROOT, e.scenario.file), 'utf8')) as {
      score: { requiredTools?: string[] };
    };
    const recorded = (run: RunScore): RecordedRun => ({
      closed: true,
      failed: false,
      ended: run.status,
      tenant: e.tenant ?? undefined,
      output: run.output,
      toolCalls: (scenario.score.requiredTools ?? [])
        .filter((tool) => !run.missing.includes(`tool ${tool}`))
        .map((name) => ({ run: run.workflowId, name, arguments: '{}' })),
      children: run.children,
      costMicroUsd: run.costMicroUsd,
      maxCostMicroUsd: null,
    });
    for (const run of [...e.arms.single.runs, ...e.arms.delegating.runs]) table.set(run.workflowId, recorded(run));
    const of = e.determinism && table.get(e.determinism.of);
    if (e.determinism && of) table.set(e.determinism.rerun, of);
  }
  for (const [id, run] of Object.entries(extra)) table.set(id, run);
  const asked: string[] = [];
  const lookup = async (id: string) => {
    asked.push(id);
    return table.get(id) ?? null;
  };
  return Object.assign(lookup, { asked });
}

/** A run Temporal recorded as failed (a capability scenario's origin), of `tenant`. */
export const failedRun = (tenant: string | undefined): RecordedRun => ({
  closed: true,
  failed: true,
  ended: 'limit_reached',
  tenant,
  output: null,
  toolCalls: [],
  children: 0,
  costMicroUsd: 0,
  maxCostMicroUsd: null,
});

/** A two-arm case where delegation helps: the single agent finds one fact of two, the delegating one both. */
export const QUICK_SCENARIO = join(PROJECT_ROOT, 'scenarios', 'quick-lookups.yaml');
/** The shipped case where delegation does not help (both arms find the one fact). */
export const UNHELPFUL_SCENARIO = join(PROJECT_ROOT, 'scenarios', 'single-lookup.yaml');

/** A scratch directory to write evidence and scenario files into. */
export function evidenceDir(): { dir: string; write: (name: string, evidence: Evidence) => string } {
  const dir = mkdtempSync(join(tmpdir(), 'deputy-evidence-'));
  return {
    dir,
    write: (name, evidence) => {
      const path = join(dir, name);
      writeFileSync(path, JSON.stringify(evidence));
      return path;
    },
  };
}

/**
 * A capability scenario in `dir`: the quick case rewritten as admitted from `sessionId`, which ended `status` by the
 * scenario's account. Whether that run exists, failed and is the tenant's is for Temporal's records to say.
 */
export function capabilityScenario(dir: string, sessionId: string, status = 'failed'): string {
  return admitted(QUICK_SCENARIO, dir, sessionId, status);
}

/** The tests' delegation config, its presets' tools those an evaluation's workers have. */
const EVAL_CONFIG = ((config) => ({
  ...config,
  presets: config.presets.map((p) => ({ ...p, tools: p.tools.filter((t) => t !== 'skill_manage') })),
}))(delegationConfig());

/** Evidence of `scenarioPath`, its runs made on the test server as `tenant`'s (absent: runs of no tenant). */
export async function recordEvidence(
  h: Pick<Harness, 'client' | 'connection'>,
  scenarioPath: string,
  tenant: string | undefined,
): Promise<Evidence> {
  return runEvaluation({
    scenarioPath,
    client: h.client,
    connection: h.connection,
    config: EVAL_CONFIG,
    tenant,
    runs: 1,
    worker: { workflowBundle: { codePath: inject('workflowBundlePath') } },
  });
}

/** Evidence written to a file of `dir` named `name`; its path. */
export function writeEvidence(dir: string, name: string, evidence: Evidence): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(evidence, null, 2));
  return path;
}
