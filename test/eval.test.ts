/**
 * The two-arm evaluation (R5.2) end to end: `npm run eval` on the two shipped scenarios against the real test server,
 * telling the helpful one from the unhelpful one. The pure rules are in unit-eval.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { Evidence } from '../src/config/evidence.js';
import { checkEvidence, temporalRunRecords } from '../src/config/tenant-evidence.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';

describe('R5.2 npm run eval', () => {
  it('R5.2 R5.3 on the real server: the helpful scenarios are told apart from the unhelpful one, each an evidence file that activation checks against the server’s records', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'deputy-eval-'));
    const { OPENAI_API_KEY: _key, OPENAI_BASE_URL: _url, DEPUTY_CONFIG: _config, ...offline } = process.env;
    const evaluate = (name: string) => {
      const out = join(dir, `${name}.json`);
      const done = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          'src/eval/main.ts',
          `scenarios/${name}.yaml`,
          '--runs',
          '1',
          '--tenant',
          'eval-acme',
          '--out',
          out,
        ],
        {
          cwd: PROJECT_ROOT,
          env: { ...offline, TEMPORAL_ADDRESS: inject('temporalAddress') },
          encoding: 'utf8',
        },
      );
      expect(done.status, done.stderr).toBe(0);
      return { out, stdout: done.stdout, evidence: Evidence.parse(JSON.parse(readFileSync(out, 'utf8'))) };
    };
    const helpful = evaluate('parallel-lookups');
    expect(helpful.evidence.verdict).toMatchObject({ helps: true, addedPolicyFailures: 0 });
    expect(helpful.evidence.arms.single.runs[0]).toMatchObject({ status: 'limit_reached', score: 0.5 });
    expect(helpful.evidence.arms.delegating.runs[0]).toMatchObject({ status: 'completed', score: 1, children: 3 });
    expect(helpful.stdout).toContain('verdict: delegation helps: 100% vs 50% with no added policy failure');
    const unhelpful = evaluate('single-lookup');
    expect(unhelpful.evidence.verdict).toMatchObject({ helps: false });
    expect(unhelpful.stdout).toMatch(/verdict: delegation does not help: 100% vs 100%, at \d\.\d× the cost/);
    // The quick case the shipped config and the docs name: its single-agent run fails at its turn limit.
    const quick = evaluate('quick-lookups');
    expect(quick.evidence.arms.single.runs[0]).toMatchObject({ status: 'limit_reached', children: 0 });
    expect(quick.stdout).toContain('verdict: delegation helps: 100% vs 67% with no added policy failure');
    // What the evaluation wrote is what activation needs: every run it names is the tenant's in the server's records.
    expect(helpful.evidence.tenant).toBe('eval-acme');
    expect(helpful.evidence.determinism).toMatchObject({
      repeatedArm: 'delegating',
      of: helpful.evidence.arms.delegating.runs[0]!.workflowId,
    });
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const records = temporalRunRecords(new Client({ connection }));
      expect(await checkEvidence(helpful.out, PROJECT_ROOT, { tenant: 'eval-acme', records })).toMatchObject({
        kind: 'two-arm',
        passes: true,
      });
      expect(await checkEvidence(helpful.out, PROJECT_ROOT, { tenant: 'other', records })).toMatchObject({
        passes: false,
      });
      expect(await checkEvidence(quick.out, PROJECT_ROOT, { tenant: 'eval-acme', records })).toMatchObject({
        passes: true,
      });
      expect(await checkEvidence(unhelpful.out, PROJECT_ROOT, { tenant: 'eval-acme', records })).toMatchObject({
        passes: false,
        reason: unhelpful.evidence.verdict.summary,
      });
    } finally {
      await connection.close();
    }
  }, 90_000);
});
