/**
 * `npm run promises`: writes, under each promise of docs/promises.md, the tests whose titles name its id (a
 * `describe` or `it` title that starts with or contains `R2.6`, say). `test/docs.test.ts` checks the file is current
 * and that every promise names a test.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(fileURLToPath(import.meta.url), '../..');
export const PROMISES_FILE = join(ROOT, 'docs/promises.md');

export interface TestTitle {
  file: string;
  title: string;
}

const TITLE =
  /\b(?:describe|it|test)(?:\.(?:each\([^)]*\)|skipIf\([^)]*\)|runIf\([^)]*\)|sequential|concurrent|only|skip))*\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g;

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Every test and suite title in the repository's test files. */
export function testTitles(root = ROOT): TestTitle[] {
  return testFiles(join(root, 'test'))
    .sort()
    .flatMap((path) =>
      [...readFileSync(path, 'utf8').matchAll(TITLE)].map((m) => ({
        file: relative(root, path),
        title: m[2]!.replace(/\\(['"`])/g, '$1'),
      })),
    );
}

/** The tests whose titles name `id` (`R1.1` is not `R1.10`). */
export function testsNaming(id: string, titles: readonly TestTitle[]): TestTitle[] {
  const pattern = new RegExp(`\\b${id.replace('.', '\\.')}(?![0-9])`);
  return titles.filter(({ title }) => pattern.test(title));
}

const BLOCK = /<!-- tests (R\d+\.\d+) -->\n[\s\S]*?<!-- \/tests -->/g;

/** docs/promises.md with each promise's test list written from the test files as they are. */
export function renderPromises(text: string, titles: readonly TestTitle[]): string {
  return text.replace(BLOCK, (_block, id: string) => {
    const named = testsNaming(id, titles);
    const lines = named.length
      ? named.map(({ file, title }) => `- \`${file}\`: ${title.replace(/[|*_<>]/g, (c) => `\\${c}`)}`)
      : ['- _no test names it yet_'];
    return [`<!-- tests ${id} -->`, '', ...lines, '', '<!-- /tests -->'].join('\n');
  });
}

/** The promise ids docs/promises.md states, in order. */
export function promiseIds(text: string): string[] {
  return [...text.matchAll(/^## (R\d+\.\d+) /gm)].map((m) => m[1]!);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = readFileSync(PROMISES_FILE, 'utf8');
  writeFileSync(PROMISES_FILE, renderPromises(text, testTitles()));
  console.log(`docs/promises.md: ${promiseIds(text).length} promises`);
}
