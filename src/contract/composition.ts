/**
 * A run's composition: what `resolveRun` answers once at the run's start and the run keeps for its whole life,
 * across continue-as-new. One zod schema for the activity result and the resume input. Workflow-safe.
 */
import { z } from 'zod';
import { DelegationSettings } from './delegation.js';
import { HookSpec } from './hooks.js';
import { Preset } from './preset.js';
import { RunTool } from './tools.js';
import { ApprovalPolicy } from './approvals.js';

/** Budget held back so the run can still write its final answer; `false` turns synthesis off. */
export const SynthesisReserve = z.union([
  z.literal(false),
  z.strictObject({
    /** Enter synthesis once remaining tokens are at or below this. @default 0 */
    tokens: z.number().int().nonnegative().optional(),
    /** Enter synthesis once remaining cost (USD) is at or below this. @default 0 */
    costUsd: z.number().nonnegative().optional(),
  }),
]);
export type SynthesisReserve = z.infer<typeof SynthesisReserve>;

/**
 * A model's price in integer micro-USD per million tokens: input, input the provider served from its prompt cache and
 * input it wrote to it (each the input price when absent), and output.
 */
export const ModelPrice = z.object({
  inputMicroUsdPerMTok: z.number().int().nonnegative(),
  outputMicroUsdPerMTok: z.number().int().nonnegative(),
  cachedInputMicroUsdPerMTok: z.number().int().nonnegative().optional(),
  cacheWriteMicroUsdPerMTok: z.number().int().nonnegative().optional(),
});
export type ModelPrice = z.infer<typeof ModelPrice>;

/** Default limits from the config, used where a run's input leaves a limit out. */
export const DefaultLimits = z.object({
  maxTurns: z.number().optional(),
  maxTokens: z.number().optional(),
  maxCostUsd: z.number().optional(),
  maxToolCalls: z.number().optional(),
  /** Seconds from the run's start to its default deadline. */
  maxDurationSeconds: z.number().optional(),
  synthesisReserve: SynthesisReserve.optional(),
});
export type DefaultLimits = z.infer<typeof DefaultLimits>;

/** When the effective dialogue is summarised, and when a run continues as new. */
const CompactionSettings = z.object({
  thresholdTokens: z.number().int().positive(),
  keepRecentTurns: z.number().int().positive(),
  continueAsNewAfterEvents: z.number().int().positive(),
});
export type CompactionSettings = z.infer<typeof CompactionSettings>;

/** Size budgets of what a run writes to history, in UTF-8 bytes. */
export const PayloadLimits = z.object({
  /** One model answer, tool result, child output, background, interjection or hook answer. */
  maxTextBytes: z.number().int().positive(),
  /** One model-call input (messages and tool schemas). Past it the run compacts, or fails if that cannot help. */
  maxInputBytes: z.number().int().positive(),
});
export type PayloadLimits = z.infer<typeof PayloadLimits>;

/**
 * After how many failed attempts of a kind on one model a call moves on to the next of its models: rate limited (429),
 * a server error (5xx, an unreadable answer), too slow (no answer in time), unreachable.
 */
export const FallbackAfter = z.strictObject({
  rateLimited: z.number().int().min(1).max(100),
  serverError: z.number().int().min(1).max(100),
  timeout: z.number().int().min(1).max(100),
  unreachable: z.number().int().min(1).max(100),
});
export type FallbackAfter = z.infer<typeof FallbackAfter>;

/** The models a run's calls move on to, in order, when its own keeps failing; each priced at its own. */
export const ModelFallback = z.strictObject({
  models: z
    .array(
      z.strictObject({
        model: z.string().min(1),
        price: ModelPrice,
        /** The task queue its calls go to (its provider's); absent: the run's own. */
        taskQueue: z.string().min(1).optional(),
      }),
    )
    .min(1)
    .max(5),
  after: FallbackAfter,
});
export type ModelFallback = z.infer<typeof ModelFallback>;

/**
 * How a run retries a failed model call: backoff doubling from 1 s up to `maxIntervalSeconds` for `attempts` attempts
 * in all; an endpoint that limits the rate (429) is waited on as it asks, for up to `rateLimitedSeconds` in all,
 * without using up the attempts.
 */
export const ModelRetry = z.strictObject({
  attempts: z.number().int().min(1).max(100),
  maxIntervalSeconds: z.number().min(1).max(600),
  rateLimitedSeconds: z.number().min(0).max(3600),
});
export type ModelRetry = z.infer<typeof ModelRetry>;

/** Result of `resolveRun`: the run's composition, frozen for its whole life. */
export const ResolveRunResult = z.object({
  preset: z.string(),
  /** Content hash of the preset definition in force. */
  presetRevision: z.string(),
  /** The resolved definition (persona, skills, tools), carried to implicit children; the system prompt is rendered from it. */
  presetDefinition: Preset,
  model: z.string(),
  effort: z.string().nullable(),
  scopes: z.array(z.string()),
  /** Tools the run may use: the preset's tools whose scopes the run holds (names and scopes; see `RunTool`). */
  tools: z.array(RunTool),
  price: ModelPrice,
  defaultLimits: DefaultLimits,
  /** Absent for a child that inherited its parent's composition and may not delegate (it never reads them). */
  delegation: DelegationSettings.optional(),
  /** Hooks configured for child lifecycle events; absent as with `delegation`. */
  hooks: z.array(HookSpec).optional(),
  /** Compaction and continue-as-new settings. */
  compaction: CompactionSettings,
  /** Size budgets of what the run writes to history; absent: the defaults (an inheriting child leaves them out). */
  payloads: PayloadLimits.optional(),
  /** How failed model calls are retried; absent: the defaults. */
  modelRetry: ModelRetry.optional(),
  /**
   * The tenant as metrics tag it: the run's tenant when the config names it, `other` for any other string a caller
   * sent (a label's values stay as few as the config's tenants); absent for a run without a tenant.
   */
  tenantLabel: z.string().optional(),
  /** Which of its calls wait for approval; absent: none. */
  approvals: ApprovalPolicy.optional(),
  /** The task queue its model calls go to, shared by the fleet's workers; absent: the run's own queue. */
  modelTaskQueue: z.string().min(1).optional(),
  /** The models its calls move on to when `model` keeps failing; absent: none. */
  fallback: ModelFallback.optional(),
});
export type ResolveRunResult = z.infer<typeof ResolveRunResult>;

/**
 * What a child without a role of its own takes from its parent's composition, carried in its input so it
 * starts without a look-up; the rest (preset, model, scopes) is in the input already. `delegation` and `hooks` only
 * for a child that may delegate.
 */
export const InheritedComposition = ResolveRunResult.pick({
  price: true,
  defaultLimits: true,
  delegation: true,
  hooks: true,
  compaction: true,
  payloads: true,
  modelRetry: true,
  tenantLabel: true,
  modelTaskQueue: true,
  fallback: true,
})
  .extend({
    /** Absent: none. */
    effort: z.string().optional(),
    /** Names only for a child that may not delegate (it never narrows a grant with their scopes). */
    tools: z.array(z.union([z.string(), RunTool])),
  })
  .strict();
export type InheritedComposition = z.infer<typeof InheritedComposition>;
