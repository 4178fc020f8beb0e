/**
 * Deputy's configuration: the config file named by `DEPUTY_CONFIG` (JSON or YAML) plus the environment,
 * validated by zod once at start-up (schema in `schema.ts`). Every problem becomes one readable line.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { ConfigError } from '../contract/errors.js';
import { parseConfig, type DeputyConfig } from './schema.js';

/** Settings read from the environment. */
export interface DeputyEnv {
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  childTaskQueue: string;
  /** Never logged, never sent to a workflow. */
  openaiApiKey: string | undefined;
  openaiBaseUrl: string | undefined;
  model: string | undefined;
  configPath: string | undefined;
  delegationEnabled: boolean | undefined;
  /** `DEPUTY_WORKER_POLLS=model-calls`: the worker makes model calls only (see `DeputyWorkerOptions.modelCallsOnly`). */
  modelCallsOnly: boolean;
}

/** Reads and checks Deputy's environment variables. */
export function readEnv(env: NodeJS.ProcessEnv = process.env): DeputyEnv {
  const problems: string[] = [];
  const flag = env.AGENT_DELEGATION_ENABLED;
  if (flag !== undefined && flag !== '' && flag !== 'true' && flag !== 'false') {
    problems.push(`AGENT_DELEGATION_ENABLED: must be "true" or "false", got "${flag}"`);
  }
  const polls = env.DEPUTY_WORKER_POLLS || 'all';
  if (polls !== 'all' && polls !== 'model-calls') {
    problems.push(`DEPUTY_WORKER_POLLS: must be "all" or "model-calls", got "${polls}"`);
  }
  const baseUrl = env.OPENAI_BASE_URL || undefined;
  if (baseUrl !== undefined && !URL.canParse(baseUrl)) {
    problems.push(`OPENAI_BASE_URL: "${baseUrl}" is not a URL (example: https://api.openai.com/v1)`);
  }
  if (problems.length > 0) throw new ConfigError(problems, 'environment');
  return {
    temporalAddress: env.TEMPORAL_ADDRESS || 'localhost:7233',
    temporalNamespace: env.TEMPORAL_NAMESPACE || 'default',
    taskQueue: env.DEPUTY_TASK_QUEUE || 'deputy',
    childTaskQueue: env.DEPUTY_BACKGROUND_TASK_QUEUE || 'deputy-background',
    modelCallsOnly: polls === 'model-calls',
    openaiApiKey: env.OPENAI_API_KEY || undefined,
    openaiBaseUrl: baseUrl,
    model: env.DEPUTY_MODEL || undefined,
    configPath: env.DEPUTY_CONFIG || undefined,
    delegationEnabled: flag === 'true' ? true : flag === 'false' ? false : undefined,
  };
}

/**
 * The tools presets name that a worker with `tools` does not have (an MCP server's, by its prefix, it learns when the
 * server answers). Reads a config before or after validation alike, so a worker reports these with the file's other
 * problems in one round.
 */
export function unknownPresetTools(config: unknown, tools: ReadonlySet<string>): string[] {
  const { presets, mcpServers } = (typeof config === 'object' && config !== null ? config : {}) as {
    presets?: unknown;
    mcpServers?: unknown;
  };
  const prefixes = Object.entries(typeof mcpServers === 'object' && mcpServers !== null ? mcpServers : {}).map(
    ([name, server]) => {
      const prefix = (server as { prefix?: unknown } | null)?.prefix;
      return typeof prefix === 'string' ? prefix : `${name}_`;
    },
  );
  const fromMcp = (name: string) => prefixes.some((prefix) => prefix !== '' && name.startsWith(prefix));
  return (Array.isArray(presets) ? presets : []).flatMap((preset, i) => {
    const names = (preset as { tools?: unknown } | null)?.tools;
    return (Array.isArray(names) ? names : [])
      .filter((name): name is string => typeof name === 'string' && !tools.has(name) && !fromMcp(name))
      .map((name) => `presets.${i}.tools: unknown tool "${name}"; the worker has: ${[...tools].join(', ')}`);
  });
}

/**
 * Loads the config file (JSON or YAML) and applies the environment's overrides (`DEPUTY_MODEL`,
 * `AGENT_DELEGATION_ENABLED`). Given the worker's `tools`, a file that fails its schema also names the tools its
 * presets ask for and the worker lacks, so every problem shows at once.
 */
export function loadConfig(env: DeputyEnv, tools?: ReadonlySet<string>): DeputyConfig {
  let raw: unknown = {};
  if (env.configPath) {
    let text: string;
    try {
      text = readFileSync(env.configPath, 'utf8');
    } catch (err) {
      throw new ConfigError(
        [`DEPUTY_CONFIG: cannot read "${env.configPath}": ${(err as Error).message}`],
        'environment',
      );
    }
    // YAML is a superset of JSON, so this reads both. Warnings (an unknown tag …) are problems too: the file does not
    // say what its author meant.
    const document = parseDocument(text);
    // The parser's excerpt spans lines: the line at fault is quoted instead, so a problem stays one line.
    const lines = text.split('\n');
    const problems = [...document.errors, ...document.warnings].map((problem) => {
      const at = problem.linePos?.[0]?.line;
      const excerpt = at === undefined ? '' : (lines[at - 1] ?? '').trim().slice(0, 80);
      const said = problem.message.split('\n')[0]!.replace(/:$/, '');
      return `cannot parse: ${said}${excerpt ? ` (the line reads "${excerpt}")` : ''}`;
    });
    if (problems.length > 0) throw new ConfigError(problems, env.configPath);
    raw = document.toJS();
  }
  const source = env.configPath ?? 'built-in defaults';
  try {
    const applied = applyEnv(withEvidenceResolved(parseConfig(raw, source), env.configPath), env, source);
    sources.set(applied, source);
    return applied;
  } catch (err) {
    const missing = tools && err instanceof ConfigError ? unknownPresetTools(raw, tools) : [];
    if (missing.length > 0) throw new ConfigError([...(err as ConfigError).problems, ...missing], source);
    throw err;
  }
}

/** `config` with its evidence paths (each tenant's and the default tenant's) resolved against the config file's folder. */
function withEvidenceResolved(config: DeputyConfig, configPath: string | undefined): DeputyConfig {
  const base = configPath ? dirname(resolve(configPath)) : process.cwd();
  const tenants = config.tenants
    ? Object.fromEntries(
        Object.entries(config.tenants).map(([id, t]) => [
          id,
          { ...t, evidence: t.evidence.map((f) => resolve(base, f)) },
        ]),
      )
    : undefined;
  const delegation = { ...config.delegation, evidence: config.delegation.evidence.map((f) => resolve(base, f)) };
  return { ...config, delegation, ...(tenants && { tenants }) };
}

/** Where each loaded config came from, so a problem found later (by the worker) is headed with its file. */
const sources = new WeakMap<DeputyConfig, string>();

/** The file `config` was loaded from (or "built-in defaults"); "config" for one built in code. */
export function configSource(config: DeputyConfig): string {
  return sources.get(config) ?? 'config';
}

/** Applies environment overrides to a validated config and re-checks what they touch; `source` heads a problem. */
export function applyEnv(
  config: DeputyConfig,
  env: Pick<DeputyEnv, 'model' | 'delegationEnabled'>,
  source = 'config',
): DeputyConfig {
  const merged: DeputyConfig = {
    ...config,
    model: env.model ?? config.model,
    delegation: { ...config.delegation, enabled: env.delegationEnabled ?? config.delegation.enabled },
  };
  if (!(merged.model in merged.prices)) {
    throw new ConfigError(
      [`model: no price for "${merged.model}"; add it under prices (USD per million tokens)`],
      source,
    );
  }
  return merged;
}
