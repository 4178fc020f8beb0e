/**
 * What the workflow bundle (the one every worker and replayer loads) carries: the contract's checks without zod,
 * which is the client's and the config's, never the workflow's; and a source map of lines, without the sources
 * unless a worker sends them with its stack traces.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, inject, it } from 'vitest';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { leanBundle } from '../src/worker/bundle.js';

/** The inline source map at the end of a bundle. */
type SourceMap = { sources: string[]; sourcesContent?: (string | null)[]; mappings: string };
function inlineMap(code: string): SourceMap {
  const at = code.lastIndexOf('//# sourceMappingURL=data:application/json');
  expect(at).toBeGreaterThan(0);
  return JSON.parse(Buffer.from(code.slice(code.indexOf(',', at) + 1), 'base64').toString('utf8')) as SourceMap;
}

describe('R1.7 the workflow bundle', () => {
  it('R1.7 checks the contract with the generated JSON Schemas; zod is not in it', () => {
    const code = readFileSync(inject('workflowBundlePath'), 'utf8');
    expect(code).toContain('node_modules/@cfworker/json-schema');
    expect(code).toContain('src/contract/json-schemas.ts');
    expect(code).not.toMatch(/node_modules\/zod\//);
  });

  it('R1.7 maps stack traces to the TypeScript sources by line, and does not carry the sources', () => {
    const map = inlineMap(readFileSync(inject('workflowBundlePath'), 'utf8'));
    expect(map.sources.some((source) => source.endsWith('workflows/agent-run.ts'))).toBe(true);
    expect((map.sourcesContent ?? []).filter((content) => typeof content === 'string')).toEqual([]);
    // A line's segments each start a source line: one segment per generated line (a column-precise map has many).
    const segmentsPerLine = map.mappings.split(';').map((line) => (line === '' ? 0 : line.split(',').length));
    const mapped = segmentsPerLine.filter((n) => n > 0);
    expect(mapped.length).toBeGreaterThan(1000);
    expect(mapped.reduce((a, b) => a + b, 0) / mapped.length).toBeLessThan(1.5);
  });

  it("R1.7 carries the generated JSON Schemas without the whitespace the compiler prints, and Deputy's code as it is", () => {
    const code = readFileSync(inject('workflowBundlePath'), 'utf8');
    expect(code).toMatch(/const RUN_INPUT_SCHEMA=\{type:"object",properties:\{task:\{type:"string"/);
    expect(code).toMatch(/\n {4}const run = input\.resume \? /);
  });

  it('R1.7 carries the sources for a worker that answers stack trace queries with them', () => {
    const hook = (stackTraceSources: boolean) => leanBundle(stackTraceSources)({ module: { rules: [] } }).devtool;
    expect(hook(false)).toBe('inline-nosources-cheap-module-source-map');
    expect(hook(true)).toBe('inline-cheap-module-source-map');
  });
});

/** The project's own modules in the bundle (its source map's sources), as paths from the repository's root. */
function projectModules(code: string): string[] {
  return inlineMap(code)
    .sources.filter((source) => isAbsolute(source) && existsSync(source))
    .map((source) => relative(PROJECT_ROOT, source))
    .filter((path) => !path.startsWith('..') && !path.includes('node_modules') && /\.(ts|js)$/.test(path));
}

/**
 * Module-level state a shared module could carry from one run into the next: variables (`let`, `var`), collections
 * (`Map`, `Set`, and their weak kinds: freezing does not stop their contents changing) that are exported or written
 * to, and writable static fields.
 */
function moduleState(path: string): string[] {
  const text = readFileSync(resolve(PROJECT_ROOT, path), 'utf8');
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  for (const statement of file.statements) {
    if (ts.isVariableStatement(statement)) {
      const constant = (statement.declarationList.flags & ts.NodeFlags.Const) !== 0;
      for (const declaration of statement.declarationList.declarations) {
        const name = declaration.name.getText(file);
        const init = declaration.initializer;
        // Exported, it can be written elsewhere, unless its type says it is read-only.
        const exported =
          ts.getModifiers(statement)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword) &&
          !declaration.type?.getText(file).startsWith('Readonly');
        const written = new RegExp(`\\b${name}\\.(add|set|delete|clear)\\(`).test(text);
        const collection = init && ts.isNewExpression(init) && /^(Weak)?(Map|Set)$/.test(init.expression.getText(file));
        if (!constant) found.push(`${path}: ${name} (a module-level variable)`);
        else if (collection && (exported || written))
          found.push(`${path}: ${name} (a module-level ${init.expression.getText(file)})`);
      }
    }
    if (ts.isClassDeclaration(statement)) {
      for (const member of statement.members) {
        const modifiers = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : [];
        const has = (kind: ts.SyntaxKind) => modifiers.some((modifier) => modifier.kind === kind);
        if (ts.isPropertyDeclaration(member) && has(ts.SyntaxKind.StaticKeyword) && !has(ts.SyntaxKind.ReadonlyKeyword))
          found.push(`${path}: ${statement.name?.text}.${member.name.getText(file)} (a writable static field)`);
      }
    }
  }
  return found;
}

describe('R1.1 one evaluation of the workflow modules for every workflow of a worker', () => {
  it('R1.1 the worker evaluates the workflows module and all it imports once, before any workflow', () => {
    const code = readFileSync(inject('workflowBundlePath'), 'utf8');
    const preload = /exports\.preloadModules = function preloadModules\(\) \{([^}]*)\}/.exec(code);
    expect(preload?.[1]).toContain('"./workflows/index.ts"');
  });

  it('R1.1 no workflow module keeps state of its own that one run could leave to the next', () => {
    const modules = projectModules(readFileSync(inject('workflowBundlePath'), 'utf8'));
    expect(modules).toContain('workflows/agent-run.ts');
    expect(modules).toContain('src/rules/budget.ts');
    // Each kept on purpose: it holds nothing of a run, or only what it keys by the run's own state.
    const allowed = [
      'workflows/metrics.ts: counters (a module-level Map)', // counters carry no run's values
      'workflows/mcp-sessions.ts: sessions (a module-level WeakMap)', // keyed by each run's own state
    ];
    expect(modules.flatMap(moduleState).filter((found) => !allowed.includes(found))).toEqual([]);
  });

  it('R1.1 the check finds a module-level variable, collection and static field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'deputy-module-state-'));
    const path = join(dir, 'stateful.ts');
    const lines = [
      'let turns = 0;',
      'const seen = new Set<string>();',
      'export const shared = new Map<string, number>();',
      "const KINDS = new Set(['a', 'b']);",
      "export const NAMES: ReadonlySet<string> = new Set(['c']);",
      'const ok = 1;',
      'class Cache { static hits = 0; static readonly size = 1; }',
      'export const mark = (id: string) => seen.add(id) && KINDS.has(id);',
    ];
    writeFileSync(path, lines.join('\n'));
    expect(moduleState(path).map((found) => found.slice(path.length + 2))).toEqual([
      'turns (a module-level variable)',
      'seen (a module-level Set)',
      'shared (a module-level Map)',
      'Cache.hits (a writable static field)',
    ]);
  });
});
