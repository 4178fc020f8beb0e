/**
 * What both demos run on: the model (a real endpoint when OPENAI_* is set, else the offline scripted one), Temporal
 * (TEMPORAL_ADDRESS, else an embedded dev server persisted under .deputy/), a worker and a client. Delegation is on
 * unless AGENT_DELEGATION_ENABLED=false says otherwise, activated on evidence recorded on the server (evidence.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { connectTemporal } from '../client/connect.js';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { oneLineLogger } from '../worker/log.js';
import { DeputyClient } from '../client/client.js';
import { deputyDataConverter } from '../codec/aes-gcm.js';
import { loadTree } from '../client/inspect.js';
import { renderTree } from '../client/tree.js';
import { safeStrings, terminalStyle } from '../cli/style.js';
import { loadConfig, readEnv, type DeputyEnv } from '../config/load.js';
import type { DeputyConfig } from '../config/schema.js';
import { PROJECT_ROOT } from '../testing/temporal-cli.js';
import { persistedDatabase, serveUi, type ServedUi } from './ui.js';
import { ScriptedModelServer } from '../testing/scripted-model.js';
import { type ScriptRule } from '../testing/script.js';
import { createDeputyWorker } from '../worker/factory.js';
import { runtimeTelemetry } from '../ops/metrics.js';
import { deputyTracing } from '../ops/tracing.js';
import { bundleDeputyWorkflows } from '../worker/bundle.js';
import { demoEvidence } from './evidence.js';

/** A demo's running environment, handed to its body. */
export interface DemoEnvironment {
  deputy: DeputyClient;
  env: DeputyEnv;
  config: DeputyConfig;
  /** True when a real model endpoint is configured. */
  live: boolean;
  /** Temporal UI's base URL. */
  uiBase: string;
}

/** Sets everything up, prints where it runs (`say`), runs `body` with a worker polling, then tears it all down. */
export async function withDemoEnvironment(
  script: ScriptRule[],
  body: (demo: DemoEnvironment) => Promise<void>,
  say: (line: string) => void = console.log,
  /** Changes the loaded config (the MCP demo adds its server and preset). */
  adjust: (config: DeputyConfig) => DeputyConfig = (config) => config,
): Promise<void> {
  const telemetryOptions = runtimeTelemetry();
  Runtime.install({ logger: oneLineLogger('WARN'), ...(telemetryOptions && { telemetryOptions }) });
  const env = readEnv();
  const config = adjust(
    loadConfig({
      ...env,
      configPath: env.configPath ?? join(PROJECT_ROOT, 'deputy.config.yaml'),
      delegationEnabled: env.delegationEnabled ?? true,
    }),
  );
  const live = env.openaiApiKey !== undefined || env.openaiBaseUrl !== undefined;

  let scripted: ScriptedModelServer | undefined;
  if (live) {
    say(`model: ${config.model} at ${env.openaiBaseUrl ?? 'https://api.openai.com/v1'} (live: OPENAI_* is set)`);
  } else {
    // Billing as a provider with Deputy's tokenizer would, so the figures shown are the run's real size.
    scripted = await ScriptedModelServer.start(script, { behaviour: { usage: 'counted' } });
    say(`model: offline scripted model at ${scripted.url} (set OPENAI_API_KEY or OPENAI_BASE_URL for a real one)`);
  }

  let served: ServedUi | undefined;
  let address = process.env.TEMPORAL_ADDRESS;
  let uiBase: string;
  try {
    if (address) {
      uiBase = process.env.TEMPORAL_UI_URL ?? 'http://localhost:8233';
      say(`temporal: ${address} (TEMPORAL_ADDRESS)`);
    } else {
      say('temporal: starting an embedded dev server …');
      served = await serveUi(process.env, say);
      address = served.server.address;
      uiBase = served.uiBase;
      say(`temporal: dev server at ${address}, persisted to ${persistedDatabase()}, UI at ${uiBase}`);
      if (served.codecEndpoint) say('codec: Temporal UI decodes payloads through a local codec server');
    }
    // The client's connection first: an address where nothing answers is said in a line within seconds.
    const clientConnection = await connectTemporal(address);
    const connection = await NativeConnection.connect({ address });
    // With DEPUTY_CODEC_KEYS set, the demo's runs are encrypted in history too.
    const dataConverter = deputyDataConverter();
    const deputy = new DeputyClient(
      new Client({
        connection: clientConnection,
        namespace: env.temporalNamespace,
        ...(dataConverter && { dataConverter }),
      }),
      { taskQueue: env.taskQueue },
    );
    try {
      if (served) await settleInterrupted(deputy.temporal, say);
      say('worker: bundling workflows and starting …');
      const tracing = deputyTracing();
      const shared = {
        workflowBundle: await bundleDeputyWorkflows({ tracing }),
        tracing,
        namespace: env.temporalNamespace,
        ...(dataConverter && { workerOptions: { dataConverter } }),
      };
      // Delegation as the design has it: on evidence this server's records back (the operator's explicit
      // `activation: unconditional`, or tenants of its own, are left as the config says).
      const evidenceFirst = config.delegation.enabled && config.delegation.activation === 'evidence' && !config.tenants;
      const activated: DeputyConfig = evidenceFirst
        ? {
            ...config,
            delegation: {
              ...config.delegation,
              evidence: await demoEvidence({ client: deputy.temporal, connection, config, worker: shared, say }),
            },
          }
        : config;
      const worker = await createDeputyWorker({
        ...shared,
        client: deputy.temporal,
        connection,
        taskQueue: env.taskQueue,
        childTaskQueue: env.childTaskQueue,
        config: activated,
        model: live
          ? { apiKey: env.openaiApiKey, baseURL: env.openaiBaseUrl }
          : { apiKey: 'offline', baseURL: scripted!.url },
      });
      await worker.runUntil(() => body({ deputy, env, config: activated, live, uiBase }));
    } finally {
      await clientConnection.close();
      await connection.close();
    }
  } finally {
    await scripted?.close();
    await served?.close();
  }
}

/**
 * Ends the runs an interrupted demo left running on the persisted server, before this demo's worker starts: a worker
 * would resume them, and they would take this demo's scripted replies as their own. The lock on the state directory
 * means nobody else is driving them.
 */
async function settleInterrupted(client: Client, say: (line: string) => void): Promise<void> {
  const running: { workflowId: string; root: boolean }[] = [];
  for await (const run of client.workflow.list({ query: 'ExecutionStatus = "Running"' }))
    running.push({ workflowId: run.workflowId, root: run.parentExecution === undefined });
  const roots = running.filter((r) => r.root);
  for (const { workflowId } of roots) {
    const children = running.filter((r) => !r.root && r.workflowId.startsWith(`${workflowId}/`)).length;
    say(
      `found ${workflowId} still running from an interrupted demo: terminated it` +
        `${children > 0 ? ` and its ${children} running children` : ''}, so it cannot take this demo's replies`,
    );
  }
  for (const { workflowId } of [...roots, ...running.filter((r) => !r.root)]) {
    try {
      await client.workflow.getHandle(workflowId).terminate('interrupted demo, settled by the next npm run demo');
    } catch (err) {
      // A child ends with its parent; one already gone needs nothing more.
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
}

/** Temporal UI's page of a run. */
export function runUrl(demo: DemoEnvironment, workflowId: string): string {
  return `${demo.uiBase}/namespaces/${demo.env.temporalNamespace}/workflows/${encodeURIComponent(workflowId)}`;
}

/** The tree of a finished run, once visibility has caught up with its children's last status (within moments). */
export async function settledTree(deputy: DeputyClient, workflowId: string): Promise<string> {
  const draw = async () => renderTree(safeStrings(await loadTree(deputy.temporal, workflowId)), terminalStyle());
  let tree = await draw();
  for (let i = 0; i < 20 && /running|starting|waiting/.test(tree); i++) {
    await sleep(250);
    tree = await draw();
  }
  return tree;
}
