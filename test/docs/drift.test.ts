/**
 * Docs that drift from what the commands do: the Temporal CLI named as a user has it, `npm run eval` leaving the
 * committed evidence alone unless asked, and the evaluation figures docs/activation.md shows being what it prints.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';
import { finished, npmRun } from '../journeys/support.js';

const DOCS = [
  'README.md',
  ...readdirSync(join(PROJECT_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The rows of an evaluation table: arm → score, policy failures, tokens, cost. */
function arms(text: string): Map<string, { score: string; policy: string; tokens: number; cost: number }> {
  const rows = new Map<string, { score: string; policy: string; tokens: number; cost: number }>();
  for (const [, arm, score, policy, tokens, cost] of text.matchAll(
    /^\| (single|delegating) +\| +(\d+%) \| +(\d+) \| +(\d+) \| +\$([\d.]+) \|/gm,
  ))
    rows.set(arm!, { score: score!, policy: policy!, tokens: Number(tokens), cost: Number(cost) });
  return rows;
}

describe('74.8 the docs say what the commands do', () => {
  it('74.8 every Temporal CLI command the docs show is one a user has: .deputy/bin/temporal, not a bare temporal', () => {
    const bare: string[] = [];
    for (const doc of DOCS) {
      const text = readFileSync(join(PROJECT_ROOT, doc), 'utf8');
      for (const [, block] of text.matchAll(/```(?:sh|bash|shell)\n([\s\S]*?)```/g))
        for (const line of block!.split('\n')) if (/^\s*temporal\s/.test(line)) bare.push(`${doc}: ${line.trim()}`);
      for (const [, directive] of text.matchAll(/^(?:prints|skip|until) (temporal\s.*)$/gm))
        bare.push(`${doc}: ${directive}`);
    }
    expect(bare).toEqual([]);
  });

  it('74.8 npm run eval writes under .deputy/ and leaves the committed evidence alone; its figures are the docs’', async () => {
    const written = join(PROJECT_ROOT, '.deputy', 'evidence', 'single-lookup.json');
    rmSync(written, { force: true });
    const committed = readFileSync(join(PROJECT_ROOT, 'evidence', 'single-lookup.json'), 'utf8');
    const command = npmRun('eval', ['scenarios/single-lookup.yaml', '--runs', '1'], {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
    });
    expect(await finished(command, 170_000), command.output()).toBe(0);
    expect(command.output()).toMatch(/^evidence: \.deputy\/evidence\/single-lookup\.json$/m);
    expect(existsSync(written)).toBe(true);
    expect(readFileSync(join(PROJECT_ROOT, 'evidence', 'single-lookup.json'), 'utf8')).toBe(committed);
    expect(execFileSync('git', ['status', '--porcelain', 'evidence'], { cwd: PROJECT_ROOT, encoding: 'utf8' })).toBe(
      '',
    );

    // The figures docs/activation.md shows for this scenario: the same scores and policy failures, tokens and cost
    // within 2% (a run's ids, which its prompts carry, differ in length from one run to the next).
    const docs = readFileSync(join(PROJECT_ROOT, 'docs', 'activation.md'), 'utf8');
    const shown = arms(docs.slice(docs.indexOf('scenarios/single-lookup.yaml         #')));
    const printed = arms(command.output());
    for (const arm of ['single', 'delegating']) {
      const [doc, now] = [shown.get(arm)!, printed.get(arm)!];
      expect(now, arm).toBeDefined();
      expect({ score: now.score, policy: now.policy }, arm).toEqual({ score: doc.score, policy: doc.policy });
      expect(
        Math.abs(now.tokens - doc.tokens) / doc.tokens,
        `${arm} tokens ${now.tokens} vs ${doc.tokens}`,
      ).toBeLessThan(0.02);
      expect(Math.abs(now.cost - doc.cost) / doc.cost, `${arm} cost ${now.cost} vs ${doc.cost}`).toBeLessThan(0.02);
    }
  });
});
