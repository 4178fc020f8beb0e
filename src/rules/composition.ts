/**
 * A run's composition, resolved in one place for every way a run is composed: from the config (a root, a child with
 * a role or another model) and from its parent's composition (an implicit child). Each way names its source (what
 * the config, or the parent, offers); what the run is given from it is decided here. Pure; workflow-safe: it
 * imports no zod (the workflow bundle carries none).
 */
import type { DelegationSettings } from '../contract/delegation.js';
import type { ResolveRunResult } from '../contract/composition.js';
import type { Preset } from '../contract/preset.js';
import { DELEGATE_SCOPE, holdsScopes } from '../contract/scopes.js';
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
    .filter((tool): tool is RunTool => tool !== undefined && isGranted(tool.name) && holdsScopes(scopes, tool.scopes));
  const mayDelegate =
    delegation !== undefined && delegateAvailable(delegation, scopes, depth) && isGranted(DELEGATE_TOOL);
  if (mayDelegate) tools.push(...STEERING_TOOLS.map((name) => ({ name, scopes: [DELEGATE_SCOPE] })));
  return { tools, mayDelegate };
}

/**
 * What a run is composed from: the config as the worker reads it (its tools, the model's price, its defaults), or
 * the composition of the run's parent (the parent's tools, price and defaults).
 */
export type CompositionSource = Omit<
  ResolveRunResult,
  'preset' | 'presetRevision' | 'presetDefinition' | 'model' | 'effort' | 'scopes' | 'tools' | 'approvals'
> & {
  /** A tool the source has, by name, as a run records it. */
  tool: (name: string) => RunTool | undefined;
};

/** What the run asks of its source: its preset, its model, its effort, and the access it was given. */
export interface CompositionRequest {
  preset: Preset;
  revision: string;
  model: string;
  effort: string | undefined;
  scopes: readonly string[];
  granted: readonly string[] | undefined;
  depth: number;
}

/** The run's composition from its source; whether it may delegate (the steering tools are offered). */
export function composeRun(
  source: CompositionSource,
  request: CompositionRequest,
): { composition: ResolveRunResult; mayDelegate: boolean } {
  const { tool, delegation, hooks, payloads, modelRetry, tenantLabel, modelTaskQueue, fallback } = source;
  const { preset, scopes, granted, depth } = request;
  const { tools, mayDelegate } = offeredTools(preset.tools, tool, { scopes, granted, delegation, depth });
  const composition: ResolveRunResult = {
    preset: preset.id,
    presetRevision: request.revision,
    presetDefinition: preset,
    model: request.model,
    effort: request.effort ?? preset.effort ?? null,
    scopes: [...scopes],
    tools,
    price: source.price,
    defaultLimits: source.defaultLimits,
    ...(delegation && { delegation }),
    compaction: source.compaction,
    ...(payloads && { payloads }),
    ...(modelRetry && { modelRetry }),
    ...(hooks && { hooks }),
    ...(tenantLabel !== undefined && { tenantLabel }),
    ...(modelTaskQueue && { modelTaskQueue }),
    ...(fallback && { fallback }),
  };
  return { composition, mayDelegate };
}
