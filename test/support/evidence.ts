/** Evidence files for tenant tests (R5.3): the committed two-arm evidence, and capability evidence made from it. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Evidence } from '../../src/config/evidence.js';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

/** The committed evidence of `scenarios/parallel-lookups.yaml`: a passing two-arm case. */
export const TWO_ARM = join(PROJECT_ROOT, 'evidence', 'parallel-lookups.json');
export const twoArm = JSON.parse(readFileSync(TWO_ARM, 'utf8')) as Evidence;

/** Capability evidence: the same runs, admitted from a real run that ended `from`. */
export function capability(over: Partial<Evidence> = {}, from = 'limit_reached'): Evidence {
  return {
    ...twoArm,
    // The same scenario file (checked by its hash), recorded as admitted from a real failed run.
    scenario: { ...twoArm.scenario, kind: 'capability' },
    admittedFrom: { sessionId: 'run-7', status: from, exportedAt: '2026-11-30T10:00:00.000Z', redactions: [] },
    ...over,
  };
}

/** A scratch directory to write evidence files into. */
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
