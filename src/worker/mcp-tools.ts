/**
 * The worker's tools from the config's MCP servers, kept in step with the config: listed at start, listed again after
 * each reload (a server added, removed or answering differently), the worker's own tools untouched. A run keeps the
 * source its composition recorded: the tools of a server's earlier revision stay callable, under their pinned key,
 * for the runs offered them (and the children that inherit them), for the last few reloads.
 */
import { listMcpTools, type McpListing, type McpOptions } from '../../activities/mcp.js';
import type { ConfigStore } from '../config/store.js';
import { pinnedToolKey, type ToolDefinition } from '../contract/tools.js';

/** Listings replaced by a reload that are kept for the runs pinned to them; older ones are closed and dropped. */
export const RETIRED_LISTINGS = 8;

/** Adds the MCP servers' tools to `registry` and follows `store`; returns what closes the servers' connections. */
export async function followMcpTools(
  store: ConfigStore,
  registry: Map<string, ToolDefinition>,
  options: McpOptions | undefined,
  log: (line: string) => void = (line) => console.log(`deputy: ${line}`),
): Promise<() => Promise<void>> {
  const own = new Set(registry.keys());
  let listing: McpListing = await listMcpTools(store.current.mcpServers, options);
  const retired: McpListing[] = [];
  const install = (next: McpListing) => {
    // The servers' tools of now go; pinned ones stay (a revision current again is served by its listing of now).
    for (const name of [...registry.keys()]) if (!own.has(name) && !name.includes('@')) registry.delete(name);
    for (const tool of next.tools) {
      if (own.has(tool.name)) log(`MCP tool "${tool.name}" left out: the worker has a tool of that name`);
      else {
        registry.set(tool.name, tool);
        registry.delete(pinnedToolKey(tool.name, tool.source ?? ''));
      }
    }
    for (const line of next.lines) log(line);
  };
  /** The tools of a listing a reload replaced stay callable at their revision, unless that revision is current. */
  const retire = (previous: McpListing, next: McpListing) => {
    const current = new Set(next.tools.map((tool) => pinnedToolKey(tool.name, tool.source ?? '')));
    let pinned = false;
    for (const tool of previous.tools) {
      const key = pinnedToolKey(tool.name, tool.source ?? '');
      if (tool.source === undefined || current.has(key) || own.has(tool.name)) continue;
      registry.set(key, tool);
      pinned = true;
    }
    // A reload that changed nothing pins nothing, and does not push a pinned listing out.
    if (pinned) retired.push(previous);
  };
  /** Drops the oldest retired listing past the bound: its pinned tools, then its connections. */
  const evict = async () => {
    while (retired.length > RETIRED_LISTINGS) {
      const oldest = retired.shift()!;
      for (const tool of oldest.tools) {
        const key = pinnedToolKey(tool.name, tool.source ?? '');
        if (registry.get(key) === tool) registry.delete(key);
      }
      await oldest.close();
    }
  };
  install(listing);
  let reloading = Promise.resolve();
  const stop = store.onChange((config) => {
    reloading = reloading.then(async () => {
      const next = await listMcpTools(config.mcpServers, options);
      const previous = listing;
      listing = next;
      install(next);
      retire(previous, next);
      // Its connections close now; a pinned run's call opens one again.
      await previous.close();
      await evict();
    });
  });
  return async () => {
    stop();
    await reloading;
    await Promise.all([listing, ...retired].map((each) => each.close()));
  };
}
