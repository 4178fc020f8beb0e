/**
 * What Deputy reads of an MCP server's replies, bounded: its tool listing, the values its connection needs, and a
 * tool's result as the model reads it. A server's replies are data.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpValue } from '../src/config/mcp.js';

/** How long the worker waits for a server to start and list its tools. */
export const LIST_TIMEOUT_MS = 30_000;
/**
 * What a server's listing may hold: a server that pages forever, lists thousands of tools or describes one in
 * megabytes is cut here, so the worker starts and a run's recorded composition stays small.
 */
export const MCP_BOUNDS = Object.freeze({
  pages: 32,
  tools: 512,
  descriptionChars: 2000,
  schemaBytes: 16 * 1024,
  /** A progress message, as a heartbeat carries it. */
  progressChars: 500,
  /** One HTTP response of a server's (a tool's result is cut far below this before the model reads it). */
  responseBytes: 16 * 2 ** 20,
});

/**
 * A server's tool list, page by page, up to `MCP_BOUNDS` pages and tools and `LIST_TIMEOUT_MS` in all; `cut` says
 * where it stopped early.
 */
export async function listAll(client: Client): Promise<{ tools: Tool[]; cut?: string }> {
  const tools: Tool[] = [];
  const deadline = Date.now() + LIST_TIMEOUT_MS;
  let cursor: string | undefined;
  for (let pages = 0; ; pages += 1) {
    if (pages === MCP_BOUNDS.pages) return { tools, cut: `listed more than ${MCP_BOUNDS.pages} pages of tools` };
    const page = await client.listTools(cursor === undefined ? undefined : { cursor }, {
      timeout: Math.max(1, deadline - Date.now()),
    });
    const room = MCP_BOUNDS.tools - tools.length;
    tools.push(...page.tools.slice(0, room));
    if (page.tools.length > room) return { tools, cut: `listed more than ${MCP_BOUNDS.tools} tools` };
    cursor = page.nextCursor;
    if (cursor === undefined) return { tools };
  }
}

/** `text` cut to `chars` characters, with a marker saying so. */
export function cut(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars)}… [cut: ${text.length} characters]` : text;
}

/** A value of a server's environment or headers, read when the worker connects. */
export function resolveValue(entry: McpValue, env: NodeJS.ProcessEnv, baseDir: string, server: string): string {
  if (typeof entry === 'string') return entry;
  if ('env' in entry) {
    const found = env[entry.env];
    if (found === undefined) throw new Error(`MCP server "${server}" needs ${entry.env}, which is not set`);
    return found;
  }
  return readFileSync(resolve(baseDir, entry.file), 'utf8').trim();
}

/**
 * What the model reads of a tool's result: its text and structured content; images, audio and resources are named,
 * not inlined (the model cannot read them, and their bytes would fill the run's history).
 */
export function resultText(result: CallToolResult): string {
  const parts = (result.content ?? []).map((item) => {
    switch (item.type) {
      case 'text':
        return item.text;
      case 'image':
      case 'audio':
        return `[${item.type} ${item.mimeType}, ${Math.floor((item.data.length * 3) / 4)} bytes, not shown]`;
      case 'resource_link':
        return `[resource ${item.uri}${item.name ? ` "${item.name}"` : ''}, not fetched]`;
      case 'resource':
        return `[resource ${item.resource.uri}${item.resource.mimeType ? ` (${item.resource.mimeType})` : ''}, not inlined]`;
      default:
        return `[${(item as { type: string }).type} content, not shown]`;
    }
  });
  // A server that returns structured content also returns it as text (the protocol asks it to): once is enough.
  const hasText = (result.content ?? []).some((item) => item.type === 'text');
  if (result.structuredContent !== undefined && !hasText) parts.push(JSON.stringify(result.structuredContent));
  return parts.join('\n');
}
