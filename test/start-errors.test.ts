/**
 * What a caller sees when a run cannot start, or a config cannot load: what went wrong, where, and what to do.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InputError } from '../src/contract/errors.js';
import { loadConfig, readEnv } from '../src/config/load.js';
import { deputyActivities } from '../src/worker/factory.js';
import { builtinTools } from '../activities/builtin-tools.js';
import { PROJECT_ROOT } from '../src/testing/temporal-cli.js';
import { useHarness } from './support/harness.js';
import { testKeyRing } from './support/worker-process.js';

const h = useHarness();
const dir = mkdtempSync(join(tmpdir(), 'deputy-start-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('49.11 a run that cannot start, a config that cannot load', () => {
  it('49.11 a task of only spaces is refused by the client, and by the workflow when a caller starts it raw', async () => {
    const refused = await h.deputy.startRun({ task: ' \n\t ' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(InputError);
    expect((refused as Error).message).toBe('invalid RunInput: task: task must not be empty or only spaces');

    const workflowId = h.id('blank');
    await h.client.workflow.start('agentRun', { taskQueue: h.taskQueue, workflowId, args: [{ task: '   ' }] });
    const failed: unknown = await h.client.workflow.result(workflowId).then(
      () => 'completed',
      (err: unknown) => err,
    );
    expect(String(((failed as Error).cause as Error | undefined)?.message ?? failed)).toContain('only spaces');
  });

  it('49.11 a task past the server payload limit names the limit and what to do, not only "Failed to start Workflow"', async () => {
    const task = 'x'.repeat(2.5 * 2 ** 20);
    const refused = await h.deputy.startRun({ task }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(InputError);
    expect((refused as Error).message).toMatch(
      /^invalid RunInput: the run input is 26214\d\d bytes, over what the Temporal server takes in one payload \(2 MB/,
    );
    expect((refused as Error).message).toContain('DEPUTY_PAYLOAD_STORE');
  });

  it('49.11 config problems are headed with the file they are in, those the worker finds too', () => {
    const path = join(dir, 'deputy.config.yaml');
    writeFileSync(path, 'model: gpt-unpriced\n');
    expect(() => loadConfig({ ...readEnv({}), configPath: path })).toThrow(
      `invalid configuration (${path}):\n  - model: no price for "gpt-unpriced"`,
    );

    writeFileSync(path, 'presets:\n  - id: assistant\n    persona: p\n    tools: [no_such_tool]\n');
    const config = loadConfig({ ...readEnv({}), configPath: path });
    expect(() => deputyActivities({ config, model: { apiKey: 'k', baseURL: undefined }, childTaskQueue: 'q' })).toThrow(
      `invalid configuration (${path}):`,
    );
  });

  it("49.11 npm run worker names every problem of its config in one round: the schema's and its presets' tools", async () => {
    const path = join(dir, 'both.yaml');
    writeFileSync(
      path,
      'model: gpt-unpriced\nmcpServers: { docs: { url: "http://127.0.0.1:9/mcp" } }\n' +
        'presets:\n  - id: assistant\n    persona: p\n    tools: [calculate, no_such_tool, docs_search]\n',
    );
    const worker = spawnSync(process.execPath, ['--import', 'tsx', 'src/worker/main.ts'], {
      cwd: PROJECT_ROOT,
      env: {
        ...process.env,
        ...testKeyRing(),
        DEPUTY_CONFIG: path,
        OPENAI_API_KEY: 'k',
        TEMPORAL_ADDRESS: '127.0.0.1:9',
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(worker.status).toBe(1);
    // Before it connects anywhere: both problems, each on its line, under the file's name.
    expect(worker.stderr.trim().split('\n')).toEqual([
      `deputy worker: invalid configuration (${path}):`,
      '  - model: no price for "gpt-unpriced"; add it under prices (USD per million tokens)',
      `  - presets.0.tools: unknown tool "no_such_tool"; the worker has: ${builtinTools()
        .map((tool) => tool.name)
        .join(', ')}`,
    ]);
  });
});
