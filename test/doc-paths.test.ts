import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');
const DOCS = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const FOLDERS = ['src', 'workflows', 'activities', 'test', 'scripts', 'bench', 'docs', 'evidence', 'mutation'];
/** What a command writes when it runs (ignored by git), named by the pages as where to look. */
const WRITTEN = new Set(['bench/profiles/']);

/** Every `code` span of a markdown file. */
const spans = (file: string): string[] =>
  [...readFileSync(join(ROOT, file), 'utf8').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);

/** Every source file's name under the folders the map describes. */
function sourceNames(): Set<string> {
  const names = new Set<string>();
  for (const folder of ['src', 'workflows', 'activities']) {
    for (const entry of readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })) {
      names.add(basename(entry));
    }
  }
  return names;
}

describe('the docs name files that exist', () => {
  it('every path a page names (src/…, workflows/…, test/… and the like) is in the repository', () => {
    const missing: string[] = [];
    for (const file of DOCS) {
      for (const span of spans(file)) {
        const path = span.replace(/[:#].*$/, '').replace(/\s.*$/, '');
        if (!FOLDERS.some((folder) => path.startsWith(`${folder}/`)) || /[*<>{}$]/.test(path) || WRITTEN.has(path))
          continue;
        if (!existsSync(join(ROOT, path))) missing.push(`${file}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every file the map of the code names by itself (child.ts, budget.ts …) is a source file', () => {
    const names = sourceNames();
    const named = spans('docs/architecture.md').filter((span) => /^[\w.-]+\.(ts|js)$/.test(span));
    expect(named.length).toBeGreaterThan(30);
    expect(named.filter((name) => !names.has(name))).toEqual([]);
  });
});
