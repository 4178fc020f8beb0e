/**
 * What the workflow bundle (the one every worker and replayer loads) carries: the contract's checks without zod,
 * which is the client's and the config's, never the workflow's.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';

describe('R1.7 the workflow bundle', () => {
  it('R1.7 checks the contract with the generated JSON Schemas; zod is not in it', () => {
    const code = readFileSync(inject('workflowBundlePath'), 'utf8');
    expect(code).toContain('node_modules/@cfworker/json-schema');
    expect(code).toContain('src/contract/json-schemas.ts');
    expect(code).not.toMatch(/node_modules\/zod\//);
  });
});
