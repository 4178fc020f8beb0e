/**
 * What the README says is tested is tested: the table that maps the design's gate numbers to Deputy's tests names
 * gates and test titles that exist.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { PROMISES_FILE, promiseIds, renderPromises, testsNaming, testTitles } from '../scripts/promises.js';

const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');
const activation = read('docs/activation.md');

/** The rows of the first table after `heading`: the cells of each, header and rule left out. */
function tableAfter(heading: string): string[][] {
  const from = activation.indexOf(heading);
  expect(from, `docs/activation.md has "${heading}"`).toBeGreaterThan(-1);
  const lines = activation.slice(from).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start + 2, end).map((l) =>
    l
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
}

describe('R5.5 the docs name tests that exist', () => {
  it("R5.5 each of the design's gates is mapped to Deputy gates and test titles that exist", () => {
    const rows = tableAfter("**The design's gate numbers.**");
    expect(rows.map(([gate]) => gate)).toEqual(['4', '12']);
    const gates = ['delegate-gates', 'delegate-gates-outcomes', 'delegate-gates-approvals']
      .map((file) => read(`test/gates/${file}.test.ts`))
      .join('\n');
    for (const [gate, , testedBy] of rows) {
      const named = [...testedBy!.matchAll(/\bG(\d+)\b/g)].map((m) => m[1]!);
      expect(named.length, `design gate ${gate} names a Deputy gate`).toBeGreaterThan(0);
      for (const n of named) expect(gates, `G${n}`).toContain(`it('G${n} `);
      // Each `file` is followed by the titles (quoted) of tests in it, up to the next file.
      const parts = testedBy!.split(/`(test\/[^`]+)`/);
      for (let i = 1; i < parts.length; i += 2) {
        const file = read(parts[i]!);
        const titles = [...parts[i + 1]!.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
        expect(titles.length, `${parts[i]} is followed by a test title`).toBeGreaterThan(0);
        for (const title of titles) expect(file, `${parts[i]}: "${title}"`).toContain(title);
      }
    }
  });
});

/** The design's rules, R1.1 … R8.3. */
const RULES = [
  ...Array.from({ length: 16 }, (_, i) => `R1.${i + 1}`),
  ...Array.from({ length: 20 }, (_, i) => `R2.${i + 1}`),
  ...Array.from({ length: 10 }, (_, i) => `R3.${i + 1}`),
  ...Array.from({ length: 6 }, (_, i) => `R4.${i + 1}`),
  ...Array.from({ length: 5 }, (_, i) => `R5.${i + 1}`),
  ...Array.from({ length: 10 }, (_, i) => `R6.${i + 1}`),
  ...Array.from({ length: 6 }, (_, i) => `R7.${i + 1}`),
  ...Array.from({ length: 3 }, (_, i) => `R8.${i + 1}`),
];
/** Rules not built yet, which no test can name. */
const NOT_BUILT: string[] = [];

describe('R5.5 docs/promises.md states every promise with the tests that prove it', () => {
  const text = readFileSync(PROMISES_FILE, 'utf8');
  const titles = testTitles();

  it('R5.5 every rule of the design is stated once, in order', () => {
    expect(promiseIds(text)).toEqual(RULES);
  });

  it('R5.5 every built rule is named by at least one test title', () => {
    const unnamed = RULES.filter((id) => testsNaming(id, titles).length === 0);
    expect(unnamed).toEqual(NOT_BUILT);
  });

  it('R5.5 the test lists are current (npm run promises rewrites them)', () => {
    expect(text, 'docs/promises.md is out of date: run npm run promises').toBe(renderPromises(text, titles));
  });

  it('R5.5 no test title cites an issue number', () => {
    expect(titles.filter(({ title }) => /\bissue \d+/i.test(title))).toEqual([]);
  });
});
