/**
 * `npm run demo`: runs a sample task end to end. Starts an embedded Temporal dev server (persisted under .deputy/)
 * unless TEMPORAL_ADDRESS is set, starts a worker, shows the run's progress, then prints the answer, usage, cost
 * and the run's Temporal UI URL. Offline (scripted model) unless OPENAI_API_KEY or OPENAI_BASE_URL is set.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { DeputyClient } from '../client/client.js';
import { loadConfig, readEnv } from '../config/load.js';
import { DEMO_SCRIPT, DEMO_TASK } from './script.js';
import { startDevServer, type DevServer } from '../testing/dev-server.js';
import { ConfigError } from '../contract/errors.js';
import { loadTree } from '../client/inspect.js';
import { freePort } from '../testing/ports.js';
import type { SessionEvent } from '../contract/session.js';
import { PROJECT_ROOT } from '../testing/temporal-cli.js';
import { renderTree } from '../client/tree.js';
import { ScriptedModelServer } from '../testing/scripted-model.js';
import { microToUsd } from '../rules/usage.js';
import { createDeputyWorker } from '../worker/factory.js';

const clip = (text: string, max = 90) => (text.length > max ? `${text.slice(0, max - 1)}…` : text).replace(/\n/g, ' ');

function describeEvent(event: SessionEvent): string | null {
  switch (event.type) {
    case 'message/assistant':
      return event.toolCalls.length > 0
        ? event.toolCalls.map((c) => `  model → ${c.name}(${clip(c.arguments, 60)})`).join('\n')
        : `  model → answer${event.synthesisFor ? ` (synthesis: ${event.synthesisFor})` : ''}`;
    case 'tool/result':
      return `  ${event.name} ← ${event.isError ? 'error: ' : ''}${clip(event.content)}`;
    default:
      return null;
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const env = readEnv();
  // The demo delegates (R5.1): delegation is on unless AGENT_DELEGATION_ENABLED=false says otherwise.
  const config = loadConfig({
    ...env,
    configPath: env.configPath ?? join(PROJECT_ROOT, 'deputy.config.yaml'),
    delegationEnabled: env.delegationEnabled ?? true,
  });
  const live = env.openaiApiKey !== undefined || env.openaiBaseUrl !== undefined;

  let scripted: ScriptedModelServer | undefined;
  if (live) {
    console.log(
      `model: ${config.model} at ${env.openaiBaseUrl ?? 'https://api.openai.com/v1'} (live: OPENAI_* is set)`,
    );
  } else {
    scripted = await ScriptedModelServer.start(DEMO_SCRIPT);
    console.log(
      `model: offline scripted model at ${scripted.url} (set OPENAI_API_KEY or OPENAI_BASE_URL for a real one)`,
    );
  }

  let server: DevServer | undefined;
  let address = process.env.TEMPORAL_ADDRESS;
  let uiBase: string;
  if (address) {
    uiBase = process.env.TEMPORAL_UI_URL ?? 'http://localhost:8233';
    console.log(`temporal: ${address} (TEMPORAL_ADDRESS)`);
  } else {
    const stateDir = join(PROJECT_ROOT, '.deputy', 'state');
    mkdirSync(stateDir, { recursive: true });
    const dbFilename = join(stateDir, 'temporal.db');
    console.log('temporal: starting an embedded dev server …');
    server = await startDevServer({ dbFilename, uiPort: await freePort(8233) });
    address = server.address;
    uiBase = server.uiUrl!;
    console.log(`temporal: dev server at ${address}, persisted to ${dbFilename}, UI at ${uiBase}`);
  }

  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  const deputy = new DeputyClient(new Client({ connection: clientConnection, namespace: env.temporalNamespace }), {
    taskQueue: env.taskQueue,
  });
  try {
    console.log('worker: bundling workflows and starting …');
    const worker = await createDeputyWorker({
      client: deputy.temporal,
      connection,
      namespace: env.temporalNamespace,
      taskQueue: env.taskQueue,
      backgroundTaskQueue: env.backgroundTaskQueue,
      config,
      model: live
        ? { apiKey: env.openaiApiKey, baseURL: env.openaiBaseUrl }
        : { apiKey: 'offline', baseURL: scripted!.url },
    });
    await worker.runUntil(async () => {
      const workflowId = `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      console.log(`\nrun ${workflowId}\ntask: ${DEMO_TASK}\n`);
      await deputy.startRun(
        {
          task: DEMO_TASK,
          scopes: ['tools.calc', 'tools.notes', 'run.delegate'],
          limits: { maxTurns: 8, maxCostUsd: 0.5 },
        },
        { workflowId },
      );
      const done = deputy.result(workflowId);
      let finished = false;
      void done.finally(() => (finished = true));
      let shown = 0;
      let lastTree = '';
      const showProgress = async () => {
        const state = await deputy.getState(workflowId).catch(() => null);
        for (const event of state?.session.slice(shown) ?? []) {
          const line = describeEvent(event);
          if (line) console.log(line);
        }
        shown = state?.session.length ?? shown;
        if (!finished && state && state.delegations.length > 0) {
          const tree = renderTree(await loadTree(deputy.temporal, workflowId));
          if (tree !== lastTree && tree.includes('\n')) console.log(`\n${tree}\n`);
          lastTree = tree;
        }
      };
      while (!finished) {
        await showProgress();
        await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 300))]);
      }
      await showProgress();
      const result = await done;
      console.log(`\nstatus: ${result.status}${result.limit ? ` (${result.limit})` : ''}`);
      console.log(`answer: ${result.output ?? result.error ?? '(none)'}`);
      const u = result.usage;
      console.log(`usage:  ${u.modelCalls} model calls and ${u.toolCalls} tool calls of its own`);
      console.log(`        ${u.totalTokens} tokens for the whole tree (${u.inputTokens} in + ${u.outputTokens} out)`);
      console.log(
        `cost:   $${microToUsd(u.costMicroUsd).toFixed(6)} for the whole tree (${u.costMicroUsd} micro-USD${live ? '' : ', scripted usage'})`,
      );
      // Visibility catches up with the children's last status within moments.
      let tree = renderTree(await loadTree(deputy.temporal, workflowId));
      for (let i = 0; i < 20 && /running|starting|waiting/.test(tree); i++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        tree = renderTree(await loadTree(deputy.temporal, workflowId));
      }
      console.log(`\ndelegation tree (npm run deputy -- tree ${workflowId}):\n${tree}`);
      console.log(
        `\nui:     ${uiBase}/namespaces/${env.temporalNamespace}/workflows/${encodeURIComponent(workflowId)}`,
      );
      console.log(
        `        children: ${uiBase}/namespaces/${env.temporalNamespace}/workflows?query=${encodeURIComponent(`DeputyRootId="${workflowId}"`)}`,
      );
      if (result.status !== 'completed') process.exitCode = 1;
    });
  } finally {
    await clientConnection.close();
    await connection.close();
    await scripted?.close();
    await server?.env.teardown();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? `demo: ${err.message}` : err);
  process.exit(1);
});
