/**
 * Presets and a run's composition: a preset's revision, and what a run runs with, resolved from the config (preset,
 * persona with skills, model, price, tools and scopes). Pure: the caller passes the config and the worker's tools.
 * It reads the config, so it sits with it, a floor above the rules it applies.
 */
import { createHash } from 'node:crypto';
import { CompositionError } from '../contract/errors.js';
import { FAILURE } from '../contract/failures.js';
import type {
  ResolvePresetsInput,
  ResolvePresetsResult,
  ResolveRunInput,
  ResolveRunResult,
} from '../contract/activities.js';
import type { ModelFallback, ModelRetry } from '../contract/composition.js';
import { type DelegationSettings } from '../contract/delegation.js';
import { toToolSpec, type RunTool, type ToolDefinition } from '../contract/tools.js';
import { configEntry, type DeputyConfig, type Preset } from './schema.js';
import { composeRun, type CompositionSource } from '../rules/composition.js';
import { DEFAULT_MODEL_RETRY } from '../rules/model-retry.js';
import { modelPrice } from '../rules/usage.js';
import { resolvePolicy } from '../rules/approvals.js';

/** A preset's revision: a short content hash of its definition. */
export function presetRevision(preset: Preset): string {
  const canonical = JSON.stringify(preset, Object.keys(preset).sort());
  return createHash('sha256')
    .update(JSON.stringify([canonical, preset.skills, preset.tools]))
    .digest('hex')
    .slice(0, 12);
}

/** Resolves what a run runs with; the result is recorded in history and never changes for that run. */
export function resolveComposition(
  config: DeputyConfig,
  tools: ReadonlyMap<string, ToolDefinition>,
  input: ResolveRunInput,
  options: { childTaskQueue: string; tenantActivated?: boolean },
): ResolveRunResult {
  const presetId = input.presetDefinition?.id ?? input.preset ?? config.defaultPreset;
  // A definition carried in the input (a parent's exact composition) wins over the registry, even if the
  // registry has since changed or dropped that preset.
  const registered = config.presets.find((p) => p.id === presetId);
  const given = input.presetDefinition ?? registered;
  // A caller's definition may narrow what the config grants, never widen it: its tools are kept only where the
  // config's preset of that id (or, when it has none, one of the config's presets) has them too.
  const grantable = new Set((registered ? [registered] : config.presets).flatMap((p) => p.tools));
  const preset =
    given && input.presetFromCaller ? { ...given, tools: given.tools.filter((name) => grantable.has(name)) } : given;
  if (!preset) {
    const known = config.presets.map((p) => p.id).join(', ');
    throw new CompositionError(`unknown preset "${presetId}"; the config defines: ${known}`, FAILURE.UnknownPreset);
  }
  const model = input.model ?? preset.model ?? config.model;
  const price = configEntry(config.prices, model);
  if (!price) {
    throw new CompositionError(
      `no price for model "${model}"; add it under prices in DEPUTY_CONFIG so cost limits can hold`,
      FAILURE.UnknownModelPrice,
    );
  }
  const fallback = fallbackOf(config, preset, model, input.model);
  // What a caller names is kept only where the config grants it: the config is the ceiling, not a default to raise.
  const ceiling = config.grantableScopes ?? config.defaultScopes;
  const scopes = input.scopes?.filter((scope) => ceiling.includes(scope)) ?? config.defaultScopes;
  const { synthesisReserve, ...limits } = config.limits;
  const tenant = input.tenant === undefined ? undefined : configEntry(config.tenants, input.tenant);
  const delegation = delegationSettingsOf(config, input, options, tenant);
  const source: CompositionSource = {
    tool: (name) => {
      const tool = tools.get(name);
      return tool && asRunTool(tool);
    },
    price: modelPrice(price),
    defaultLimits: { ...limits, synthesisReserve },
    delegation,
    compaction: config.compaction,
    payloads: config.payloads,
    ...(!sameRetry(config.modelRetry, DEFAULT_MODEL_RETRY) && { modelRetry: config.modelRetry }),
    hooks: config.hooks.map(({ name, events, timeoutSeconds, onError }) => ({ name, events, timeoutSeconds, onError })),
    ...(input.tenant !== undefined && { tenantLabel: tenant ? input.tenant : 'other' }),
    ...withQueue(config, model, 'modelTaskQueue'),
    ...(fallback && { fallback }),
  };
  const { composition } = composeRun(source, {
    preset,
    revision: presetRevision(preset),
    model,
    effort: input.effort,
    scopes,
    granted: input.allowedTools,
    depth: input.depth ?? 0,
  });
  const approvals = resolvePolicy(
    config.approvals,
    preset,
    composition.tools.map(({ name }) => ({ name, destructive: tools.get(name)?.destructive === true })),
  );
  return { ...composition, ...(approvals && { approvals }) };
}

/**
 * The task queue calls to `model` go to, as `{ [key]: queue }`: its provider's when the config names one for it (none:
 * the run's own queue), else the default endpoint's (`modelCalls`); nothing on the run's own queue.
 */
function withQueue<K extends string>(config: DeputyConfig, model: string, key: K): { [k in K]?: string } {
  const provider = Object.values(config.providers).find((p) => p.models.includes(model));
  const taskQueue = provider ? provider.taskQueue : config.modelCalls?.taskQueue;
  return taskQueue === undefined ? {} : ({ [key]: taskQueue } as { [k in K]?: string });
}

/**
 * The models a run's calls move on to after `model`: its preset's, or the config's for the config's model; none when
 * the run or its brief named a model of its own. Each is priced from the config, like the run's own.
 */
function fallbackOf(
  config: DeputyConfig,
  preset: Preset,
  model: string,
  named: string | undefined,
): ModelFallback | undefined {
  const ownChainModel = preset.model ?? config.model;
  if (named !== undefined && named !== ownChainModel) return undefined;
  const names = preset.fallbackModels ?? (preset.model === undefined ? config.fallbackModels : []);
  const models = [...new Set(names)]
    .filter((name) => name !== model)
    .map((name) => {
      const price = configEntry(config.prices, name);
      if (!price) {
        throw new CompositionError(
          `no price for fallback model "${name}"; add it under prices in DEPUTY_CONFIG so cost limits can hold`,
          FAILURE.UnknownModelPrice,
        );
      }
      return {
        model: name,
        price: modelPrice(price),
        ...withQueue(config, name, 'taskQueue'),
      };
    });
  return models.length > 0 ? { models, after: config.modelFallback } : undefined;
}

/** What a run may delegate: the config's settings, switched on only for an activated tenant, with its admission cap. */
function delegationSettingsOf(
  config: DeputyConfig,
  input: ResolveRunInput,
  options: { childTaskQueue: string; tenantActivated?: boolean },
  tenant: { maxLiveChildren?: number; admissionSweepSeconds: number } | undefined,
): DelegationSettings {
  // The global flag is the master switch; the run's tenant (or the default tenant) must be activated too.
  const enabled = config.delegation.enabled && (options.tenantActivated ?? true);
  const { activation, evidence: _evidence, ...settings } = config.delegation;
  return {
    ...settings,
    enabled,
    ...(enabled && activation === 'unconditional' && { activation }),
    childTaskQueue: options.childTaskQueue,
    ...(tenant?.maxLiveChildren && {
      admission: {
        tenant: input.tenant!,
        maxLiveChildren: tenant.maxLiveChildren,
        sweepSeconds: tenant.admissionSweepSeconds,
      },
    }),
  };
}

/** A worker's tool as a run records it: whole when its source can change while runs are live, else by name. */
function asRunTool(tool: ToolDefinition): RunTool {
  return tool.recordSpec
    ? {
        ...toToolSpec(tool),
        ...(tool.session !== undefined && { session: tool.session }),
        ...(tool.retry !== undefined && { retry: tool.retry }),
        ...(tool.source !== undefined && { source: tool.source }),
      }
    : { name: tool.name, scopes: [...tool.scopes] };
}

/** Looks up presets named by briefs: each one's tools, or an error naming the unknown id. */
export function resolvePresetTools(config: DeputyConfig, input: ResolvePresetsInput): ResolvePresetsResult {
  const known = config.presets.map((p) => p.id);
  return {
    presets: input.ids.map((id) => {
      const preset = config.presets.find((p) => p.id === id);
      return preset
        ? {
            id,
            ok: true as const,
            definition: preset,
            revision: presetRevision(preset),
          }
        : { id, ok: false as const, error: `unknown role "${id}"; the presets are: ${known.join(', ')}` };
    }),
  };
}

/** Whether two retry policies are the same (the default one is not written into every run's history). */
function sameRetry(a: ModelRetry, b: ModelRetry): boolean {
  return (
    a.attempts === b.attempts &&
    a.maxIntervalSeconds === b.maxIntervalSeconds &&
    a.rateLimitedSeconds === b.rateLimitedSeconds
  );
}
