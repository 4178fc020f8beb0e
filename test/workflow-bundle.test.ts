/**
 * What the workflow bundle (the one every worker and replayer loads) carries: the contract's checks without zod,
 * which is the client's and the config's, never the workflow's; and a source map of lines, without the sources
 * unless a worker sends them with its stack traces.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';
import { leanBundle } from '../src/worker/factory.js';

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

  it('R1.7 carries the sources for a worker that answers stack trace queries with them', () => {
    const hook = (stackTraceSources: boolean) => leanBundle(stackTraceSources)({ module: { rules: [] } }).devtool;
    expect(hook(false)).toBe('inline-nosources-cheap-module-source-map');
    expect(hook(true)).toBe('inline-cheap-module-source-map');
  });
});
