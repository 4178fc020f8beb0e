/**
 * What the README says is tested is tested: the table that maps the design's gate numbers to Deputy's tests names
 * gates and test titles that exist.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';

const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');

/** The rows of the first table after `heading`: the cells of each, header and rule left out. */
function tableAfter(heading: string): string[][] {
  const from = readme.indexOf(heading);
  expect(from, `README has "${heading}"`).toBeGreaterThan(-1);
  const lines = readme.slice(from).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const end = lines.findIndex((l, i) => i > start && !l.startsWith('|'));
  return lines.slice(start + 2, end).map((l) =>
    l
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim()),
  );
}

describe('R5.5 the README names tests that exist', () => {
  it("R5.5 each of the design's gates is mapped to Deputy gates and test titles that exist", () => {
    const rows = tableAfter("**The design's gate numbers.**");
    expect(rows.map(([gate]) => gate)).toEqual(['4', '12']);
    const gates = read('test/gates/delegate-gates.test.ts');
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
