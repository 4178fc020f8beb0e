/**
 * What a run is offered, decided in one place for every way a run is composed: from the config (a root, a child
 * with a role or another model) and from its parent's composition (an implicit child). Pure; workflow-safe: it
 * imports no zod (the workflow bundle carries none).
 */
import type { DelegationSettings } from '../contract/delegation.js';
import { DELEGATE_SCOPE } from '../contract/scopes.js';
import type { RunTool } from '../contract/tools.js';
import { DELEGATE_TOOL, delegateAvailable, STEERING_TOOLS } from './children.js';

/** What a run may use: its scopes, the tools it was granted (all when `undefined`), its delegation settings and depth. */
export interface RunAccess {
  scopes: readonly string[];
  granted: readonly string[] | undefined;
  delegation: DelegationSettings | undefined;
  depth: number;
}

/**
 * The tools a run is offered: its preset's tools, in the preset's order, that are to be had (`available`), granted
 * and whose scopes it holds; then the steering tools when it may delegate (the flag on, the scope held, its depth
 * below the limit, and `delegate` granted).
 */
export function offeredTools(
  presetTools: readonly string[],
  available: (name: string) => RunTool | undefined,
  { scopes, granted, delegation, depth }: RunAccess,
): { tools: RunTool[]; mayDelegate: boolean } {
  const isGranted = (name: string) => granted === undefined || granted.includes(name);
  const tools = presetTools
    .map(available)
    .filter(
      (tool): tool is RunTool =>
        tool !== undefined && isGranted(tool.name) && tool.scopes.every((scope) => scopes.includes(scope)),
    );
  const mayDelegate =
    delegation !== undefined && delegateAvailable(delegation, scopes, depth) && isGranted(DELEGATE_TOOL);
  if (mayDelegate) tools.push(...STEERING_TOOLS.map((name) => ({ name, scopes: [DELEGATE_SCOPE] })));
  return { tools, mayDelegate };
}
