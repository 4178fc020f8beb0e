/**
 * The preset schema: a composition a run starts from. Kept apart from the config loader so workflow code can
 * validate preset definitions that arrive in a run's input.
 */
import { z } from 'zod';
import { PresetApprovalRule } from './approvals.js';

/** Reasoning effort passed to models that take it. */
export const Effort = z.enum(['minimal', 'low', 'medium', 'high']);
export type Effort = z.infer<typeof Effort>;

/** How a child is shown its parent's context: a text block, or dialogue with roles kept. */
export const ContextRendering = z.enum(['block', 'dialogue']);
export type ContextRendering = z.infer<typeof ContextRendering>;

/** How much of the parent's context a child sees. */
export const ContextMode = z.union([z.enum(['none', 'all', 'summary']), z.number().int().positive()]);
export type ContextMode = z.infer<typeof ContextMode>;

/** A preset: persona, tools, skills and defaults a run starts from. */
export const Preset = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'use lowercase letters, digits, - and _'),
  persona: z.string().default(''),
  tools: z.array(z.string()).default([]),
  skills: z.record(z.string(), z.string()).default({}),
  model: z.string().min(1).optional(),
  /**
   * The models a call moves on to, in order, when the preset's model (or, without one, the config's) keeps failing;
   * each needs a price. A run or brief that names a model of its own has none.
   */
  fallbackModels: z.array(z.string().min(1)).max(5).optional(),
  effort: Effort.optional(),
  /** How a child with this preset is shown its parent's context: a text block (default) or dialogue with roles kept. */
  contextRendering: ContextRendering.default('block'),
  /**
   * The context a child of a run with this preset gets when its brief names none; overrides
   * `delegation.defaultContext`. A conversation layer may fork its dialogue by default, an inner layer stays isolated.
   */
  defaultContext: ContextMode.optional(),
  /**
   * Calls of a run with this preset that wait for approval, besides those the config names: per tool, `always` or
   * `{ when: <JSON Schema on its arguments> }`. A preset adds approvals, never removes one.
   */
  approvals: z.record(z.string(), PresetApprovalRule).optional(),
});
export type Preset = z.infer<typeof Preset>;
