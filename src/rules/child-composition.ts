/**
 * What a child runs with when its parent passes its composition down (no role, the parent's model, not a follow-up):
 * the part of the parent's composition it inherits, its preset whole or by revision, and reading it back from its
 * input. Pure; workflow-safe.
 */
import type { ChildOrigin, Limits, ParsedRunInput } from '../contract/run.js';
import type { InheritedComposition, ResolveRunResult } from '../contract/composition.js';
import { DEFAULT_PAYLOAD_LIMITS } from './payloads.js';
import type { ToolGrant } from './children.js';
import { composeRun } from './composition.js';
import { asLimits, type ChildLimits } from './budget.js';
import type { Preset } from '../contract/preset.js';
import type { Brief } from '../contract/delegation.js';

/**
 * The preset a child runs with, `selected` when its brief named a role: its input carries the definition, or only its
 * revision when the definition is large (the child then looks it up, see `presetForChild`).
 */
export interface PresetChoice {
  definition: Preset;
  revision: string;
  selected: boolean;
}

/** The preset as a child's input carries it. */
export type ChildPreset = NonNullable<ChildOrigin['preset']>;

/**
 * What an implicit child (no role, the parent's model, not a follow-up) takes from its parent's composition, so it
 * starts without a `resolveRun` look-up. It is composed by the same rule as a run composed from the config
 * (`composeRun`), from its parent's composition instead of the config: the child gets what the config would give it,
 * with the config the parent started under. Its input carries only what it reads: the delegation settings and hooks
 * go only to a child that may delegate.
 */
export function inheritComposition(
  parent: ResolveRunResult,
  plan: { composition: PresetChoice; toolGrant: ToolGrant; restore?: unknown; limits: ChildLimits },
  brief: Pick<Brief, 'role' | 'model' | 'effort'>,
  childDepth: number,
): InheritedComposition | undefined {
  const { definition, revision, selected } = plan.composition;
  const sameModel = brief.model === undefined || brief.model === parent.model;
  if (selected || brief.role !== undefined || !sameModel || plan.restore) return undefined;
  const byName = new Map(parent.tools.map((tool) => [tool.name, tool]));
  // The parent offers what it was given (its tools, price, defaults and settings); what is its own (its preset,
  // scopes and effort) the source does not read. A tool recorded whole (its source can change, an MCP server's)
  // stays whole: the child sees what the parent saw.
  const { composition, mayDelegate } = composeRun(
    { ...parent, tool: (name) => byName.get(name) },
    {
      preset: definition,
      revision,
      model: parent.model,
      effort: brief.effort,
      scopes: plan.toolGrant.scopes,
      granted: plan.toolGrant.tools,
      depth: childDepth,
    },
  );
  return carried(composition, mayDelegate, asLimits(plan.limits));
}

/**
 * The part of a child's composition its input carries: the defaults its own limits leave open, tool scopes,
 * delegation settings and hooks only when it may delegate (it narrows its children's grants with the scopes), the
 * payload budgets when they are not the defaults. The rest (preset, model, scopes) is in the input already.
 */
function carried(child: ResolveRunResult, mayDelegate: boolean, limits: Limits): InheritedComposition {
  // A child's limits never name a duration (it has a deadline): the config's duration always goes with it.
  const defaults = Object.entries(child.defaultLimits).filter(([key]) => limits[key as keyof Limits] === undefined);
  const { effort, tools, delegation, hooks, payloads } = child;
  const customPayloads =
    payloads &&
    (payloads.maxTextBytes !== DEFAULT_PAYLOAD_LIMITS.maxTextBytes ||
      payloads.maxInputBytes !== DEFAULT_PAYLOAD_LIMITS.maxInputBytes);
  return {
    ...(effort !== null && { effort }),
    tools: mayDelegate ? tools : tools.map((tool) => (tool.description === undefined ? tool.name : tool)),
    price: child.price,
    defaultLimits: Object.fromEntries(defaults),
    ...(mayDelegate && { delegation, hooks: hooks ?? [] }),
    compaction: child.compaction,
    ...(customPayloads && { payloads }),
    ...(child.modelRetry && { modelRetry: child.modelRetry }),
    ...(child.tenantLabel !== undefined && { tenantLabel: child.tenantLabel }),
    ...(child.modelTaskQueue && { modelTaskQueue: child.modelTaskQueue }),
    ...(child.fallback && { fallback: child.fallback }),
  };
}

/**
 * Past this many characters a child's preset definition (persona, skills) goes by reference, its revision only: the
 * child's one recorded look-up (a local activity's marker, about 350 bytes besides the definition) then costs less
 * than the two copies Temporal records of every start input (the parent's initiated event, the child's started one).
 */
export const PRESET_INLINE_MAX_CHARS = 1024;

/** The preset a child's input carries: whole, or by its revision when it is large. */
export function presetForChild({ definition, revision, selected }: PresetChoice): ChildPreset {
  return JSON.stringify(definition).length > PRESET_INLINE_MAX_CHARS
    ? { revision, selected }
    : { definition, revision, selected };
}

/**
 * Whether a child starts from the composition its parent passed down (an implicit one, its preset maybe still to be
 * looked up by reference), not from `resolveRun`.
 */
export function startsFromInput(input: ParsedRunInput): boolean {
  return input.origin?.composition !== undefined && input.origin.preset !== undefined && input.model !== undefined;
}

/** The child's composition from its input, when its parent passed it down (no look-up needed). */
export function compositionFromInput(input: ParsedRunInput): ResolveRunResult | undefined {
  const { origin } = input;
  if (!origin?.composition || !origin.preset?.definition || input.model === undefined) return undefined;
  const { definition, revision } = origin.preset;
  const { effort, tools, ...rest } = origin.composition;
  return {
    ...rest,
    effort: effort ?? null,
    // A child that may not delegate was given names only: it never narrows a grant with their scopes.
    tools: tools.map((tool) => (typeof tool === 'string' ? { name: tool, scopes: [] } : tool)),
    preset: definition.id,
    presetRevision: revision,
    presetDefinition: definition,
    model: input.model,
    scopes: input.scopes ?? [],
  };
}
