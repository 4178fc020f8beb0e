/**
 * The config file's schema: prices, presets, limits, delegation, compaction, payloads and hooks.
 * Workflow-safe (zod only); the Node loader that reads the file and the environment is `load.ts`.
 */
import { z } from 'zod';
import { ConfigError } from '../contract/errors.js';
import { HookConfig } from '../contract/hooks.js';
import { Preset } from '../contract/preset.js';
import { FallbackAfter, ModelRetry } from '../contract/composition.js';
import { SynthesisReserve } from '../contract/run.js';
import { BriefLimits, ChildSynthesisReserve, ContextMode } from '../contract/delegation.js';
import { DEFAULT_CHILD_SYNTHESIS_RESERVE } from '../rules/budget.js';
import { DEFAULT_PAYLOAD_LIMITS } from '../rules/payloads.js';
import { DEFAULT_FALLBACK_AFTER, DEFAULT_MODEL_RETRY } from '../rules/model-retry.js';
import { MAX_DEPTH_CEILING } from '../rules/children.js';
import { describeIssues } from '../rules/zod-issues.js';
import { McpServers } from './mcp.js';
import { ApprovalsConfig } from '../contract/approvals.js';

/**
 * A model's price in USD per million tokens, as its provider bills: input, input served from the provider's prompt
 * cache, input written to it (where a provider bills that), and output (reasoning included). A cache price left out
 * is the input price: nothing is assumed cheaper than the config says.
 */
export const Price = z.strictObject({
  inputPerMTokUsd: z.number().nonnegative(),
  outputPerMTokUsd: z.number().nonnegative(),
  cachedInputPerMTokUsd: z.number().nonnegative().optional(),
  cacheWritePerMTokUsd: z.number().nonnegative().optional(),
});
export type Price = z.infer<typeof Price>;

export { Preset };

/** How a call's answer cap is sent to the endpoint (see `capParameter`). */
export const CapParameter = z.enum(['auto', 'max_completion_tokens', 'max_tokens', 'both']);
export type CapParameter = z.infer<typeof CapParameter>;

/** Default limits; a run's own `limits` override each. */
const DefaultLimitsConfig = z.strictObject({
  maxTurns: z.number().int().positive().default(20),
  maxTokens: z.number().int().positive().default(200_000),
  maxCostUsd: z.number().positive().default(1),
  maxToolCalls: z.number().int().nonnegative().default(40),
  maxDurationSeconds: z.number().int().positive().default(1800),
  synthesisReserve: SynthesisReserve.default({ tokens: 2000, costUsd: 0.01 }),
});

const CHILD_DEFAULTS = { maxTurns: 10, maxTokens: 50_000, maxCostUsd: 0.25, maxToolCalls: 20 };

export const DEFAULT_PERSONA =
  'You are Deputy, a careful assistant. Use the tools you are given when they help, then answer concisely.';

/**
 * A task queue of model calls the fleet shares: Temporal holds `requestsPerSecond` for the whole queue and
 * `perTenantRequestsPerSecond` for each fairness key (a tenant, or a tree without one), set by each worker at its start.
 */
const ModelQueue = z.strictObject({
  taskQueue: z.string().min(1),
  requestsPerSecond: z.number().positive().optional(),
  perTenantRequestsPerSecond: z.number().positive().optional(),
});

/** The config file's schema; `{}` is a valid config. */
export const DeputyConfig = z
  .strictObject({
    /** Model used when neither the run nor its preset names one. */
    model: z.string().min(1).default('gpt-4.1-mini'),
    /**
     * The models a call moves on to, in order, when `model` keeps failing (a preset with a model of its own names its
     * own, `fallbackModels`); each needs a price. `modelFallback` says after how many failed attempts of a kind.
     */
    fallbackModels: z.array(z.string().min(1)).max(5).default([]),
    modelFallback: FallbackAfter.extend({
      rateLimited: FallbackAfter.shape.rateLimited.default(DEFAULT_FALLBACK_AFTER.rateLimited),
      serverError: FallbackAfter.shape.serverError.default(DEFAULT_FALLBACK_AFTER.serverError),
      timeout: FallbackAfter.shape.timeout.default(DEFAULT_FALLBACK_AFTER.timeout),
      unreachable: FallbackAfter.shape.unreachable.default(DEFAULT_FALLBACK_AFTER.unreachable),
    }).prefault({}),
    /** Prices per model in USD per million tokens. */
    prices: z.record(z.string(), Price).default({
      'gpt-4.1-mini': { inputPerMTokUsd: 0.4, cachedInputPerMTokUsd: 0.1, outputPerMTokUsd: 1.6 },
      'gpt-4.1': { inputPerMTokUsd: 2, cachedInputPerMTokUsd: 0.5, outputPerMTokUsd: 8 },
      'gpt-4o-mini': { inputPerMTokUsd: 0.15, cachedInputPerMTokUsd: 0.075, outputPerMTokUsd: 0.6 },
    }),
    /**
     * How long a model request may go without a token of its answer (the first one included: keep-alives and usage
     * reports do not count); past it, the request is abandoned and retried. Raise it for models that think long
     * before they write.
     */
    modelTimeoutSeconds: z.number().positive().max(3600).default(120),
    /**
     * How a failed model call is retried: an endpoint down, answering 5xx or too slow gets `attempts` attempts with
     * backoff from 1 s to `maxIntervalSeconds`; one that limits the rate (429) is waited on as it asks, for up to
     * `rateLimitedSeconds` in all. The run's status says which attempt it is on and why.
     */
    modelRetry: ModelRetry.extend({
      attempts: ModelRetry.shape.attempts.default(DEFAULT_MODEL_RETRY.attempts),
      maxIntervalSeconds: ModelRetry.shape.maxIntervalSeconds.default(DEFAULT_MODEL_RETRY.maxIntervalSeconds),
      rateLimitedSeconds: ModelRetry.shape.rateLimitedSeconds.default(DEFAULT_MODEL_RETRY.rateLimitedSeconds),
    }).prefault({}),
    /**
     * Which parameter carries a call's answer cap to the endpoint: `max_completion_tokens` (OpenAI; its
     * reasoning models refuse `max_tokens`), `max_tokens` (servers that know only that), `both`, or `auto`
     * (`max_completion_tokens` on OpenAI's own API, `both` elsewhere). An optimisation only: Deputy counts the
     * streamed answer and stops it at the cap whatever the endpoint reads. `capParameterByModel` overrides it per model.
     */
    capParameter: CapParameter.default('auto'),
    capParameterByModel: z.record(z.string(), CapParameter).optional(),
    /**
     * How many times Deputy's own count of a call's input the endpoint may bill it, at most: a call holds its input
     * at this factor (or the tokenizer's own margin, 1.05 for models it knows and 1.25 for others, if larger), so an
     * endpoint whose tokenizer counts more than Deputy's never bills past what the call held. `inputCountFactorByModel`
     * overrides it per model.
     */
    inputCountFactor: z.number().min(1).max(10).optional(),
    inputCountFactorByModel: z.record(z.string(), z.number().min(1).max(10)).optional(),
    /**
     * Model calls on a task queue of their own, which every worker of the fleet polls beside its own queues: Temporal
     * holds the endpoint's rate for all of them at once, `requestsPerSecond` for the whole queue and
     * `perTenantRequestsPerSecond` for each fairness key (a tenant, or a tree without one), set on the queue by each
     * worker at its start and read back. Read at the worker's start.
     */
    modelCalls: z.strictObject(ModelQueue.shape).optional(),
    /**
     * Endpoints besides the default one (`OPENAI_BASE_URL`, `OPENAI_API_KEY`), by name: the calls to the models each
     * lists go to its `baseUrl`, with the key in the worker's environment variable `apiKeyEnv` (never in the config,
     * never in a run's history), on its own task queue and rate when it names one. Read at the worker's start.
     */
    providers: z
      .record(
        z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'use lowercase letters, digits, - and _'),
        z.strictObject({
          baseUrl: z.url({ protocol: /^https?$/ }),
          apiKeyEnv: z
            .string()
            .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'the name of an environment variable (its value is the key)')
            .optional(),
          models: z.array(z.string().min(1)).min(1),
          ...ModelQueue.partial({ taskQueue: true }).shape,
        }),
      )
      .default({}),
    /** Preset used when a run names none. */
    defaultPreset: z.string().default('assistant'),
    /** Scopes a run holds when its input names none. */
    defaultScopes: z.array(z.string()).default(['tools.calc', 'tools.notes']),
    /**
     * The most a caller may ask for: scopes a run's input names are kept only where they are listed here (default:
     * `defaultScopes`), so a caller narrows what the config grants and never raises it. Add `run.delegate` here to
     * let callers ask for delegation without giving it to every run.
     */
    grantableScopes: z.array(z.string()).optional(),
    limits: DefaultLimitsConfig.default(DefaultLimitsConfig.parse({})),
    presets: z.array(Preset).default([
      {
        id: 'assistant',
        persona: DEFAULT_PERSONA,
        tools: ['calculate', 'search_notes'],
        skills: {},
        contextRendering: 'block',
      },
    ]),
    delegation: z
      .strictObject({
        enabled: z.boolean().default(false),
        /**
         * `evidence`: delegation is offered only where evidence passes — each named tenant's, or with no `tenants`,
         * the default tenant's (`evidence` below). `unconditional`: the flag alone decides, and the worker says so.
         */
        activation: z.enum(['evidence', 'unconditional']).default('evidence'),
        /** The evidence files of the default tenant: runs without a tenant, when the config names no tenants. */
        evidence: z.array(z.string().min(1)).default([]),
        maxDepth: z
          .number()
          .int()
          .nonnegative()
          .max(MAX_DEPTH_CEILING, `at most ${MAX_DEPTH_CEILING}: deeper trees are not supported (docs/delegation.md)`)
          .default(1),
        maxBriefsPerInvocation: z.number().int().positive().max(3).default(3),
        maxChildrenPerRun: z.number().int().positive().default(8),
        /** Tools no child gets, besides those none ever gets (`skill_manage`): listing fewer removes none of those. */
        neverInherit: z.array(z.string()).default(['skill_manage']),
        /** Limits a child gets when its brief asks for none; always capped by the parent's remaining. */
        childDefaults: BriefLimits.default(CHILD_DEFAULTS),
        /**
         * What each child keeps for its final answer: a fraction of its limits with a floor. A brief whose limit
         * cannot cover it is refused, so no child starts with its tools already gone.
         */
        childSynthesisReserve: ChildSynthesisReserve.prefault(DEFAULT_CHILD_SYNTHESIS_RESERVE),
        /** The context a brief without `context` gets; a preset's `defaultContext` overrides it. */
        defaultContext: ContextMode.optional(),
      })
      .default({
        enabled: false,
        activation: 'evidence',
        evidence: [],
        maxDepth: 1,
        maxBriefsPerInvocation: 3,
        maxChildrenPerRun: 8,
        neverInherit: ['skill_manage'],
        childDefaults: CHILD_DEFAULTS,
        childSynthesisReserve: DEFAULT_CHILD_SYNTHESIS_RESERVE,
      }),
    /**
     * Tenants and the evidence files that activate delegation for each. Absent: runs belong to the default tenant
     * (`delegation.evidence`). Present: a run is offered delegation only when its tenant is named here and passes.
     */
    tenants: z
      .record(
        z.string(),
        z.strictObject({
          evidence: z.array(z.string().min(1)).min(1),
          /** At most this many live children across all of the tenant's runs; absent: no cap. */
          maxLiveChildren: z.number().int().positive().optional(),
          /** How often slots held by runs that closed without giving them back are reclaimed. */
          admissionSweepSeconds: z.number().int().positive().default(30),
        }),
      )
      .optional(),
    /** When the effective dialogue is summarised, and when a run continues as new. */
    compaction: z
      .strictObject({
        /** Summarise the oldest turns once the effective dialogue passes this many (estimated) tokens. */
        thresholdTokens: z.number().int().positive().default(60_000),
        /** Turns that always stay verbatim. */
        keepRecentTurns: z.number().int().positive().default(4),
        /** Continue as new past this many history events, or when Temporal suggests it, whichever comes first. */
        continueAsNewAfterEvents: z.number().int().positive().default(8000),
      })
      .default({ thresholdTokens: 60_000, keepRecentTurns: 4, continueAsNewAfterEvents: 8000 }),
    /** Size budgets of what runs write to Temporal history (its default payload limit is 2 MB). */
    payloads: z
      .strictObject({
        /** One model answer, tool result, child output, background, interjection or hook answer; longer is cut. */
        maxTextBytes: z.number().int().min(1024).max(1_500_000).default(DEFAULT_PAYLOAD_LIMITS.maxTextBytes),
        /** One model-call input; past it the run compacts, and fails if that cannot help. */
        maxInputBytes: z.number().int().min(4096).max(1_800_000).default(DEFAULT_PAYLOAD_LIMITS.maxInputBytes),
      })
      .default({ ...DEFAULT_PAYLOAD_LIMITS }),
    /** Hooks run at points of a child's life: HTTP webhooks or functions registered with the worker. */
    hooks: z.array(HookConfig).default([]),
    /** MCP servers whose tools presets can offer, by name: `<server>_<tool>` unless a server sets its `prefix`. */
    mcpServers: McpServers.default({}),
    /**
     * Nexus front doors for callers outside the namespace: each serves Deputy's Nexus service for one tenant on its
     * own task queue, the one that tenant's endpoint targets (`temporal operator nexus endpoint create
     * --target-task-queue`). Read when the worker starts.
     */
    frontDoors: z.array(z.strictObject({ tenant: z.string().min(1), taskQueue: z.string().min(1) })).default([]),
    /**
     * Calls that wait for a decision from outside the models before they run: per tool, on delegations above a
     * cost, with a deadline and what an expired request gets; `approvers` makes every decision carry proof.
     */
    approvals: ApprovalsConfig.optional(),
  })
  .superRefine((config, ctx) => {
    const ids = new Set<string>();
    config.presets.forEach((preset, i) => {
      if (ids.has(preset.id))
        ctx.addIssue({ code: 'custom', path: ['presets', i, 'id'], message: `duplicate preset id "${preset.id}"` });
      ids.add(preset.id);
      if (preset.model && !(preset.model in config.prices))
        ctx.addIssue({
          code: 'custom',
          path: ['presets', i, 'model'],
          message: `no price for model "${preset.model}"; add it under prices`,
        });
      preset.fallbackModels?.forEach((model, j) => {
        if (!(model in config.prices))
          ctx.addIssue({
            code: 'custom',
            path: ['presets', i, 'fallbackModels', j],
            message: `no price for fallback model "${model}"; add it under prices`,
          });
      });
    });
    const servedBy = new Map<string, string>();
    for (const [name, provider] of Object.entries(config.providers)) {
      provider.models.forEach((model, j) => {
        const path = ['providers', name, 'models', j];
        if (!(model in config.prices))
          ctx.addIssue({ code: 'custom', path, message: `no price for model "${model}"; add it under prices` });
        const other = servedBy.get(model);
        if (other !== undefined)
          ctx.addIssue({ code: 'custom', path, message: `model "${model}" is served by provider "${other}" already` });
        servedBy.set(model, name);
      });
      if (provider.taskQueue === undefined && (provider.requestsPerSecond ?? provider.perTenantRequestsPerSecond))
        ctx.addIssue({
          code: 'custom',
          path: ['providers', name, 'taskQueue'],
          message: 'a rate needs a task queue of its own to hold it: name one',
        });
    }
    config.fallbackModels.forEach((model, j) => {
      if (!(model in config.prices))
        ctx.addIssue({
          code: 'custom',
          path: ['fallbackModels', j],
          message: `no price for fallback model "${model}"; add it under prices`,
        });
    });
    const hookNames = new Set<string>();
    config.hooks.forEach((hook, i) => {
      if (hookNames.has(hook.name))
        ctx.addIssue({ code: 'custom', path: ['hooks', i, 'name'], message: `duplicate hook name "${hook.name}"` });
      hookNames.add(hook.name);
    });
    if (!ids.has(config.defaultPreset))
      ctx.addIssue({
        code: 'custom',
        path: ['defaultPreset'],
        message: `preset "${config.defaultPreset}" is not defined under presets`,
      });
  });
export type DeputyConfig = z.infer<typeof DeputyConfig>;

/** Validates a parsed config object; throws `ConfigError` with one line per problem. */
export function parseConfig(raw: unknown, source = 'config'): DeputyConfig {
  const parsed = DeputyConfig.safeParse(raw ?? {});
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error), source);
  return parsed.data;
}

/**
 * The entry `key` names in one of the config's tables (prices, tenants), or `undefined`: only the table's own keys
 * count, so a caller's `constructor` or `__proto__` never finds an inherited value.
 */
export function configEntry<T>(table: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return table !== undefined && Object.hasOwn(table, key) ? table[key] : undefined;
}
