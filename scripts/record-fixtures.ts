/**
 * Regenerates the replay fixtures in test/fixtures/histories: runs representative scenarios on an embedded dev
 * server against the scripted model and saves each run's history as JSON.
 *
 *   npm run fixtures
 *
 * Regenerate only on purpose: until 1.0 a workflow change that breaks replay re-records the fixtures (the reason in
 * the commit message); from 1.0 on it needs a flag (docs/versioning.md), and the old histories stay. To add histories
 * of a new shape beside the old ones, record some scenarios under another prefix, e.g.
 * `FIXTURES=delegating-parent FIXTURE_PREFIX=fixture-flag-name-`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { execFileSync } from 'node:child_process';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { DeputyClient } from '../src/client/client.js';
import { parseConfig } from '../src/config/schema.js';
import { DEFAULT_PERSONA } from '../src/config/schema.js';
import { startDevServer } from '../src/testing/dev-server.js';
import { findTemporalCli, PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { ScriptedModelServer } from '../src/testing/scripted-model.js';
import { createDeputyWorker } from '../src/worker/factory.js';
import { RUN_SCENARIOS, type Scenario } from './fixture-runs.js';
import { TREE_SCENARIOS } from './fixture-trees.js';
import { APPROVAL_SCENARIOS } from './fixture-approvals.js';

const SCENARIOS: Scenario[] = [...RUN_SCENARIOS, ...TREE_SCENARIOS, ...APPROVAL_SCENARIOS];

/** The config every fixture is recorded with. */
function fixtureConfig() {
  return parseConfig({
    model: 'test-model',
    prices: { 'test-model': { inputPerMTokUsd: 1, outputPerMTokUsd: 2 } },
    // Two levels, so a grandchild's approval request climbs to the root.
    delegation: { enabled: true, activation: 'unconditional', maxDepth: 2 },
    // Only the approvals scenario searches the ledger.
    approvals: {
      tools: {
        search_notes: { when: { type: 'object', properties: { query: { const: 'the ledger' } }, required: ['query'] } },
      },
    },
    // What the scenarios ask for: a caller's scopes only narrow what the config grants.
    grantableScopes: ['tools.calc', 'tools.notes', 'run.delegate', 'artifacts.read', 'artifacts.write'],
    presets: [
      { id: 'assistant', persona: DEFAULT_PERSONA, tools: ['calculate', 'search_notes'] },
      // Past the size a child's input carries whole: children get these by reference and look them up.
      {
        id: 'writer',
        persona: `You write. ${'Say it in one line. '.repeat(60)}`,
        tools: ['calculate', 'search_notes'],
      },
      { id: 'editor', persona: DEFAULT_PERSONA, tools: ['calculate', 'save_artifact', 'read_artifact'] },
      { id: 'reporter', persona: 'You report in a table.', tools: ['save_artifact'] },
      {
        id: 'researcher',
        persona: `You research with the notes. ${'Quote the note you used, word for word. '.repeat(26)}`,
        tools: ['search_notes'],
      },
    ],
    // Small enough that the compacting scenario compacts; the other scenarios stay far below it.
    compaction: { thresholdTokens: 700, keepRecentTurns: 2, continueAsNewAfterEvents: 100_000 },
    hooks: [{ name: 'audit', events: ['task.submitted', 'subagent.start', 'subagent.end'], function: 'audit' }],
  });
}

/** A run's history in the JSON form Temporal's CLI exports (and the replayer reads). */
function exportHistory(address: string, workflowId: string): { text: string; events: number } {
  const cli = findTemporalCli();
  if (!cli) throw new Error('the Temporal CLI is needed to export histories: npm run setup');
  const text = execFileSync(
    cli,
    ['workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', address],
    {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  return { text, events: (JSON.parse(text) as { events: unknown[] }).events.length };
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const out = join(PROJECT_ROOT, 'test', 'fixtures', 'histories');
  mkdirSync(out, { recursive: true });
  const server = await startDevServer();
  const model = await ScriptedModelServer.start(SCENARIOS.flatMap((s) => s.rules));
  const taskQueue = 'fixtures';
  const client = new Client({ connection: server.env.connection });
  const worker = await createDeputyWorker({
    connection: server.env.nativeConnection,
    client,
    taskQueue,
    childTaskQueue: `${taskQueue}-background`,
    config: fixtureConfig(),
    hookFunctions: { audit: async () => ({ decision: 'accept' as const }) },
    model: { apiKey: 'sk-fixture', baseURL: model.url },
  });
  const deputy = new DeputyClient(client, { taskQueue });
  try {
    await worker.runUntil(async () => {
      const only = process.env.FIXTURES?.split(',');
      for (const scenario of SCENARIOS.filter((s) => !only || only.includes(s.name))) {
        const workflowId = `${process.env.FIXTURE_PREFIX ?? 'fixture-'}${scenario.name}`;
        await deputy.startRun(scenario.input, { workflowId });
        await scenario.drive?.(deputy, workflowId, model);
        const result = await deputy.result(workflowId);
        const tree = [workflowId];
        for (let i = 0; i < tree.length; i += 1) {
          tree.push(...(await deputy.getState(tree[i]!)).delegations.map((d) => d.childWorkflowId));
        }
        for (const id of tree) {
          const history = exportHistory(server.address, id);
          const name = id.replace(/\//g, '__'); // the replay test maps __ back to /
          writeFileSync(join(out, `${name}.json`), history.text);
          console.log(`${name}: ${id === workflowId ? result.status : 'child'}, ${history.events} events`);
        }
      }
    });
  } finally {
    await model.close();
    await server.env.teardown();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
