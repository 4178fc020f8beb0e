/**
 * The two-arm evaluation (R5.2) end to end: `npm run eval` on the two shipped scenarios against the real test server,
 * telling the helpful one from the unhelpful one. The pure rules are in unit-eval.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { Evidence } from '../src/config/evidence.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';

describe('R5.2 npm run eval', () => {
  it('R5.2 on the real server: the helpful scenario is told apart from the unhelpful one, each an evidence file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'deputy-eval-'));
    const { OPENAI_API_KEY: _key, OPENAI_BASE_URL: _url, DEPUTY_CONFIG: _config, ...offline } = process.env;
    const evaluate = (name: string) => {
      const out = join(dir, `${name}.json`);
      const done = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'src/eval/main.ts', `scenarios/${name}.yaml`, '--runs', '1', '--out', out],
        {
          cwd: PROJECT_ROOT,
          env: { ...offline, TEMPORAL_ADDRESS: inject('temporalAddress') },
          encoding: 'utf8',
        },
      );
      expect(done.status, done.stderr).toBe(0);
      return { stdout: done.stdout, evidence: Evidence.parse(JSON.parse(readFileSync(out, 'utf8'))) };
    };
    const helpful = evaluate('parallel-lookups');
    expect(helpful.evidence.verdict).toMatchObject({ helps: true, addedPolicyFailures: 0 });
    expect(helpful.evidence.arms.single.runs[0]).toMatchObject({ status: 'limit_reached', score: 0.5 });
    expect(helpful.evidence.arms.delegating.runs[0]).toMatchObject({ status: 'completed', score: 1, children: 3 });
    expect(helpful.stdout).toContain('verdict: delegation helps: 100% vs 50% with no added policy failure');
    const unhelpful = evaluate('single-lookup');
    expect(unhelpful.evidence.verdict).toMatchObject({ helps: false });
    expect(unhelpful.stdout).toMatch(/verdict: delegation does not help: 100% vs 100%, at \d\.\d× the cost/);
  }, 90_000);
});
