/**
 * R1.10 R6.7 what a tool is offered on and what the model sees of it: scopes held in full, a tool's own JSON Schema
 * (an MCP server's) over the one zod would generate, and what an MCP result reads as.
 */
import { ToolError } from '../src/contract/errors.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resultText } from '../activities/mcp-replies.js';
import { toToolSpec, type ToolDefinition } from '../src/contract/tools.js';
import { holdsScopes } from '../src/contract/scopes.js';

const tool = (over: Partial<ToolDefinition> = {}): ToolDefinition => ({
  name: 'files_read',
  description: 'Read a file.',
  parameters: z.strictObject({ path: z.string() }),
  scopes: ['tools.files'],
  execute: async () => 'ok',
  ...over,
});

describe('R1.10 R6.7 tools', () => {
  it('R1.10 a run is offered a tool only when it holds every scope the tool needs', () => {
    expect(holdsScopes(['a', 'b'], ['a', 'b'])).toBe(true);
    expect(holdsScopes(['a'], ['a', 'b'])).toBe(false);
    expect(holdsScopes([], ['a'])).toBe(false);
    expect(holdsScopes([], [])).toBe(true);
  });

  it('R6.7 the spec the model sees: zod generates the schema, unless the tool states its own', () => {
    const scopes = ['tools.files'];
    const generated = toToolSpec(tool({ scopes }));
    expect(generated).toEqual({
      name: 'files_read',
      description: 'Read a file.',
      parameters: {
        type: 'object',
        properties: { path: { type: 'string' } },
        required: ['path'],
        additionalProperties: false,
      },
      scopes: ['tools.files'],
    });
    expect(generated.scopes).not.toBe(scopes);
    const own = { type: 'object', properties: { path: { type: 'string', description: "the server's words" } } };
    expect(toToolSpec(tool({ jsonSchema: own })).parameters).toBe(own);
  });

  it('R6.7 a tool error carries its own name and message', () => {
    const err = new ToolError('refused');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ToolError');
    expect(err.message).toBe('refused');
  });

  it('R6.7 an MCP result reads as its text; structured content only where no text states it; media named, not inlined', () => {
    expect(
      resultText({
        content: [
          { type: 'text', text: 'first' },
          { type: 'image', mimeType: 'image/png', data: 'AAAA' },
          { type: 'audio', mimeType: 'audio/wav', data: 'AAAAAAAA' },
          { type: 'resource_link', uri: 'file:///a.txt', name: 'a' },
          { type: 'resource', resource: { uri: 'file:///b.bin', mimeType: 'application/octet-stream', blob: 'AAAA' } },
        ],
        structuredContent: { ignored: true },
      }),
    ).toBe(
      [
        'first',
        '[image image/png, 3 bytes, not shown]',
        '[audio audio/wav, 6 bytes, not shown]',
        '[resource file:///a.txt "a", not fetched]',
        '[resource file:///b.bin (application/octet-stream), not inlined]',
      ].join('\n'),
    );
    expect(resultText({ content: [], structuredContent: { temperature: 21 } })).toBe('{"temperature":21}');
    expect(resultText({ content: [] })).toBe('');
  });
});
