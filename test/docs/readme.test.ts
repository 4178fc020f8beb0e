/**
 * The README is the front door: short, in plain words (rule ids live in docs/promises.md and the test titles), and
 * every link in it and in docs/ leads somewhere.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/testing/temporal-cli.js';

const readme = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');
const pages = [
  'README.md',
  ...readdirSync(join(PROJECT_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The prose paragraphs (and list items) of a Markdown text: code blocks, tables, headings and images left out. */
function paragraphs(text: string): string[] {
  return (
    text
      .replace(/```[\s\S]*?```/g, '')
      .split(/\n\s*\n/)
      // A list item is a paragraph of its own.
      .flatMap((p) => p.split(/\n(?=\s*[-*] )/))
      .map((p) => p.trim())
      .filter((p) => p && !p.startsWith('|') && !p.startsWith('#') && !p.startsWith('!['))
  );
}

/** GitHub's anchor for a heading. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

describe('49 the README is the front door', () => {
  it('49.12 it is at most 400 lines and names no rule id', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(400);
    expect(readme.match(/\bR[0-9]+\.[0-9]+\b/g) ?? []).toEqual([]);
  });

  it('49.12 its first screen gives the two commands: the demo and the tests', () => {
    const firstScreen = readme.split('\n').slice(0, 24).join('\n');
    expect(firstScreen).toMatch(/^npm ci && npm run demo\b/m);
    expect(firstScreen).toMatch(/^npm test\b/m);
  });

  it('49.12 no paragraph of it runs past 120 words', () => {
    const long = paragraphs(readme).filter((p) => p.split(/\s+/).length > 120);
    expect(long.map((p) => p.slice(0, 80))).toEqual([]);
  });

  it('49.12 every relative link in the README and docs/ leads to a file, and every #anchor to a heading there', () => {
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(PROJECT_ROOT, page), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, hash] = target!.split('#');
        const file = path ? resolve(PROJECT_ROOT, dirname(page), path) : join(PROJECT_ROOT, page);
        if (!existsSync(file)) {
          broken.push(`${page}: ${target} (no such file)`);
          continue;
        }
        if (hash && file.endsWith('.md')) {
          const headings = [...readFileSync(file, 'utf8').matchAll(/^#+ (.*)$/gm)].map(([, h]) => anchor(h!));
          if (!headings.includes(hash)) broken.push(`${page}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
