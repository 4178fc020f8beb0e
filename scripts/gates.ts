/**
 * `npm run gates`: runs the delegate gate area (R5.5, test/gates/) against a real dev server, prints the table G1–G24
 * with pass or fail, and writes it to .deputy/gates.json; `npm run gates -- --evidence` writes it to
 * evidence/gates.json, the second evaluation artifact, instead (CI runs the gates without touching committed files).
 * Exits non-zero unless all 24 gates pass.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';

const GATES = 24;
const run = spawnSync(
  process.execPath,
  ['node_modules/vitest/vitest.mjs', 'run', '--config', 'vitest.gates.config.ts'],
  {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);
const report = JSON.parse(readFileSync(join(PROJECT_ROOT, '.deputy', 'gates-results.json'), 'utf8')) as {
  testResults: {
    assertionResults: { title: string; status: string; duration?: number; failureMessages: string[] }[];
  }[];
};
const results = report.testResults.flatMap((file) => file.assertionResults);
const gates = Array.from({ length: GATES }, (_, i) => {
  const id = `G${i + 1}`;
  const found = results.find((r) => r.title.startsWith(`${id} `));
  return {
    id,
    property: found ? found.title.slice(id.length + 1) : '(missing)',
    status: found?.status === 'passed' ? 'pass' : 'FAIL',
    ms: Math.round(found?.duration ?? 0),
    ...(found && found.status !== 'passed' && { failure: found.failureMessages[0]?.split('\n')[0] ?? '' }),
  };
});
const width = Math.max(...gates.map((g) => g.property.length));
console.log(`| gate | ${'property'.padEnd(width)} | result |    ms |`);
console.log(`| ---- | ${'-'.repeat(width)} | ------ | ----- |`);
for (const g of gates)
  console.log(
    `| ${g.id.padEnd(4)} | ${g.property.padEnd(width)} | ${g.status.padEnd(6)} | ${String(g.ms).padStart(5)} |`,
  );
const passed = gates.filter((g) => g.status === 'pass').length;
console.log(`\n${passed} of ${GATES} gates pass`);
const dir = join(PROJECT_ROOT, process.argv.includes('--evidence') ? 'evidence' : '.deputy');
mkdirSync(dir, { recursive: true });
writeFileSync(
  join(dir, 'gates.json'),
  `${JSON.stringify({ format: 'deputy-gates/1', area: 'delegate', createdAt: new Date().toISOString(), command: 'npm run gates -- --evidence', passed, total: GATES, gates }, null, 2)}\n`,
);
process.exit(passed === GATES && run.status === 0 ? 0 : 1);
