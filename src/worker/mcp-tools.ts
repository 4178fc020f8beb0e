/**
 * The worker's tools from the config's MCP servers, kept in step with the config: listed at start, listed again after
 * each reload (a server added, removed or answering differently), the worker's own tools untouched. A run keeps what
 * its composition recorded; a tool gone from the worker is a tool error for the runs that still call it.
 */
import { listMcpTools, type McpListing, type McpOptions } from '../../activities/mcp.js';
import type { ConfigStore } from '../config/store.js';
import type { ToolDefinition } from '../contract/tools.js';

/** Adds the MCP servers' tools to `registry` and follows `store`; returns what closes the servers' connections. */
export async function followMcpTools(
  store: ConfigStore,
  registry: Map<string, ToolDefinition>,
  options: McpOptions | undefined,
  log: (line: string) => void = (line) => console.log(`deputy: ${line}`),
): Promise<() => Promise<void>> {
  const own = new Set(registry.keys());
  let listing: McpListing = await listMcpTools(store.current.mcpServers, options);
  const install = (next: McpListing) => {
    for (const name of [...registry.keys()]) if (!own.has(name)) registry.delete(name);
    for (const tool of next.tools) {
      if (own.has(tool.name)) log(`MCP tool "${tool.name}" left out: the worker has a tool of that name`);
      else registry.set(tool.name, tool);
    }
    for (const line of next.lines) log(line);
  };
  install(listing);
  let reloading = Promise.resolve();
  const stop = store.onChange((config) => {
    reloading = reloading.then(async () => {
      const next = await listMcpTools(config.mcpServers, options);
      const previous = listing;
      listing = next;
      install(next);
      await previous.close();
    });
  });
  return async () => {
    stop();
    await reloading;
    await listing.close();
  };
}
