/**
 * Evidence files for tenant tests (R5.3): the committed two-arm evidence, and capability evidence made from it the
 * way an admitted scenario would be — the same case written as a capability scenario that names the failed run it
 * came from, and evidence that points at that scenario by its hash.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import type { Evidence } from '../../src/config/evidence.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

/** The committed evidence of `scenarios/parallel-lookups.yaml`: a passing two-arm case. */
export const TWO_ARM = join(PROJECT_ROOT, 'evidence', 'parallel-lookups.json');
export const twoArm = JSON.parse(readFileSync(TWO_ARM, 'utf8')) as Evidence;

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
 * Capability evidence: the shipped case's runs, its scenario rewritten (in `dir`) as admitted from `sessionId`, which
 * ended `status` by the scenario's account. Whether that run exists, failed and is the tenant's is for Temporal's
 * records to say.
 */
export function capability(dir: string, sessionId: string, over: Partial<Evidence> = {}, status = 'failed'): Evidence {
  const scenario = parse(readFileSync(join(PROJECT_ROOT, twoArm.scenario.file), 'utf8')) as Record<string, unknown>;
  const file = join(dir, `admitted-${sessionId.replace(/[^a-z0-9-]/gi, '-')}-${status}.yaml`);
  const text = stringify({
    ...scenario,
    kind: 'capability',
    admittedFrom: { sessionId, status, exportedAt: '2026-11-30T10:00:00.000Z', redactions: [] },
  });
  writeFileSync(file, text);
  const sha256 = createHash('sha256').update(text).digest('hex');
  return { ...twoArm, scenario: { ...twoArm.scenario, kind: 'capability', file, sha256 }, ...over };
}
